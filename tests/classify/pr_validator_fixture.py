"""A realistic bot-source file (pr_validator.py) and edits of it, for self-logic tests."""

from __future__ import annotations

PR_VALIDATOR = [
    '"""Validate PRs before the bot acts on them."""',
    "",
    "import logging",
    "",
    "log = logging.getLogger(__name__)",
    "",
    "",
    "def merge_if_allowed(pr, verdict):",
    '    """Merge when the verdict allows it."""',
    "    if verdict.quadrant == 'D':",
    "        return None",
    "    log.info('merging %s', pr.number)",
    "    return pr.merge()",
    "",
    "",
    "def _format_reason(verdict):",
    '    """Render a verdict for humans."""',
    "    text = verdict.reasoning.strip()",
    "    lines = [text]",
    "    lines.append(f'quadrant {verdict.quadrant}')",
    "    return '\\n'.join(lines)",
    "",
    "",
    "def _count_files(pr):",
    "    files = list(pr.files)",
    "    return len(files)",
]


def edit(old: str, new: str) -> list[str]:
    """PR_VALIDATOR with one line replaced."""
    out = list(PR_VALIDATOR)
    i = out.index(old)
    out[i] = new
    return out


RENAME_LOCAL = [
    line.replace("text", "rendered") if 17 <= i <= 19 else line
    for i, line in enumerate(PR_VALIDATOR)
]
MERGE_METHOD = edit("    return pr.merge()", "    return pr.merge(method='rebase')")
# a change inside merge_if_allowed whose own line mentions nothing suspicious
MERGE_BODY = edit("        return None", "        return False")

"""Ballot commands (`/approve A|B|C`, `/reject`, `/breaker reset`) found in comment bodies.

A command counts only on a line GitHub renders as plain text of a top-level paragraph:
GitHub-flavoured Markdown decides (markdown-it-py's CommonMark with GitHub's tables and
strikethrough, plus mdit-py-plugins' footnotes and `$$` math), so a line in a quote or
alert (lazy continuation included), a list item, a footnote definition, a math block or
inline math spanning lines, a code block or fence, a code span or inline HTML spanning
lines, an HTML block such as `<pre>` or `<details>`, or a heading never counts.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.footnote import footnote_plugin


class CommandKind(enum.StrEnum):
    """A parsed comment command."""

    APPROVE_A = "approve_a"
    APPROVE_B = "approve_b"
    APPROVE_C = "approve_c"
    REJECT = "reject"
    BREAKER_RESET = "breaker_reset"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Command:
    """A command found in a comment: its kind, the line as written and, when unknown, why."""

    kind: CommandKind
    line: str
    reason: str = ""


VALID_COMMANDS = ("/approve A", "/approve B", "/approve C", "/reject", "/breaker reset")

_COMMAND_LIKE = re.compile(r"^/[A-Za-z][A-Za-z0-9_-]*(?:\s|$)")
_MAX_LINE = 200


_SEPARATOR_HINT = "only ASCII spaces may separate a command and its letter"


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    """GitHub-flavoured Markdown as far as block structure goes: CommonMark, tables,
    strikethrough, footnote definitions (rendered in the footnotes section, not in place)
    and `$$` math blocks (rendered as math)."""
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    return md.use(footnote_plugin).use(dollarmath_plugin)


def _segments(inline: Token) -> list[list[Token]]:
    """The inline children of a paragraph, split at its line breaks."""
    out: list[list[Token]] = [[]]
    for child in inline.children or ():
        if child.type in ("softbreak", "hardbreak"):
            out.append([])
        else:
            out[-1].append(child)
    return out


_ONLY_COMMENTS = re.compile(r"\s*(?:<!--.*?-->\s*)*", re.DOTALL)


def _raw_html(tok: Token) -> bool:
    """Raw HTML other than whole comments: an unclosed `<pre>` or `<blockquote>` restyles
    everything after it once a browser builds the page, whatever CommonMark's blocks say."""
    if tok.type not in ("html_block", "html_inline"):
        return False
    return _ONLY_COMMENTS.fullmatch(tok.content) is None


def _stops_scan(tokens: list[Token], i: int) -> bool:
    """Whether `tokens[i]` is raw HTML that restyles everything after it."""
    tok = tokens[i]
    if _raw_html(tok):
        return True
    top = i > 0 and tokens[i - 1].type == "paragraph_open" and tokens[i - 1].level == 0
    # raw HTML in a heading, quote or list restyles what follows as well
    return tok.type == "inline" and not top and any(_raw_html(c) for c in tok.children or ())


def _paragraph_commands(tokens: list[Token], i: int, lines: list[str], out: list[str]) -> bool:
    """Append the command lines of the top-level paragraph opened at `tokens[i]` to `out`.

    False when raw HTML inside the paragraph ends the scan.
    """
    tok = tokens[i]
    if tok.type != "paragraph_open" or tok.level != 0 or tok.map is None:
        return True
    start, end = tok.map
    segments = _segments(tokens[i + 1])
    if len(segments) != end - start:
        return True
    for n, seg in enumerate(segments):
        if any(_raw_html(t) for t in seg):
            return False
        raw = lines[start + n]
        if _COMMAND_LIKE.match(raw) is None:
            continue
        plain = len(seg) == 1 and seg[0].type == "text"
        if plain and seg[0].content.rstrip(" \t") == raw.rstrip(" \t"):
            out.append(raw)
    return True


def command_lines(body: str) -> list[str]:
    """The lines of `body` that start with `/word` and render as plain top-level paragraph text.

    A paragraph whose inline content joins lines (a code span or inline HTML across a line
    break) cannot be split line by line with certainty: none of its lines counts. Nothing
    after the first raw HTML tag (other than a comment) counts.
    """
    text = body.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
    if "/" not in text:
        return []
    lines = text.split("\n")
    tokens = _markdown().parse(text)
    out: list[str] = []
    for i in range(len(tokens)):
        if _stops_scan(tokens, i) or not _paragraph_commands(tokens, i, lines, out):
            break
    return out


def _command_of(line: str) -> Command:
    body = line.rstrip(" \t")
    shown = body.strip()[:_MAX_LINE]
    tokens = [t for t in body.split(" ") if t]
    if any(ch.isspace() and ch != " " for ch in body):
        return Command(CommandKind.UNKNOWN, shown, _SEPARATOR_HINT)
    word = tokens[0].lower()
    args = tokens[1:]
    if word == "/approve" and len(args) == 1 and args[0] in ("A", "B", "C", "a", "b", "c"):
        return Command(CommandKind(f"approve_{args[0].lower()}"), shown)
    if word == "/reject" and not args:
        return Command(CommandKind.REJECT, shown)
    if word == "/breaker" and [a.lower() for a in args] == ["reset"]:
        return Command(CommandKind.BREAKER_RESET, shown)
    if word in ("/approve", "/reject", "/breaker"):
        reason = "a command must stand alone on its line, exactly as listed"
    else:
        reason = f"unknown command {tokens[0][:40]}"
    return Command(CommandKind.UNKNOWN, shown, reason)


def parse_command(body: str) -> Command | None:
    """The command in a comment body, or None for plain text.

    A command is a line that starts (column 0) with `/word` and renders as plain text of a
    top-level paragraph (see command_lines). The command must be alone on its line, its
    parts separated by ASCII spaces only (anything else → UNKNOWN, so a typo is answered,
    never guessed).
    Command words and the A/B/C letter are case-insensitive. One distinct valid command
    per comment: two different ones (e.g. `/approve A` and `/reject`) → UNKNOWN
    (ambiguous); a valid command wins over unknown `/word` lines beside it.
    """
    found = [_command_of(line) for line in command_lines(body)]
    if not found:
        return None
    valid = [c for c in found if c.kind is not CommandKind.UNKNOWN]
    kinds = {c.kind for c in valid}
    if len(kinds) == 1:
        return valid[0]
    if len(kinds) > 1:
        shown = "; ".join(c.line for c in valid)[:_MAX_LINE]
        return Command(CommandKind.UNKNOWN, shown, "more than one different command in one comment")
    return found[0]


def unknown_command_reply(command: Command) -> str:
    """The bot's answer to an unknown command (commands shown as code, so they never parse)."""
    listed = "\n".join(
        [
            "- `/approve A` (or a 👍 reaction on this issue): approve as proposed",
            "- `/approve B`: approve with the alternate in the PR description",
            "- `/approve C`: defer, needs more information (not mergeable)",
            "- `/reject` (or a 👎 reaction): reject, the PR is closed",
            "- `/breaker reset`: reset a tripped circuit breaker (on its incident issue)",
        ]
    )
    why = command.reason or "unknown command"
    return (
        f"This comment was not counted: {why}.\n\n"
        "Write one of these alone on its own line, in a new comment "
        "(edited comments do not count):\n\n"
        f"{listed}\n"
    )

"""The built-in rule table (SPEC 2.5): each rule's name and its facts, defined once.

The config loader (which rules skills.yml may disable), the daemon's steady-state skip (which
rules read check runs), skills.schema.json and the README's rule table all derive from it;
`capdaemon.classify.rules` binds each row to its function. Kept free of imports so the config
loader can read it without importing the classifier.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuleFacts:
    """One built-in rule: can it vote D, does it read check runs, what it does."""

    name: str
    votes_d: bool
    reads_checks: bool
    summary: str

    @property
    def can_disable(self) -> bool:
        """Only a rule that never votes D may be disabled in skills.yml (fail closed)."""
        return not self.votes_d


# In evaluation order: the path rule first.
RULE_TABLE: tuple[RuleFacts, ...] = (
    RuleFacts(
        "path_classifier_default",
        votes_d=True,
        reads_checks=False,
        summary="per-file quadrant from the two axes, the highest over the files",
    ),
    RuleFacts(
        "published_verdict",
        votes_d=True,
        reads_checks=True,
        summary="`Quadrant: X` from the newest canonical `classifier-judgment` check run",
    ),
    RuleFacts(
        "bot_self_repo",
        votes_d=True,
        reads_checks=False,
        summary="D for a PR to the bot's own repository",
    ),
    RuleFacts("empty_pr", votes_d=True, reads_checks=False, summary="D for a PR with no files"),
    RuleFacts(
        "auto_revert_marker",
        votes_d=False,
        reads_checks=False,
        summary="C when the `decision:auto-revert` label was applied by an owner or the bot",
    ),
    RuleFacts(
        "agent_session_invalid",
        votes_d=True,
        reads_checks=False,
        summary="D when a commit carries a malformed or duplicated `Agent-Session` trailer",
    ),
    RuleFacts(
        "classifier_publisher_invalid",
        votes_d=True,
        reads_checks=True,
        summary="D when a `classifier-judgment` check run comes from a non-canonical App",
    ),
    RuleFacts(
        "file_list_incomplete",
        votes_d=True,
        reads_checks=False,
        summary="D when the file list or commit list could not be read in full",
    ),
)

RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULE_TABLE)
DISABLEABLE_RULES: frozenset[str] = frozenset(r.name for r in RULE_TABLE if r.can_disable)
CHECK_READING_RULES: frozenset[str] = frozenset(r.name for r in RULE_TABLE if r.reads_checks)


def rule_facts(name: str) -> RuleFacts:
    """The table row of a built-in rule; KeyError naming it when there is none."""
    for row in RULE_TABLE:
        if row.name == name:
            return row
    raise KeyError(f"no built-in rule {name!r}")


def rules_markdown() -> str:
    """The README's table of built-in rules, generated from RULE_TABLE."""
    yes_no = {True: "yes", False: "no"}
    lines = [
        "| rule | can vote D | can be disabled | reads check runs | what it does |",
        "|---|---|---|---|---|",
    ]
    for r in RULE_TABLE:
        lines.append(
            f"| `{r.name}` | {yes_no[r.votes_d]} | {yes_no[r.can_disable]} | "
            f"{yes_no[r.reads_checks]} | {r.summary} |"
        )
    return "\n".join(lines) + "\n"

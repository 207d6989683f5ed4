"""Built-in classifier rules of SPEC 2.5, and the Agent-Session trailer helpers of SPEC 2.6."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from capdaemon.classify.axes import CompiledClassifier
from capdaemon.config import Config
from capdaemon.model import (
    CheckRun,
    FileVerdict,
    PRSnapshot,
    Quadrant,
    RuleOutcome,
    RuleResult,
)

JUDGMENT_CHECK = "classifier-judgment"
AUTO_REVERT_LABEL = "decision:auto-revert"
AGENT_SESSION_KEY = "agent-session"


@dataclass(frozen=True)
class RuleContext:
    """What the engine computed once and hands to every built-in rule."""

    now: datetime
    files: tuple[FileVerdict, ...]
    compiled: CompiledClassifier


Rule = Callable[[PRSnapshot, Config, RuleContext], RuleOutcome]


def _vote(rule: str, q: Quadrant, reason: str, **detail: object) -> RuleOutcome:
    return RuleOutcome(rule, RuleResult.VOTE, q, reason, detail)


def _abstain(rule: str, reason: str = "", **detail: object) -> RuleOutcome:
    return RuleOutcome(rule, RuleResult.ABSTAIN, None, reason, detail)


# ----------------------------------------------------------------------------- trailers
_TRAILER = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$")
_GIT_GENERATED = ("signed-off-by: ", "(cherry picked from commit ")


def _last_paragraph(message: str) -> list[str]:
    lines = message.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    # the first paragraph (the subject) is never a trailer block
    first_blank = next((i for i, ln in enumerate(lines) if not ln.strip()), None)
    if first_blank is None:
        return []
    start = len(lines)
    while start > first_blank and lines[start - 1].strip():
        start -= 1
    return lines[start:]


def parse_trailers(message: str) -> list[tuple[str, str]]:
    """The trailers of a commit message as (key, value) pairs, per git's trailer rules.

    Trailers live in the last paragraph (never the subject paragraph). The paragraph counts
    as a trailer block when every line is a trailer or a continuation (leading whitespace),
    or when at least 25 % are trailers and one is git-generated (Signed-off-by, cherry-pick).
    Continuation lines are folded into the previous value with one space.
    """
    para = _last_paragraph(message)
    if not para:
        return []
    trailers: list[list[str]] = []
    trailer_lines = 0
    other_lines = 0
    git_generated = False
    for line in para:
        if line[:1] in (" ", "\t") and trailers:
            trailers[-1][1] = f"{trailers[-1][1]} {line.strip()}".strip()
            continue
        m = _TRAILER.match(line)
        if m is None:
            other_lines += 1
            if line.casefold().startswith(_GIT_GENERATED[1]):
                git_generated = True
            continue
        trailer_lines += 1
        if line.casefold().startswith(_GIT_GENERATED[0]):
            git_generated = True
        trailers.append([m.group(1), m.group(2).strip()])
    if other_lines and not (git_generated and trailer_lines * 4 >= trailer_lines + other_lines):
        return []
    return [(k, v) for k, v in trailers]


_TOOL = r"[a-z0-9][a-z0-9._-]{0,63}"
_MODEL = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}"
_SESSION = r"[A-Za-z0-9][A-Za-z0-9._-]{7,63}"
_AGENT_SESSION = re.compile(rf"({_TOOL})/({_MODEL})/({_SESSION})")


@dataclass(frozen=True, slots=True)
class AgentSession:
    """A parsed `Agent-Session: <tool>/<model>/<session-id>` value."""

    tool: str
    model: str
    session_id: str

    @property
    def agent_id(self) -> str:
        """`tool/model`, the key of the agent registry and of burn-in."""
        return f"{self.tool}/{self.model}"


def parse_agent_session(value: str) -> AgentSession | None:
    """Parse an Agent-Session trailer value; None when it does not follow the grammar."""
    m = _AGENT_SESSION.fullmatch(value.strip())
    if m is None:
        return None
    return AgentSession(m.group(1), m.group(2), m.group(3))


def commit_agent_session(message: str) -> tuple[AgentSession | None, str | None]:
    """(session, None) for an agent commit, (None, None) for a human one, (None, why) if malformed.

    Malformed: an Agent-Session trailer whose value does not parse, more than one such
    trailer, or an `Agent-Session:` line in the last paragraph that git would not read as a
    trailer (an agent must not be able to hide its identity by breaking the trailer block).
    """
    trailers = parse_trailers(message)
    values = [v for k, v in trailers if k.casefold() == AGENT_SESSION_KEY]
    if len(values) > 1:
        return None, f"{len(values)} Agent-Session trailers"
    if len(values) == 1:
        session = parse_agent_session(values[0])
        if session is None:
            return None, "Agent-Session value is not <tool>/<model>/<session-id>"
        return session, None
    for line in _last_paragraph(message):
        m = _TRAILER.match(line)
        if m is not None and m.group(1).casefold() == AGENT_SESSION_KEY:
            return None, "Agent-Session line outside a valid trailer block"
    return None, None


# ----------------------------------------------------------------------------- rules
def path_classifier_default(snapshot: PRSnapshot, config: Config, ctx: RuleContext) -> RuleOutcome:
    """Per-file quadrant from the axes, maximum over files (always votes; A for no files)."""
    name = "path_classifier_default"
    files = ctx.files
    q = Quadrant.highest((f.quadrant for f in files), default=Quadrant.A)
    ir = any(f.irreversible for f in files)
    cr = any(f.critical for f in files)
    deciding = sum(1 for f in files if f.quadrant is q)
    reason = f"{deciding} of {len(files)} files are {q.value}" if files else "no files"
    return _vote(
        name,
        q,
        reason,
        ir="irreversible" if ir else "reversible",
        cr="critical" if cr else "non-critical",
    )


def is_canonical(run: CheckRun, config: Config) -> bool:
    """True when a check run was published by the configured canonical App (slug and/or id)."""
    if config.canonical_app is None and config.canonical_app_id is None:
        return False
    if config.canonical_app is not None and (
        run.app_slug is None or run.app_slug.casefold() != config.canonical_app.casefold()
    ):
        return False
    return config.canonical_app_id is None or run.app_id == config.canonical_app_id


def _judgments(snapshot: PRSnapshot) -> list[CheckRun]:
    return [r for r in snapshot.check_runs if r.name.strip().casefold() == JUDGMENT_CHECK]


_QUADRANT_LINE = re.compile(r"\bquadrant\s*[:=]\s*\**\s*([ABCD])\b", re.IGNORECASE)


def published_verdict(snapshot: PRSnapshot, config: Config, ctx: RuleContext) -> RuleOutcome:
    """`Quadrant: X` from the newest completed canonical `classifier-judgment` run."""
    name = "published_verdict"
    runs = [r for r in _judgments(snapshot) if r.status == "completed" and is_canonical(r, config)]
    if not runs:
        return _abstain(name, "no completed classifier-judgment from the canonical App")
    epoch = datetime.min.replace(tzinfo=ctx.now.tzinfo)

    def newest(r: CheckRun) -> tuple[datetime, int]:
        return (r.completed_at or r.started_at or epoch, r.id or 0)

    run = max(runs, key=newest)
    text = "\n".join((run.output_title, run.output_summary, run.output_text))
    found = {m.group(1).upper() for m in _QUADRANT_LINE.finditer(text)}
    if not found:
        return _abstain(name, "classifier-judgment has no parseable 'Quadrant: X'")
    q = Quadrant.highest(Quadrant(x) for x in found)
    return _vote(name, q, f"classifier-judgment by {run.app_slug or run.app_id} says {q.value}")


def bot_self_repo(snapshot: PRSnapshot, config: Config, ctx: RuleContext) -> RuleOutcome:
    """D for a PR to the bot's own repository."""
    name = "bot_self_repo"
    if config.own_repo and snapshot.repo.casefold() == config.own_repo.casefold():
        return _vote(name, Quadrant.D, f"PR to the bot's own repository {config.own_repo}")
    return _abstain(name, match=False)


def empty_pr(snapshot: PRSnapshot, config: Config, ctx: RuleContext) -> RuleOutcome:
    """D for a PR with no file changes."""
    name = "empty_pr"
    if not snapshot.files:
        return _vote(name, Quadrant.D, "the PR changes no files")
    return _abstain(name, match=False)


def _aware(dt: datetime | None) -> bool:
    return dt is not None and dt.tzinfo is not None and dt.utcoffset() is not None


def auto_revert_marker(snapshot: PRSnapshot, config: Config, ctx: RuleContext) -> RuleOutcome:
    """C when the `decision:auto-revert` label is verified; otherwise abstain and say why."""
    name = "auto_revert_marker"
    label = AUTO_REVERT_LABEL.casefold()
    if not any(lbl.casefold() == label for lbl in snapshot.labels):
        return _abstain(name, match=False)
    events = [e for e in snapshot.label_events if e.label.casefold() == label]
    if not events:
        return _abstain(name, "label present but no labeled event was read: ignored")
    if not all(_aware(e.at) for e in events):
        return _abstain(name, "label event without a timezone: ignored")
    order = sorted(range(len(events)), key=lambda i: (events[i].at, i))
    last_labeled = next((i for i in reversed(order) if events[i].action == "labeled"), None)
    if last_labeled is None:
        return _abstain(name, "no labeled event: ignored")
    ev = events[last_labeled]
    if any(
        e.action == "unlabeled" and (e.at > ev.at or (e.at == ev.at and i != last_labeled))
        for i, e in enumerate(events)
    ):
        return _abstain(name, "label was removed after it was applied: ignored")
    actor = ev.actor.casefold()
    bot = config.bot_login.casefold()
    author = snapshot.author.casefold()
    if actor == author and author != bot:
        return _abstain(name, f"label applied by the PR author {ev.actor}: ignored")
    if actor != bot and actor not in config.owners_for(snapshot.repo):
        return _abstain(name, f"label applied by {ev.actor}, neither an owner nor the bot: ignored")
    head = next((c for c in snapshot.commits if c.sha == snapshot.head_sha), None)
    if head is None or not _aware(head.committed_at):
        return _abstain(name, "head commit time unknown: label ignored")
    assert head.committed_at is not None
    if ev.at < head.committed_at:
        return _abstain(name, "label applied before the head commit (stale): ignored")
    return _vote(name, Quadrant.C, f"auto-revert label verified (applied by {ev.actor})")


def agent_session_invalid(snapshot: PRSnapshot, config: Config, ctx: RuleContext) -> RuleOutcome:
    """D when any commit carries a malformed or duplicated Agent-Session trailer."""
    name = "agent_session_invalid"
    bad: list[str] = []
    for c in snapshot.commits:
        _session, why = commit_agent_session(c.message)
        if why is not None:
            bad.append(f"commit {c.sha[:12]}: {why}")
    if bad:
        more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
        return _vote(name, Quadrant.D, "; ".join(bad[:3]) + more)
    return _abstain(name, match=False)


def classifier_publisher_invalid(
    snapshot: PRSnapshot, config: Config, ctx: RuleContext
) -> RuleOutcome:
    """D when a `classifier-judgment` check run was published by a non-canonical App."""
    name = "classifier_publisher_invalid"
    forged = [r for r in _judgments(snapshot) if not is_canonical(r, config)]
    if forged:
        who = sorted({str(r.app_slug or r.app_id or "unknown publisher") for r in forged})
        return _vote(
            name, Quadrant.D, f"classifier-judgment published by non-canonical {', '.join(who)}"
        )
    return _abstain(name, match=False)


def file_list_incomplete(snapshot: PRSnapshot, config: Config, ctx: RuleContext) -> RuleOutcome:
    """D when the file or commit list could not be read whole."""
    name = "file_list_incomplete"
    missing = [
        what
        for what, ok in (
            ("file list", snapshot.files_complete),
            ("commit list", snapshot.commits_complete),
        )
        if not ok
    ]
    if missing:
        why = f" ({snapshot.incomplete_reason})" if snapshot.incomplete_reason else ""
        return _vote(name, Quadrant.D, f"{' and '.join(missing)} incomplete{why}")
    return _abstain(name, match=False)


@dataclass(frozen=True)
class BuiltinRule:
    """A built-in rule and whether skills.yml may disable it (never the D rules)."""

    name: str
    func: Rule
    can_disable: bool


BUILTIN_RULES: Sequence[BuiltinRule] = (
    BuiltinRule("path_classifier_default", path_classifier_default, False),
    BuiltinRule("published_verdict", published_verdict, True),
    BuiltinRule("bot_self_repo", bot_self_repo, False),
    BuiltinRule("empty_pr", empty_pr, False),
    BuiltinRule("auto_revert_marker", auto_revert_marker, True),
    BuiltinRule("agent_session_invalid", agent_session_invalid, False),
    BuiltinRule("classifier_publisher_invalid", classifier_publisher_invalid, False),
    BuiltinRule("file_list_incomplete", file_list_incomplete, False),
)

"""Built-in classifier rules of SPEC 2.5 (the trailer helpers of SPEC 2.6 live in trailers)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from capdaemon.classify.compiled import CompiledClassifier
from capdaemon.classify.ruletable import RULE_TABLE
from capdaemon.classify.trailers import commit_agent_session
from capdaemon.config import Config
from capdaemon.model import (
    CheckRun,
    FileVerdict,
    LabelEvent,
    PRSnapshot,
    Quadrant,
    RuleOutcome,
    RuleResult,
)

JUDGMENT_CHECK = "classifier-judgment"
AUTO_REVERT_LABEL = "decision:auto-revert"


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
        return _vote(
            name,
            Quadrant.D,
            f"PR to the bot's own repository {config.own_repo}: every change to it waits for "
            "an owner's ballot, whatever it changes",
        )
    return _abstain(name, match=False)


def empty_pr(snapshot: PRSnapshot, config: Config, ctx: RuleContext) -> RuleOutcome:
    """D for a PR with no file changes."""
    name = "empty_pr"
    if not snapshot.files:
        return _vote(
            name, Quadrant.D, "the PR changes no files: push a commit that changes one, or close it"
        )
    return _abstain(name, match=False)


def _aware(dt: datetime | None) -> bool:
    return dt is not None and dt.tzinfo is not None and dt.utcoffset() is not None


def auto_revert_marker(snapshot: PRSnapshot, config: Config, ctx: RuleContext) -> RuleOutcome:
    """C when the `decision:auto-revert` label is verified; otherwise abstain and say why."""
    name = "auto_revert_marker"
    label = AUTO_REVERT_LABEL.casefold()
    if not any(lbl.casefold() == label for lbl in snapshot.labels):
        return _abstain(name, match=False)
    ev, why = _label_applied(tuple(e for e in snapshot.label_events if e.label.casefold() == label))
    if ev is None:
        return _abstain(name, why)
    why_not = _label_actor_refusal(ev, snapshot, config) or _label_stale(ev, snapshot)
    if why_not:
        return _abstain(name, why_not)
    return _vote(name, Quadrant.C, f"auto-revert label verified (applied by {ev.actor})")


def _label_applied(events: tuple[LabelEvent, ...]) -> tuple[LabelEvent | None, str]:
    """(the labeled event still in force, "") or (None, why the label is ignored)."""
    if not events:
        return None, "label present but no labeled event was read: ignored"
    if not all(_aware(e.at) for e in events):
        return None, "label event without a timezone: ignored"
    order = sorted(range(len(events)), key=lambda i: (events[i].at, i))
    last_labeled = next((i for i in reversed(order) if events[i].action == "labeled"), None)
    if last_labeled is None:
        return None, "no labeled event: ignored"
    ev = events[last_labeled]
    if any(
        e.action == "unlabeled" and (e.at > ev.at or (e.at == ev.at and i != last_labeled))
        for i, e in enumerate(events)
    ):
        return None, "label was removed after it was applied: ignored"
    return ev, ""


def _label_actor_refusal(ev: LabelEvent, snapshot: PRSnapshot, config: Config) -> str:
    """Why the label's actor may not apply it ("" for an owner or the bot, not the author)."""
    actor = ev.actor.casefold()
    bot = config.bot_login.casefold()
    author = snapshot.author.casefold()
    if actor == author and author != bot:
        return f"label applied by the PR author {ev.actor}: ignored"
    if actor != bot and actor not in config.owners_for(snapshot.repo):
        return f"label applied by {ev.actor}, neither an owner nor the bot: ignored"
    return ""


def _label_stale(ev: LabelEvent, snapshot: PRSnapshot) -> str:
    """Why the label does not cover the head commit ("" when applied after it)."""
    head = next((c for c in snapshot.commits if c.sha == snapshot.head_sha), None)
    if head is None or head.committed_at is None or not _aware(head.committed_at):
        return "head commit time unknown: label ignored"
    if ev.at < head.committed_at:
        return "label applied before the head commit (stale): ignored"
    return ""


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
        canonical = config.canonical_app or config.canonical_app_id or "none configured"
        return _vote(
            name,
            Quadrant.D,
            f"classifier-judgment published by non-canonical {', '.join(who)}: only the "
            f"canonical App ({canonical}) may publish a check run of that name",
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
        return _vote(
            name,
            Quadrant.D,
            f"{' and '.join(missing)} incomplete{why}: what cannot be read whole is not "
            "judged safe; GitHub lists at most 3,000 files and 250 commits of a PR, so split "
            "a larger one",
        )
    return _abstain(name, match=False)


@dataclass(frozen=True)
class BuiltinRule:
    """A built-in rule and whether skills.yml may disable it (never the D rules)."""

    name: str
    func: Rule
    can_disable: bool


# each row of the rule table (capdaemon.classify.ruletable) bound to its function by name
_FUNCS: dict[str, Rule] = {
    f.__name__: f
    for f in (
        path_classifier_default,
        published_verdict,
        bot_self_repo,
        empty_pr,
        auto_revert_marker,
        agent_session_invalid,
        classifier_publisher_invalid,
        file_list_incomplete,
    )
}
BUILTIN_RULES: Sequence[BuiltinRule] = tuple(
    BuiltinRule(r.name, _FUNCS[r.name], r.can_disable) for r in RULE_TABLE
)

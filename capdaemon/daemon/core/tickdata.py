"""The tick's shared constants, records (TickReport, _BallotReads) and pure helpers."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from capdaemon.classify.ruletable import CHECK_READING_RULES, RULE_NAMES
from capdaemon.config import Config
from capdaemon.daemon.safety.common import QUIET_REREAD
from capdaemon.decide.labels import Label
from capdaemon.decide.merge import RequiredCheck
from capdaemon.forge.errors import TickAbort
from capdaemon.forge.types import Comment, Reaction
from capdaemon.model import LabelEvent, PRSnapshot, Quadrant, RuleResult, Verdict
from capdaemon.state import canonical_json
from capdaemon.stores.botstate import BALLOT_KIND, REVIEW_KIND, SCOPE_KIND
from capdaemon.timefmt import utc_iso

CRASH_ENV = "CAPDAEMON_CRASH_AFTER"
BALLOT, REVIEW, SCOPE = BALLOT_KIND, REVIEW_KIND, SCOPE_KIND
# Gather phase only (reads): how many requests run at once, and how many PRs are gathered
# before they are decided, recorded and acted on (bounds the snapshots held in memory).
GATHER_WORKERS = 8
GATHER_CHUNK = 100
# A ballot whose issue activity did not change is still read in full this often (see notes).
BALLOT_REREAD = QUIET_REREAD
# CHECK_READING_RULES: built-in rules that read snapshot.check_runs, a D they vote for can be
# lifted by a newer check run. User rules may read check runs too, so a D that rests on them is
# never "firm" either.
_BUILTIN_NAMES = frozenset(RULE_NAMES)
# Decision issues whose text capdaemon restores when someone else edits it (R5).
WATCHED_KINDS = (BALLOT, REVIEW)


class _Stopped(TickAbort):
    """A stop was requested (SIGTERM/SIGINT): leave after the current step."""


def _iso(dt: datetime) -> str:
    return utc_iso(dt)


def _digest(*parts: Any) -> str:
    return hashlib.sha256(canonical_json(list(parts)).encode("utf-8")).hexdigest()[:32]


@dataclass
class TickReport:
    """What one tick saw and did (printed by `capdaemon tick --once`, read by demo and tests)."""

    started_at: datetime
    seconds: float = 0.0
    prs_seen: int = 0
    classified: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    would_merge: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    ballots: dict[str, str] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False
    api_requests: int | None = None
    api_remaining: int | None = None
    # new PRs left for a later tick by the request/write budget (capdaemon.daemon.polling.backlog):
    # unread, and classified but waiting for writes by quadrant; backlog_left is their sum
    backlog_left: int = 0
    backlog_unread: int = 0
    backlog_waiting: dict[str, int] = field(default_factory=dict)
    # GitHub's clock minus this machine's, from the last answer's `Date` (None: no answer)
    clock_offset_seconds: int | None = None
    # config problems (a refused reload, a repo GitHub does not know): named here and in the
    # log, never counted as API failures by the breaker
    config_errors: list[str] = field(default_factory=list)
    unknown_repos: list[str] = field(default_factory=list)  # left out of this tick
    config_hash: str = ""  # the config (and user rules) this tick decided with

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        out = asdict(self)
        out["started_at"] = _iso(self.started_at)
        return out


@dataclass
class _BallotReads:
    """A ballot's comments and reactions read in the gather phase of step 3."""

    comments: list[Comment] | None = None
    reactions: list[Reaction] | None = None
    error: BaseException | None = None


def firm_d(verdict: Verdict) -> bool:
    """True when the verdict is D by votes no check run can lift.

    Only built-in rules that never read check runs count (an erroring rule counts as D, as in
    classify); a D from a check-reading rule or from a user rule is not firm, nor is the
    engine's default D when no rule voted at all.
    """
    votes = [
        Quadrant.D if o.result is RuleResult.ERROR else o.vote
        for o in verdict.rules
        if o.rule in _BUILTIN_NAMES
        and o.rule not in CHECK_READING_RULES
        and (o.result is RuleResult.ERROR or (o.result is RuleResult.VOTE and o.vote is not None))
    ]
    return bool(votes) and Quadrant.highest(q for q in votes if q is not None) is Quadrant.D


def issue_text_hash(title: str | None, body: str | None) -> str:
    """What an issue says (title and body) as one hash: capdaemon stores the hash of what it
    wrote and restores the issue when the live text differs (R5)."""
    return _digest(title or "", body or "")


def auto_revert_floor(events: Iterable[LabelEvent]) -> datetime | None:
    """The newest `labeled decision:auto-revert` event time among `events` (None: none).

    Recorded when a head is first seen: such a label may predate the push (the committer
    date that says otherwise is set by the pusher), so only a newer labeled event verifies
    the label for that head (R2).
    """
    label = Label.AUTO_REVERT.value.casefold()
    times = [e.at for e in events if e.action == "labeled" and e.label.casefold() == label]
    return max(times) if times else None


def without_stale_auto_revert(snap: PRSnapshot, floor: datetime | None) -> PRSnapshot:
    """The snapshot without the `labeled decision:auto-revert` events at or before `floor`
    (the classifier then ignores a label that only such events applied)."""
    if floor is None:
        return snap
    label = Label.AUTO_REVERT.value.casefold()
    events = tuple(
        e
        for e in snap.label_events
        if not (e.action == "labeled" and e.label.casefold() == label and e.at <= floor)
    )
    if len(events) == len(snap.label_events):
        return snap
    return dataclasses.replace(snap, label_events=events)


def _config_json(config: Config) -> Any:
    """The config as JSON-able data (the policy part of every fingerprint)."""
    data = asdict(config)
    data.pop("config_dir", None)
    data.pop("schedule", None)
    return data


def _rule_identity(rule: Any) -> list[str]:
    """A user rule's name and the hash of its source file (a changed rule reclassifies)."""
    path = getattr(rule, "path", "")
    digest = ""
    if path:
        try:
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            digest = "unreadable"
    return [str(getattr(rule, "name", rule)), digest]


def required_checks(protection: Mapping[str, Any]) -> tuple[RequiredCheck, ...]:
    """The checks a branch protection document requires, with their App pins (R7).

    `checks[]` carries {context, app_id}: a positive app_id pins the check to that GitHub App
    (only its check runs count, never a commit status); null or -1 means any source. Legacy
    `contexts` names not listed in `checks` are unpinned.
    """
    rsc = protection.get("required_status_checks") or {}
    out: dict[str, RequiredCheck] = {}
    for c in rsc.get("checks") or ():
        if not isinstance(c, Mapping) or not c.get("context"):
            continue
        app = c.get("app_id")
        pin = app if isinstance(app, int) and not isinstance(app, bool) and app > 0 else None
        req = RequiredCheck(str(c["context"]), pin)
        out[f"{req.context}\0{pin}"] = req
    named = {r.context for r in out.values()}
    for name in rsc.get("contexts") or ():
        if isinstance(name, str) and name and name not in named:
            out[f"{name}\0None"] = RequiredCheck(name)
    return tuple(out.values())

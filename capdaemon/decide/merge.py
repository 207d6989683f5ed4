"""Merge readiness (SPEC 4): every condition for an auto-merge, each with a readable reason."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from capdaemon.decide.ballot import BallotOutcome, BallotStatus
from capdaemon.decide.breaker import BreakerState, allows_merge
from capdaemon.decide.labels import L1C3_CHECK_NAME
from capdaemon.decide.tiers import (
    OneTapResult,
    OneTapState,
    Requirement,
    TierDecision,
    effective_requirement,
)
from capdaemon.model import CheckRun, Quadrant

PASSING = frozenset({"success"})


@dataclass(frozen=True)
class RequiredCheck:
    """A check that must pass, and who may report it (SPEC 4).

    `app_id` set: only a check run from that GitHub App counts (a commit status never does,
    as on GitHub). `apps_only`: without a pin, only a check run from some GitHub App counts —
    never a commit status, which anyone with write access (an agent) can post. A plain
    string in `MergeFacts.required_checks` is an unpinned protection context (any source,
    GitHub's own rule); a plain string in `extra_checks` is `apps_only`.
    """

    context: str
    app_id: int | None = None
    apps_only: bool = False

    @classmethod
    def of(cls, item: Any, *, apps_only: bool) -> RequiredCheck:
        """From a name, a (context, app_id) pair, or anything with .context/.app_id."""
        if isinstance(item, RequiredCheck):
            return item
        if isinstance(item, str):
            return cls(item, None, apps_only)
        if isinstance(item, tuple) and len(item) == 2:
            return cls(str(item[0]), _pin(item[1]), apps_only)
        context = getattr(item, "context", None)
        if isinstance(context, str):
            return cls(context, _pin(getattr(item, "app_id", None)), apps_only)
        raise TypeError(f"not a required check: {item!r}")

    def accepts(self, run: CheckRun) -> bool:
        """May this run (or status: no App) satisfy the requirement?"""
        if run.name != self.context:
            return False
        if self.app_id is not None:
            return run.app_id == self.app_id
        return run.app_id is not None if self.apps_only else True

    @property
    def label(self) -> str:
        """The check as named in reasons."""
        if self.app_id is not None:
            return f"{self.context} (App {self.app_id})"
        return f"{self.context} (a GitHub App check run)" if self.apps_only else self.context


def _pin(app_id: Any) -> int | None:
    """GitHub writes "any App" as -1 or null; anything else is a pinned App id."""
    if app_id is None or isinstance(app_id, bool):
        return None
    value = int(app_id)
    return None if value < 0 else value


class MergeAction(enum.StrEnum):
    """What the daemon does with a readiness result."""

    MERGE = "merge"
    WOULD_MERGE = "would_merge"  # shadow mode: log and audit, never merge
    WAIT = "wait"


@dataclass(frozen=True)
class MergeFacts:
    """Everything merge readiness looks at, for one PR at one head sha.

    `checks` are the check runs and statuses on `head_sha` (L1.C3 among them).
    `required_checks` (branch protection) and `extra_checks` (repo config) hold names or
    RequiredCheck / (context, app_id) items; see RequiredCheck for who may satisfy them.
    `l1c3_app_id` / `l1c3_app_slug`: when set, only an L1.C3 published by that App
    counts (anyone with write access can post a status of the same name).
    `capability_reasons`: why the capability refuses (empty = allowed).
    """

    head_sha: str
    quadrant: Quadrant
    tier: TierDecision
    checks: tuple[CheckRun, ...] = ()
    required_checks: tuple[Any, ...] = ()  # from the base branch protection
    extra_checks: tuple[Any, ...] = ()  # from the repo config (names: GitHub App runs only)
    draft: bool = False
    labels: tuple[str, ...] = ()
    blocking_labels: tuple[str, ...] = ("do-not-merge",)
    mergeable: bool | None = None
    breaker: BreakerState = field(default_factory=BreakerState)
    verified_auto_revert: bool = False
    capability_reasons: tuple[str, ...] = ()
    ballot: BallotOutcome | None = None
    one_tap: OneTapResult | None = None
    shadow: bool = False
    l1c3_app_id: int | None = None
    l1c3_app_slug: str | None = None


@dataclass(frozen=True)
class Readiness:
    """May this PR merge now? `reasons` say why not (or, when ok, notes such as shadow mode)."""

    ok: bool
    reasons: tuple[str, ...]
    shadow: bool = False
    requirement: Requirement = Requirement.NONE

    @property
    def action(self) -> MergeAction:
        """MERGE, WOULD_MERGE (shadow) or WAIT."""
        if not self.ok:
            return MergeAction.WAIT
        return MergeAction.WOULD_MERGE if self.shadow else MergeAction.MERGE


def _newest(checks: Iterable[CheckRun], name: str) -> CheckRun | None:
    floor = datetime.min.replace(tzinfo=UTC)
    runs = [c for c in checks if c.name == name]
    if not runs:
        return None
    return max(runs, key=lambda c: (c.completed_at or c.started_at or floor, c.id or 0))


def _check_reason(checks: Sequence[CheckRun], name: str, what: str) -> str | None:
    run = _newest(checks, name)
    if run is None:
        return f"{what} {name} has not reported on this head"
    if run.status != "completed":
        return f"{what} {name} is {run.status}"
    if run.conclusion not in PASSING:
        return f"{what} {name} concluded {run.conclusion}"
    return None


def _requirement_reason(facts: MergeFacts, requirement: Requirement) -> str | None:
    ballot = facts.ballot
    approved = ballot is not None and ballot.approves(facts.head_sha)
    if requirement is Requirement.NEVER:
        return "merge_policy manual: the daemon never merges this PR (a human does)"
    if requirement is Requirement.NONE or approved:
        return None
    if requirement is Requirement.ONE_TAP and facts.one_tap is not None:
        if facts.one_tap.state is OneTapState.APPROVED:
            return None
        if facts.one_tap.state is OneTapState.PENDING:
            return f"tier 2: waiting for a one-tap 👍 ({facts.one_tap.reason})"
    who = "quadrant D" if facts.quadrant is Quadrant.D else f"tier {facts.tier.tier}"
    if ballot is None:
        return f"{who}: waiting for an owner ballot"
    if ballot.status.mergeable:
        return f"{who}: ballot approved {ballot.head_sha[:12]}, not this head {facts.head_sha[:12]}"
    if ballot.status is BallotStatus.DEFERRED:
        return f"{who}: ballot deferred (decision:deferred), not mergeable"
    if ballot.status is BallotStatus.REJECTED:
        return f"{who}: ballot rejected ({ballot.reason})"
    return f"{who}: ballot pending ({ballot.reason})"


def _l1c3_reason(facts: MergeFacts) -> str | None:
    """Why L1.C3 (from the expected App, when pinned) is not green on this head, or None."""
    l1c3 = [
        c
        for c in facts.checks
        if c.name == L1C3_CHECK_NAME
        and (facts.l1c3_app_id is None or c.app_id == facts.l1c3_app_id)
        and (facts.l1c3_app_slug is None or c.app_slug == facts.l1c3_app_slug)
    ]
    return _check_reason(l1c3, L1C3_CHECK_NAME, "check")


def _required_check_reasons(facts: MergeFacts) -> list[str]:
    """One reason per required or extra check (other than L1.C3) not green on this head."""
    reasons: list[str] = []
    wanted = [RequiredCheck.of(c, apps_only=False) for c in facts.required_checks]
    wanted += [RequiredCheck.of(c, apps_only=True) for c in facts.extra_checks]
    for req in dict.fromkeys(wanted):
        if req.context != L1C3_CHECK_NAME:
            runs = [c for c in facts.checks if req.accepts(c)]
            r = _check_reason(runs, req.context, "required check")
            if r:
                reasons.append(r.replace(f"check {req.context} ", f"check {req.label} ", 1))
    return reasons


def _pr_state_reasons(facts: MergeFacts) -> list[str]:
    """Draft, blocking labels and GitHub's mergeable flag."""
    reasons: list[str] = []
    if facts.draft:
        reasons.append("the PR is a draft")
    blocking = {b.lower() for b in facts.blocking_labels}
    reasons += [f"blocking label {label}" for label in facts.labels if label.lower() in blocking]
    if facts.mergeable is not True:
        state = "unknown yet" if facts.mergeable is None else "conflicts with the base"
        reasons.append(f"not mergeable ({state})")
    return reasons


def _breaker_reasons(facts: MergeFacts) -> list[str]:
    allowed, why = allows_merge(facts.breaker, facts.quadrant, facts.verified_auto_revert)
    return [] if allowed else [why]


def waits_only_on_checks(facts: MergeFacts) -> bool:
    """True when the PR would be ready but for required or extra checks (other than L1.C3)
    not green on this head: a check run completing or a status posted may let it merge.
    An unknown mergeability is taken as computable here (it is re-read on its own)."""
    if not _required_check_reasons(facts):
        return False
    mergeable = True if facts.mergeable is None else facts.mergeable
    rest = replace(facts, required_checks=(), extra_checks=(), mergeable=mergeable)
    return merge_readiness(rest).ok


def waiting_check_feed(facts: MergeFacts) -> str:
    """Which of a head's check feeds may show a required or extra check (other than L1.C3)
    still not green turn green: "check-runs" when each can be met only by a GitHub App's check
    run (a pinned App, or an extra check), else "checks" (its check runs and its statuses).
    A reason to look, never to merge: the look's targeted tick decides on every check."""
    wanted = [RequiredCheck.of(c, apps_only=False) for c in facts.required_checks]
    wanted += [RequiredCheck.of(c, apps_only=True) for c in facts.extra_checks]
    for req in dict.fromkeys(wanted):
        if req.context == L1C3_CHECK_NAME or req.app_id is not None or req.apps_only:
            continue
        runs = [c for c in facts.checks if req.accepts(c)]
        if _check_reason(runs, req.context, "required check"):
            return "checks"  # a commit status may meet it too
    return "check-runs"


def merge_readiness(facts: MergeFacts) -> Readiness:
    """All of SPEC 4: L1.C3 and required checks green on this head, not draft, no blocking
    label, mergeable, breaker allows, capability allows, tier and quadrant requirement met.

    Every failing condition is listed (not only the first). In shadow mode `ok` is still
    computed; `action` is then WOULD_MERGE instead of MERGE.
    """
    reasons = [r for r in (_l1c3_reason(facts),) if r]
    reasons += _required_check_reasons(facts)
    reasons += _pr_state_reasons(facts)
    reasons += _breaker_reasons(facts)
    reasons += [f"capability: {c}" for c in facts.capability_reasons]
    requirement = effective_requirement(facts.quadrant, facts.tier)
    reasons += [r for r in (_requirement_reason(facts, requirement),) if r]
    ok = not reasons
    if ok and facts.shadow:
        reasons.append("shadow mode: would merge, did not")
    return Readiness(ok, tuple(reasons), facts.shadow, requirement)

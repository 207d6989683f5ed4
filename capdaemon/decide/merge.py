"""Merge readiness (SPEC 4): every condition for an auto-merge, each with a readable reason."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

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


class MergeAction(enum.StrEnum):
    """What the daemon does with a readiness result."""

    MERGE = "merge"
    WOULD_MERGE = "would_merge"  # shadow mode: log and audit, never merge
    WAIT = "wait"


@dataclass(frozen=True)
class MergeFacts:
    """Everything merge readiness looks at, for one PR at one head sha.

    `checks` are the check runs and statuses on `head_sha` (L1.C3 among them).
    `l1c3_app_id` / `l1c3_app_slug`: when set, only an L1.C3 published by that App
    counts (anyone with write access can post a status of the same name).
    `capability_reasons`: why the capability refuses (empty = allowed).
    """

    head_sha: str
    quadrant: Quadrant
    tier: TierDecision
    checks: tuple[CheckRun, ...] = ()
    required_checks: tuple[str, ...] = ()  # from the base branch protection
    extra_checks: tuple[str, ...] = ()  # from the repo config
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


def merge_readiness(facts: MergeFacts) -> Readiness:
    """All of SPEC 4: L1.C3 and required checks green on this head, not draft, no blocking
    label, mergeable, breaker allows, capability allows, tier and quadrant requirement met.

    Every failing condition is listed (not only the first). In shadow mode `ok` is still
    computed; `action` is then WOULD_MERGE instead of MERGE.
    """
    reasons: list[str] = []
    l1c3 = [
        c
        for c in facts.checks
        if c.name == L1C3_CHECK_NAME
        and (facts.l1c3_app_id is None or c.app_id == facts.l1c3_app_id)
        and (facts.l1c3_app_slug is None or c.app_slug == facts.l1c3_app_slug)
    ]
    r = _check_reason(l1c3, L1C3_CHECK_NAME, "check")
    if r:
        reasons.append(r)
    for name in dict.fromkeys((*facts.required_checks, *facts.extra_checks)):
        if name != L1C3_CHECK_NAME:
            r = _check_reason(facts.checks, name, "required check")
            if r:
                reasons.append(r)
    if facts.draft:
        reasons.append("the PR is a draft")
    blocking = {b.lower() for b in facts.blocking_labels}
    reasons += [f"blocking label {label}" for label in facts.labels if label.lower() in blocking]
    if facts.mergeable is not True:
        state = "unknown yet" if facts.mergeable is None else "conflicts with the base"
        reasons.append(f"not mergeable ({state})")
    allowed, why = allows_merge(facts.breaker, facts.quadrant, facts.verified_auto_revert)
    if not allowed:
        reasons.append(why)
    reasons += [f"capability: {c}" for c in facts.capability_reasons]
    requirement = effective_requirement(facts.quadrant, facts.tier)
    r = _requirement_reason(facts, requirement)
    if r:
        reasons.append(r)
    ok = not reasons
    if ok and facts.shadow:
        reasons.append("shadow mode: would merge, did not")
    return Readiness(ok, tuple(reasons), facts.shadow, requirement)

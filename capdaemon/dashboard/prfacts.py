"""What the PRs table knows of each PR from prs.json, and what an open PR waits on (pure).

`waiting_on` is the one home of the dashboard's answer to "why has this PR not merged yet?".
It reads only state the daemon wrote (the PR record, the breaker, the tick budget's waiting
list, the tiers and one-tap requests of safety.json) and reuses the daemon's own decisions
where they exist: `allows_merge` for the breaker, `effective_requirement` of the quadrant and
tier for what owners must say, `BallotStatus.mergeable` for a ballot. Base branch protection
is not a wait: the daemon merges on an unprotected base too (drift is an incident, counted by
the breaker), so the merge queue page lists it per repo instead. What the state cannot say
(checks of other apps, GitHub's mergeability now) is asked of GitHub at merge time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.breaker import BreakerState, allows_merge
from capdaemon.decide.labels import IssueKind
from capdaemon.decide.rounds import after_rejection_tier
from capdaemon.decide.tiers import Requirement, TierDecision, effective_requirement
from capdaemon.model import Quadrant
from capdaemon.stores.prrecord import PRRecord

# the kinds of thing a PR can wait on, in the order the table lists them
WAIT_KINDS = (
    "budget",
    "breaker",
    "owner",
    "ballot",
    "check",
    "label",
    "mergeability",
    "in progress",
    "shadow mode",
)


@dataclass(frozen=True, slots=True)
class PRFacts:
    """One PR record of prs.json, reduced to what the pages show and `waiting_on` reads."""

    title: str = ""
    author: str = ""
    state: str = ""
    branch: str = ""
    head_sha: str = ""
    quadrant: str = ""
    check_success: bool = False
    mergeable: bool | None = None
    blocking: tuple[str, ...] = ()
    auto_revert: bool = False
    ballot_status: str = ""
    ballot_head: str = ""
    ballot_open: bool = False
    ballot_issue: str = ""
    ballot_opened_at: str = ""
    merge_blocked_head: str = ""
    would_merge_head: str = ""
    pending: bool = False
    merge_policy: str = "auto"
    after_rejection: bool = False

    @classmethod
    def of(cls, rec: PRRecord) -> PRFacts:
        """The facts of one prs.json record (read by the daemon's own typed reader)."""
        issue = rec.issue(IssueKind.BALLOT)
        ballot = rec.ballot
        return cls(
            title=rec.title,
            author=rec.author,
            state=rec.state.value,
            branch=rec.head_ref,
            head_sha=rec.head_sha,
            quadrant="" if rec.quadrant is None else rec.quadrant.value,
            check_success=rec.check_success,
            mergeable=rec.mergeable,
            blocking=tuple(b for b in rec.blocking if b),
            auto_revert=rec.auto_revert,
            ballot_status="" if ballot is None else ballot.status.value,
            ballot_head="" if ballot is None else ballot.head_sha,
            ballot_open=issue is not None and issue.open,
            ballot_issue="" if issue is None else str(issue.number),
            ballot_opened_at="" if issue is None else issue.opened_at,
            merge_blocked_head=rec.merge_blocked_head,
            would_merge_head=rec.would_merge_head,
            pending=rec.pending is not None,
            merge_policy=rec.merge_policy or "auto",
            after_rejection=rec.ballot_round is not None and rec.ballot_round.after_rejection,
        )


@dataclass(frozen=True)
class World:
    """The state every PR's wait depends on: the breaker (None: unreadable), the PRs the tick
    budget holds back, safety.json's tiers and one-tap requests (None: unreadable)."""

    breaker: BreakerState | None
    budget_waiting: frozenset[str] = frozenset()
    tiers: Mapping[str, Any] | None = None
    one_tap: Mapping[str, Any] | None = None
    shadow: bool = False


def _tier(ref: str, f: PRFacts, world: World) -> TierDecision:
    """The PR's tier as the daemon decides it from safety.json (`safety.tiers`): unknown
    under `tiered` is tier 3 (fail closed); after a rejection, at least a full ballot."""
    entry = (world.tiers or {}).get(ref)
    policy = f.merge_policy
    if (
        isinstance(entry, dict)
        and entry.get("head_sha") == f.head_sha
        and (entry.get("merge_policy") == policy)
    ):
        td = TierDecision(int(entry.get("tier") or 3), (), policy)
    elif policy == "tiered" or world.tiers is None:
        td = TierDecision(3, ("tier not known for this head",), policy)
    else:
        td = TierDecision(1, (), policy)
    return after_rejection_tier(td, f.after_rejection)


def _ballot_wait(f: PRFacts) -> str:
    """Why the owners' ballot does not let the PR merge yet ("" when it does)."""
    try:
        status = BallotStatus(f.ballot_status or "pending")
    except ValueError:
        return f"ballot state {f.ballot_status!r} unknown"
    if status.mergeable and f.ballot_head == f.head_sha:
        return ""
    if status.mergeable:
        return f"ballot approved {f.ballot_head[:12]}, not this head {f.head_sha[:12]}"
    return {
        BallotStatus.PENDING: "an owner's ballot vote",
        BallotStatus.DEFERRED: "ballot deferred (decision:deferred): not mergeable",
        BallotStatus.REJECTED: "ballot rejected",
    }.get(status, f"ballot {status.value}")


def _owner_wait(ref: str, f: PRFacts, quadrant: Quadrant, world: World) -> tuple[str, str] | None:
    """What owners must still say (the quadrant's and the tier's requirement, the higher)."""
    req = effective_requirement(quadrant, _tier(ref, f, world))
    if req is Requirement.NEVER:
        return ("owner", "merge_policy manual: the daemon never merges this PR (a human does)")
    if req is Requirement.NONE or not _ballot_wait(f):
        return None
    tap = (world.one_tap or {}).get(ref)
    tap_state = tap.get("state") if isinstance(tap, dict) else None
    if req is Requirement.ONE_TAP and tap_state == "approved":
        return None
    if req is Requirement.ONE_TAP and tap_state == "pending":
        return ("ballot", "an owner's one-tap 👍")
    why = _ballot_wait(f)
    return ("ballot", why) if why else None


def waiting_on(ref: str, f: PRFacts, world: World) -> tuple[tuple[str, str], ...]:
    """(kind, what) for each thing an open PR waits on before the daemon can merge it; ()
    when the state shows nothing to wait on (the merge queue: the next tick asks GitHub for
    its mergeability and checks, then merges). Closed and merged PRs wait on nothing."""
    if f.state != "open":
        return ()
    try:
        quadrant: Quadrant | None = Quadrant(f.quadrant)
    except ValueError:
        quadrant = None
    return (*_gate_waits(ref, f, quadrant, world), *_pr_waits(f, quadrant, world))


def _gate_waits(
    ref: str, f: PRFacts, quadrant: Quadrant | None, world: World
) -> list[tuple[str, str]]:
    """The budget, the breaker and the owners."""
    out: list[tuple[str, str]] = []
    if ref in world.budget_waiting:
        out.append(("budget", "classified; its writes wait for the tick's write budget"))
    if world.breaker is None:
        out.append(("breaker", "breaker state unreadable: treated as tripped"))
    elif quadrant is not None:
        allowed, why = allows_merge(world.breaker, quadrant, f.auto_revert)
        if not allowed:
            out.append(("breaker", why))
    owner = _owner_wait(ref, f, quadrant, world) if quadrant is not None else None
    if owner is not None:
        out.append(owner)
    return out


def _pr_waits(f: PRFacts, quadrant: Quadrant | None, world: World) -> list[tuple[str, str]]:
    """The PR itself: its check, labels, mergeability, an action in flight, shadow mode."""
    out: list[tuple[str, str]] = []
    if quadrant is None:
        out.append(("check", "not classified at its current head yet"))
    elif not f.check_success:
        out.append(("check", "capdaemon's L1.C3 check is not green on this head"))
    out += [("label", f"blocking label {b}") for b in f.blocking]
    if f.merge_blocked_head and f.merge_blocked_head == f.head_sha:
        out.append(("mergeability", "GitHub refused to merge this head"))
    elif f.mergeable is False:
        out.append(("mergeability", "conflicts with the base"))
    if f.pending:
        out.append(("in progress", "an action's outcome is not recorded yet"))
    if world.shadow and f.would_merge_head and f.would_merge_head == f.head_sha:
        out.append(("shadow mode", "shadow mode: would merge, did not"))
    return out

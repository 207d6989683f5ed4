"""What the PRs table knows of each PR from prs.json, and what an open PR waits on (pure).

`waiting_on` is the one home of the dashboard's answer to "why has this PR not merged yet?".
It reads only state the daemon wrote (the PR record, the breaker, the tick budget's waiting
list, the base branch's protection as last checked) and reuses the daemon's own decisions
where they exist: `allows_merge` for the breaker, `BallotStatus.mergeable` for a ballot. What
the state cannot say (required checks of other apps, GitHub's mergeability not yet computed)
is never guessed as "ready": an unknown is shown as something to wait on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.breaker import BreakerState, allows_merge
from capdaemon.model import Quadrant

# the kinds of thing a PR can wait on, in the order the table lists them
WAIT_KINDS = (
    "budget",
    "base protection",
    "breaker",
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

    @classmethod
    def of(cls, rec: Mapping[str, Any]) -> PRFacts:
        """The facts of one prs.json record (a field of the wrong type reads as unknown)."""
        issue = (rec.get("issues") or {}).get("ballot")
        issue = issue if isinstance(issue, dict) else {}
        ballot = rec.get("ballot")
        ballot = ballot if isinstance(ballot, dict) else {}
        mergeable = rec.get("mergeable")
        return cls(
            title=str(rec.get("title") or ""),
            author=str(rec.get("author") or ""),
            state=str(rec.get("state") or ""),
            branch=str(rec.get("head_ref") or ""),
            head_sha=str(rec.get("head_sha") or ""),
            quadrant=str(rec.get("quadrant") or ""),
            check_success=rec.get("check_success") is True,
            mergeable=mergeable if isinstance(mergeable, bool) else None,
            blocking=tuple(str(b) for b in rec.get("blocking") or () if b),
            auto_revert=rec.get("auto_revert") is True,
            ballot_status=str(ballot.get("status") or ""),
            ballot_head=str(ballot.get("head_sha") or ""),
            ballot_open=bool(issue.get("open")),
            ballot_issue=str(issue.get("number") or ""),
            ballot_opened_at=str(issue.get("opened_at") or ""),
            merge_blocked_head=str(rec.get("merge_blocked_head") or ""),
            would_merge_head=str(rec.get("would_merge_head") or ""),
            pending=bool(rec.get("pending")),
        )


@dataclass(frozen=True)
class World:
    """The state every PR's wait depends on: the breaker (None: unreadable), the PRs the tick
    budget holds back, the base protection per repo as last checked (None: unreadable)."""

    breaker: BreakerState | None
    budget_waiting: frozenset[str] = frozenset()
    protection: Mapping[str, Any] | None = None
    shadow: bool = False


def _ballot_wait(f: PRFacts, quadrant: Quadrant | None) -> str:
    """Why an owner's decision is still needed ("" when it is not, or it is given)."""
    needs = quadrant is Quadrant.D or f.ballot_open or bool(f.ballot_status)
    if not needs:
        return ""
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


def _protection_wait(repo: str, world: World) -> str:
    if world.protection is None:
        return "protection state unreadable (see banner)"
    entry = world.protection.get(repo)
    if not isinstance(entry, dict):
        return ""
    problem = entry.get("drift") or entry.get("missing")
    return f"base branch protection: {problem}" if problem else ""


def waiting_on(ref: str, f: PRFacts, world: World) -> tuple[tuple[str, str], ...]:
    """(kind, what) for each thing an open PR waits on before the daemon can merge it; ()
    when the state shows nothing to wait on (the merge queue: the next tick asks GitHub for
    its mergeability and checks, then merges). Closed and merged PRs wait on nothing."""
    if f.state != "open":
        return ()
    out: list[tuple[str, str]] = []
    repo = ref.rpartition("#")[0]
    if ref in world.budget_waiting:
        out.append(("budget", "classified; its writes wait for the tick's write budget"))
    prot = _protection_wait(repo, world)
    if prot:
        out.append(("base protection", prot))
    try:
        quadrant: Quadrant | None = Quadrant(f.quadrant)
    except ValueError:
        quadrant = None
    if world.breaker is None:
        out.append(("breaker", "breaker state unreadable: treated as tripped"))
    elif quadrant is not None:
        allowed, why = allows_merge(world.breaker, quadrant, f.auto_revert)
        if not allowed:
            out.append(("breaker", why))
    ballot = _ballot_wait(f, quadrant)
    if ballot:
        out.append(("ballot", ballot))
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
    return tuple(out)

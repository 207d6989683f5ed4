"""Steps 1-2 of a tick, reads only: what changed since the last tick, read concurrently."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from functools import partial
from typing import Any

from capdaemon.daemon.core.context import Tick, TickDeps
from capdaemon.daemon.core.tickdata import GATHER_WORKERS, _Stopped
from capdaemon.daemon.polling.prstate import (
    full_fingerprint,
    light_fingerprint,
    published,
)
from capdaemon.daemon.polling.tasks import capability_state
from capdaemon.daemon.polling.tickpr import TickPR
from capdaemon.forge.errors import TickAbort
from capdaemon.forge.types import PRSummary
from capdaemon.model import CheckRun, Quadrant
from capdaemon.stores.botstate import PRRecord


# ---------------------------------------------------------- the gather phase
def concurrently(t: Tick, calls: Mapping[Any, Callable[[], Any]]) -> dict[Any, Any]:
    """Run independent reads on GATHER_WORKERS threads; each key maps to its result or error.

    Reads only (the forge gives each concurrent request its own PyGithub Requester over the
    shared ETag cache); decisions, records and writes stay on the tick's thread. After a
    TickAbort (a rate limit, a stop request) the remaining reads are not started: they get that
    error, so the tick ends as it would have sequentially.
    """
    deps, ctx = t.deps, t.ctx
    out: dict[Any, Any] = {}
    halt: list[BaseException] = []

    def run(fn: Callable[[], Any]) -> Any:
        if halt:
            return halt[0]
        if deps.stop.is_set():
            return _Stopped()
        try:
            return fn()
        except TickAbort as exc:
            halt.append(exc)
            return exc
        except Exception as exc:
            return exc

    if len(calls) <= 1:
        return {key: run(fn) for key, fn in calls.items()}
    if ctx.pool is None:  # one pool per tick, shut down when the tick ends
        ctx.pool = ThreadPoolExecutor(GATHER_WORKERS, thread_name_prefix="capdaemon-gather")
    futures = {ctx.pool.submit(run, fn): key for key, fn in calls.items()}
    for fut in as_completed(futures):
        out[futures[fut]] = fut.result()
        deps.heartbeat()
    return out


def plan(t: Tick, item: TickPR) -> TickPR:
    """What must be read for one PR this tick (decided from bot-state and the list alone):
    its light fingerprint, capability state and why it needs no read, if so."""
    deps, pr = t.deps, item.pr
    rec = deps.prs.records.get(pr.ref)
    same_head = rec is not None and rec.head_sha == pr.head_sha
    item.cap = capability_state(rec.task_id if rec and same_head else None, t.ctx.load_cap, t.now)
    item.light = light_fingerprint(pr, item.policy_hash, item.cap)
    item.settled = None
    if rec is not None and same_head and rec.state == "open" and pr.ref not in t.ctx.tampered:
        item.settled = settled(deps, rec, pr, item.light)
    return item


def gather(t: Tick, items: Sequence[TickPR]) -> None:
    """Gather phase of steps 1-2: check runs where they can matter, then the snapshots of
    the PRs whose inputs changed — concurrently, into each item. Nothing is decided or
    written here.

    Commit statuses are not read here: classification never sees them (a snapshot carries
    check runs only); merge readiness reads them in step 4, for PRs that may merge.
    """
    deps = t.deps
    for item in items:
        item.start_reads()
        plan(t, item)
    wanted = [item for item in items if item.settled is None]
    got = concurrently(
        t,
        {id(i): partial(deps.forge.check_runs, i.pr.repo, i.pr.head_sha) for i in wanted},
    )
    snaps: list[TickPR] = []
    for item in wanted:
        result = got[id(item)]
        if isinstance(result, BaseException):
            item.error = result
            continue
        checks: list[CheckRun] = result
        item.checks = checks
        rec = deps.prs.records.get(item.pr.ref)
        if rec is None or not unchanged(t, rec, item, checks):
            snaps.append(item)
    got = concurrently(
        t,
        {
            id(i): partial(
                deps.forge.snapshot,
                i.pr.repo,
                i.pr.number,
                contents_for=deps.contents_for,
                known_runs=(i.pr.head_sha, i.checks or ()),
            )
            for i in snaps
        },
    )
    for item in snaps:
        result = got[id(item)]
        if isinstance(result, BaseException):
            item.error = result
        else:
            item.snapshot = result


def settled(deps: TickDeps, rec: PRRecord, pr: PRSummary, light: str) -> str | None:
    """Why this PR needs no read at all this tick (None: read its check runs).

    Requires the PR list, policy and capability to be as at the last full evaluation
    (`light`) and that evaluation to be published for the current ballot state; then the
    only unknown is the check runs on the head, and they are skipped when no check run
    can change what the daemon does with this head (see _checks_cannot_matter).
    """
    if rec.light != light or not published(rec, pr.head_sha):
        return None
    if not deps.safety.tiers.recorded(rec):
        return None  # safety.json lost this head's tier (a crash before its save)
    return checks_cannot_matter(deps, rec, pr)


def checks_cannot_matter(deps: TickDeps, rec: PRRecord, pr: PRSummary) -> str | None:
    """Why no check run on this head can change an outcome (None: they can — read them).

    - draft: GitHub refuses to merge a draft, and leaving draft changes the PR list entry;
    - blocked: P0 findings (agent registry: commit trailers, registry, burn-in) and scope
      violations (files, commits, task snapshot) fail L1.C3 whatever the checks say, and
      none of them reads check runs;
    - a ballot is needed and not approved for this head: the PR is a firm D (D by rules
      that never read check runs; a check can only raise a quadrant, and D is the top), or
      its tier asks for a ballot (tier 3, expired one-tap: files and task level only).
      Only an owner's vote in step 3 makes it mergeable, and that republishes it first.
    Everything else reads: A/B/C (required/extra checks; a classifier-judgment can raise
    them), approved ballots (merging needs the checks), a D that rests on a check-reading
    or user rule (a newer judgment can lower it), a pending one-tap, and a PR with a
    blocking label (only the daemon honours the label: a human could still merge on a
    stale green L1.C3, so its classification must stay current).
    """
    if pr.draft:
        return "draft"
    if rec.blocking:
        return "blocked"
    firm = rec.quadrant if rec.firm_d is True else None  # a D no check run can lift
    if deps.safety.tiers.needs_ballot(rec, firm) and not rec.ballot_approves(pr.head_sha):
        return "ballot not approved"
    return None


def unchanged(t: Tick, rec: PRRecord, item: TickPR, checks: Iterable[CheckRun]) -> bool:
    """Same head and inputs as last handled, published for the current ballot state."""
    deps, pr = t.deps, item.pr
    if rec.head_sha != pr.head_sha or not published(rec, pr.head_sha):
        return False
    if pr.ref in t.ctx.tampered:
        return False  # a decision issue was edited by someone else: rewrite it
    if not deps.safety.tiers.recorded(rec):
        return False  # classify again to record the head's tier (no second audit)
    if rec.quadrant == Quadrant.D.value and rec.firm_d is None:
        return False  # recorded before `firm_d` existed: classify once more to learn it
    return full_fingerprint(pr, checks, item.policy_hash, item.cap) == rec.fingerprint

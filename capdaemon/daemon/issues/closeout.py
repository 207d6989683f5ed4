"""Decision issues of PRs that left: each closed once with the PR's outcome, whatever decided it.

One step, run after the merges of every tick (full and targeted), walks the records of PRs
that are merged or closed and closes the decision issues still open for them: the ballot,
the scope-violation issue, the one-tap request (approved by 👍 or Telegram, or still
pending), and — for a PR closed without merging — its passive review. A merged PR's passive
review stays open for its review window (step 5 closes it); an owner's comment keeps any
review open. Because it works from the recorded state, not from the path that decided, it
also finishes what a crash between a merge and a close left open: each issue is closed once
(the forge's close is idempotent: one marked comment, then the state), audited as
`issue_closed`. Shadow mode closes nothing.
"""

from __future__ import annotations

from capdaemon.daemon.core.context import Tick
from capdaemon.daemon.core.failure import per_item
from capdaemon.daemon.core.tickdata import BALLOT, REVIEW, SCOPE
from capdaemon.daemon.issues import texts
from capdaemon.daemon.issues.ensure import close_issue
from capdaemon.daemon.safety.common import ONE_TAP
from capdaemon.stores.botstate import PRRecord

MAX_CLOSES_PER_TICK = 20  # GitHub writes; the rest wait for the next tick (logged)


def step_close_settled(t: Tick) -> None:
    """Close every decision issue still open for a PR that merged or closed (see module)."""
    deps = t.deps
    if deps.decision_repo is None or deps.shadow:
        return
    budget = MAX_CLOSES_PER_TICK
    waiting = 0
    for rec in list(deps.prs.records.values()):
        if t.only is not None and rec.repo not in t.only:
            continue
        kinds = open_kinds(rec, deps.safety.tiers.one_tap_open(rec.ref))
        if not kinds:
            continue
        if budget < len(kinds):
            waiting += 1
            continue
        budget -= len(kinds)
        _close_all(t, rec, kinds)
    if waiting:
        deps.log.info(
            "issue.close_deferred",
            prs=waiting,
            reason=f"at most {MAX_CLOSES_PER_TICK} decision issues are closed per tick",
        )


def open_kinds(rec: PRRecord, one_tap_open: bool) -> tuple[str, ...]:
    """The kinds of decision issue to close now for `rec` (none while it is open or its
    outcome is still being reconciled)."""
    if rec.state == "open" or rec.pending is not None:
        return ()
    kinds = [k for k in (BALLOT, SCOPE) if (i := rec.issues.get(k)) is not None and i.open]
    review = rec.issues.get(REVIEW)
    if rec.state != "merged" and review is not None and review.open and not review.kept_open:
        kinds.append(REVIEW)
    if one_tap_open:
        kinds.append(ONE_TAP)
    return tuple(kinds)


def _close_all(t: Tick, rec: PRRecord, kinds: tuple[str, ...]) -> None:
    deps = t.deps
    for kind in kinds:
        comment = texts.settled_comment(kind, rec.state, rec.merge_sha)
        with per_item(t.report, "issue.close_failed", rec.ref, pr=rec.ref, kind=kind) as item:
            if kind == ONE_TAP:
                deps.safety.tiers.close_settled(rec, comment, t.now)
            else:
                rec = close_issue(t, rec, kind, comment)
        if item.failed:
            return  # the rest next tick: the record still says open

"""Steps 0 and 4 of a tick: reconcile attempted actions, merge readiness facts, merge at the sha."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from capdaemon.config import RepoConfig
from capdaemon.daemon.core.context import Tick, TickContext, TickDeps
from capdaemon.daemon.core.failure import per_item
from capdaemon.daemon.core.reactions import MERGE_DONE, merge_cause, time_or_none
from capdaemon.daemon.core.tickdata import (
    BALLOT,
    required_checks,
)
from capdaemon.daemon.issues.ensure import close_issue
from capdaemon.daemon.merging.reconcile import pr_intent, recorded_outcome, settle
from capdaemon.daemon.polling.prstate import ballot_outcome
from capdaemon.daemon.polling.tickpr import TickPR
from capdaemon.decide.merge import (
    MergeAction,
    MergeFacts,
    Readiness,
    RequiredCheck,
    merge_readiness,
    waiting_check_feed,
    waits_only_on_checks,
)
from capdaemon.decide.tiers import OneTapResult
from capdaemon.forge.errors import (
    BaseMoved,
    ForgeError,
    HeadMoved,
    NotMergeable,
)
from capdaemon.model import CheckRun
from capdaemon.stores.botstate import PRRecord
from capdaemon.stores.prrecord import PRState


# ------------------------------------------------------------------ step 0
def step_reconcile(t: Tick) -> None:
    """Finish what a crash left between an "attempted" record and its outcome (by PR state)."""
    deps, now, report = t.deps, t.now, t.report
    for rec in list(deps.prs.records.values()):
        if not rec.pending:
            continue
        op = rec.pending.op.value
        if outcome_recorded(t, rec, op):
            continue
        with per_item(report, "reconcile.failed", rec.ref, pr=rec.ref) as item:
            status = deps.forge.pull_status(rec.repo, rec.number)
        if item.failed:  # outcome still unknown: keep it pending, act on nothing
            continue
        base = {
            "action": op,
            "pr": rec.ref,
            "head_sha": rec.pending.head_sha,
            "reconciled": True,
        }
        if op == "merge" and status.merged and status.head_sha != base["head_sha"]:
            # Merged, but not the head capdaemon attempted: someone else merged it. It is
            # not capdaemon's merge (no probe, no auto-revert, no auto-merge count).
            deps.actions_log.append(
                {
                    **base,
                    "status": "merged_by_other",
                    "merged_head": status.head_sha,
                    "merge_sha": status.merge_sha,
                },
                now=now,
            )
            outcome = {"state": PRState.MERGED, "merge_sha": status.merge_sha}
        elif op == "merge" and status.merged:
            deps.actions_log.append(
                {**base, "status": "done", "merge_sha": status.merge_sha}, now=now
            )
            outcome = {"state": PRState.MERGED, "merge_sha": status.merge_sha}
            if rec.pending.base_ref and status.merge_sha:  # on the approved base?
                approved, head = rec.pending.base_ref, rec.pending.head_sha
                deps.safety.basebind.verify_merge(
                    rec, approved, head, status.merge_sha, now, report
                )
        elif op == "close" and status.state == "closed":
            deps.actions_log.append({**base, "status": "done"}, now=now)
            outcome = {"state": PRState.MERGED if status.merged else PRState.CLOSED}
        else:
            deps.actions_log.append({**base, "status": "not_done"}, now=now)
            outcome = {}
        deps.log.info("reconcile.done", pr=rec.ref, op=op, merged=status.merged, state=status.state)
        report.reconciled.append(f"{rec.ref}:{op}")
        settle(deps, rec.ref, **outcome)


def outcome_recorded(t: Tick, rec: PRRecord, op: str) -> bool:
    """A crash after the outcome record but before the state save: the log already says
    it, once. Take the state from that record; write nothing more to the log."""
    deps = t.deps
    assert rec.pending is not None
    done = recorded_outcome(deps.actions_log.path, rec.ref, op, rec.pending.head_sha)
    if done is None:
        return False
    status = done.get("status")
    if op == "merge" and status in ("done", "merged_by_other"):
        merge_sha = str(done.get("merge_sha") or "")
        rec = deps.prs.change(rec, durable=False, state=PRState.MERGED, merge_sha=merge_sha)
        close_issue(t, rec, BALLOT, f"Merged (merge commit {merge_sha}).")
    elif op == "close" and status == "done":
        deps.prs.change(rec, durable=False, state=PRState.CLOSED)
    deps.log.info("reconcile.already_recorded", pr=rec.ref, op=op, status=status)
    t.report.reconciled.append(f"{rec.ref}:{op}")
    settle(deps, rec.ref)
    return True


# ------------------------------------------------------------------ step 4
def required_checks_for(
    deps: TickDeps, ctx: TickContext, rc: RepoConfig
) -> tuple[RequiredCheck, ...]:
    if rc.name not in ctx.required:
        protection = deps.forge.effective_protection(rc.name, rc.base) or {}
        ctx.required[rc.name] = required_checks(protection)
    return ctx.required[rc.name]


def step_merge(t: Tick) -> None:
    """Step 4: merge, at the head sha, each PR seen this tick whose readiness says so."""
    for s in t.ctx.seen:
        if not _may_merge(t, s):
            continue
        t.check_stop()
        with per_item(t.report, "merge.check_failed", s.rec.ref, pr=s.rec.ref):
            try_merge(t, s)
        t.deps.heartbeat()


def _may_merge(t: Tick, s: TickPR) -> bool:
    """Whether a PR seen this tick may merge now, on what the tick already knows (nothing is
    read): False when its readiness would certainly wait, or when it must (fail closed)."""
    deps, rec = t.deps, s.rec
    reason = certain_wait(t, s)
    if reason in _LOGGED_WAITS:
        deps.log.info("merge.waiting", pr=rec.ref, reasons=[reason])
    if reason is not None:
        return False
    return not (deps.shadow and rec.would_merge_head == s.pr.head_sha)  # recorded once a head


_LOGGED_WAITS = ("ballot unreadable", "repo policy does not parse")


def certain_wait(t: Tick, s: TickPR) -> str | None:
    """Why a PR seen this tick certainly waits, on what the tick already knows (nothing is
    read), or None when its readiness is worth deciding."""
    ctx, rec, pr = t.ctx, s.rec, s.pr
    if rec.state != "open":
        return f"the PR is {rec.state}"
    if rec.head_sha != pr.head_sha or not rec.fingerprint:
        return "not classified at this head yet"
    if rec.pending:
        return "an earlier action's outcome is unknown"  # reconciled first (step 0)
    if rec.ref in ctx.ballot_unread:
        return "ballot unreadable"  # fail closed: a newer owner /reject may be unread
    if not rec.check_success:
        return "its L1.C3 fails"
    if rec.merge_blocked_head == pr.head_sha:
        return "GitHub refused to merge this head"
    if ctx.policy_error(s.rc.name) is not None:
        return "repo policy does not parse"  # fail closed: the repo's policy is unknown
    blocking = {b.lower() for b in s.rc.blocking_labels}
    if pr.draft:
        return "draft"
    if any(label.lower() in blocking for label in pr.labels):
        return "a blocking label"
    return None


def rejudge(t: Tick, s: TickPR) -> tuple[bool, tuple[str, ...]]:
    """Whether a PR seen this tick would merge now, and why not: its readiness as step 4
    decides it, read and decided here without acting (the switch to enforce mode)."""
    reason = certain_wait(t, s)
    if reason is not None:
        return False, (reason,)
    tap = t.deps.safety.tiers.one_tap_result(s.rec, t.now)
    got = _readiness(t, s, tap)
    if got is None:
        return False, ("conflicts with the base",)
    return got[0].ok, got[0].reasons


def _readiness(t: Tick, s: TickPR, tap: OneTapResult | None) -> tuple[Readiness, MergeFacts] | None:
    """The PR's readiness and the facts it was decided on (None: it conflicts with the base,
    nothing read)."""
    deps, rec, pr = t.deps, s.rec, s.pr
    if pr.mergeable_known:  # this tick's batch: None means GitHub is still computing it
        rec = deps.prs.change(rec, durable=False, mergeable=pr.mergeable)
    if rec.mergeable is False:  # conflicts with the base: waits, nothing read
        deps.log.debug("merge.waiting", pr=rec.ref, reasons=["conflicts with the base"])
        return None
    rollup = deps.forge.rollup_checks(pr.repo, pr.head_sha)
    if rollup is not None:
        # this tick's batch rollup of the head plus the L1.C3 we wrote since: no per-PR
        # read; the merge call is bound to the head sha (a push in between: GitHub 409)
        return readiness_of(t, s, rollup, tap)
    return _rest_readiness(t, s, tap)


def try_merge(t: Tick, s: TickPR) -> None:
    """Merge one PR whose readiness says so (or record that it would, in shadow mode)."""
    deps, now, rec, pr = t.deps, t.now, s.rec, s.pr
    tap = deps.safety.tiers.one_tap_result(rec, now)  # one reading for the whole merge
    got = _readiness(t, s, tap)
    if got is None:
        return
    readiness, facts = got
    watch = readiness.action is MergeAction.WAIT and waits_only_on_checks(facts)
    if watch:  # the change detector looks for its checks completing between ticks
        key, value = (rec.repo, rec.number), (pr.head_sha, waiting_check_feed(facts))
        if deps.waiting_checks.get(key) != value:  # newest last: the detector reads those first
            deps.waiting_checks.pop(key, None)
            deps.waiting_checks[key] = value
    else:
        deps.waiting_checks.pop((rec.repo, rec.number), None)
    if readiness.action is MergeAction.WAIT:
        deps.log.debug("merge.waiting", pr=rec.ref, reasons=list(readiness.reasons))
        return
    if readiness.action is MergeAction.WOULD_MERGE:
        deps.actions_log.append(
            {
                "action": "merge",
                "status": "would_merge",
                "pr": rec.ref,
                "head_sha": pr.head_sha,
                "quadrant": rec.quadrant,
            },
            now=now,
        )
        deps.prs.change(s.rec, durable=False, would_merge_head=pr.head_sha)
        t.report.would_merge.append(rec.ref)
        deps.log.info("merge.would_merge", pr=rec.ref)
        return
    cause = merge_cause(pr.updated_at, _votes_at(s.rec, pr.head_sha, tap), facts.checks)
    merge(t, s, merged=lambda: t.ctx.reactions.note(MERGE_DONE, rec.ref, cause, now))


def _votes_at(rec: PRRecord, head_sha: str, tap: OneTapResult | None) -> list[datetime | None]:
    """When the owners' approvals of this head were given (ballot, one-tap), where known."""
    ballot = rec.ballot
    mine = ballot is not None and ballot.head_sha == head_sha
    out = [time_or_none(ballot.voted_at)] if ballot is not None and mine else []
    if tap is not None and tap.at is not None:
        out.append(tap.at)
    return out


def _rest_readiness(t: Tick, s: TickPR, tap: OneTapResult | None) -> tuple[Readiness, MergeFacts]:
    """Readiness from REST reads (no batch rollup of the head): the gather phase's check
    runs plus the statuses, read again right before a merge; and the facts it was decided on."""
    deps, pr = t.deps, s.pr
    runs = t.ctx.tick_runs.get((pr.repo, pr.head_sha))
    if runs is None:
        checks = deps.forge.commit_checks(pr.repo, pr.head_sha)
    else:  # the gather phase's check runs, plus the statuses (read for merging only)
        checks = runs + deps.forge.commit_statuses(pr.repo, pr.head_sha)
    readiness, facts = readiness_of(t, s, checks, tap)
    if readiness.action is MergeAction.MERGE and runs is not None:
        # decided on the gather phase's check runs: read them again right before acting
        checks = deps.forge.commit_checks(pr.repo, pr.head_sha)
        readiness, facts = readiness_of(t, s, checks, tap)
    return readiness, facts


def readiness_of(
    t: Tick, s: TickPR, checks: Sequence[CheckRun], tap: OneTapResult | None
) -> tuple[Readiness, MergeFacts]:
    """Merge readiness on `checks`, and the facts it was decided on. A PR ready but for a
    mergeability GitHub had not computed yet (None) reads the PR again for it in enforce
    mode, at once and after the waits of capdaemon.daemon.merging.mergewait, in this tick;
    still unknown (or another head) it waits: None is never mergeable. In shadow mode it
    waits for the next tick's page (a `would_merge` record a tick later costs no read)."""
    deps = t.deps
    facts = merge_facts(t, s, checks, tap)
    ready = facts.mergeable is None and not deps.shadow
    if ready and merge_readiness(replace(facts, mergeable=True)).ok:
        status = t.ctx.merge_waits.settle(deps.forge, s.pr.repo, s.pr.number, s.pr.head_sha)
        if status.head_sha == s.pr.head_sha:
            deps.prs.change(s.rec, durable=False, mergeable=status.mergeable)
            facts = replace(facts, mergeable=status.mergeable)
    return merge_readiness(facts), facts


def merge_facts(
    t: Tick, s: TickPR, checks: Sequence[CheckRun], tap: OneTapResult | None
) -> MergeFacts:
    """What merge readiness is decided on for one PR, on `checks` and the one-tap reading."""
    deps, rec, pr, rc = t.deps, s.rec, s.pr, s.rc
    needs = deps.safety.tiers.needs_ballot(rec, s.quadrant)
    ballot = ballot_outcome(rec, pr.head_sha, t.now) if needs else None
    return MergeFacts(
        head_sha=pr.head_sha,
        quadrant=s.quadrant,
        tier=deps.safety.tiers.decision(rec),
        checks=tuple(checks),
        required_checks=required_checks_for(deps, t.ctx, rc),
        extra_checks=rc.extra_checks,
        draft=pr.draft,
        labels=pr.labels,
        blocking_labels=rc.blocking_labels,
        mergeable=rec.mergeable,
        breaker=deps.safety.breaker.state(),
        verified_auto_revert=rec.auto_revert,
        capability_reasons=tuple(rec.blocking),
        ballot=ballot,
        one_tap=tap,
        shadow=deps.shadow,
        l1c3_app_id=deps.config.github.app_id,
    )


def merge(t: Tick, s: TickPR, merged: Callable[[], object] | None = None) -> None:
    """Merge at the expected head sha, recorded before the call (Intent): a refusal is
    recorded and handled here; no answer keeps the intent for step 0 of the next tick.
    `merged` is called as soon as GitHub has merged it (the reaction time's action)."""
    deps, now, report, rec, pr, rc = t.deps, t.now, t.report, s.rec, s.pr, s.rc
    sha, ref, prs = pr.head_sha, rec.ref, deps.prs
    intent = pr_intent(t, rec, "merge", sha, base_ref=rc.base)  # changes the store's record
    deps.log.info("merge.attempted", pr=ref, head=sha[:12], method=rc.merge_method)
    try:
        merge_sha = intent.attempt(
            lambda: deps.forge.merge(rec.repo, rec.number, sha, rc.merge_method, base=rc.base),
            method=rc.merge_method,
            quadrant=rec.quadrant,
        )
    except BaseMoved as exc:  # retargeted since the decision: no merge; a new round
        deps.log.warning("merge.base_moved", pr=ref, to=exc.found)
        deps.safety.basebind.note_left(prs.records[ref], exc.found, now)
    except HeadMoved:
        deps.log.warning("merge.head_moved", pr=ref, head=sha[:12])
        prs.change(prs.records[ref], durable=False, fingerprint="")  # reclassified next tick
    except NotMergeable as exc:
        deps.log.warning("merge.failed", pr=ref, error=str(exc)[:200])
        prs.change(prs.records[ref], durable=False, merge_blocked_head=sha)
    except ForgeError as exc:
        # refused (Forbidden, NotFound, Invalid: the intent is dropped) or no answer (5xx
        # after retries, a dropped connection: GitHub may have merged, so the intent stays
        # for step 0 of the next tick)
        unknown = prs.records[ref].pending is not None
        deps.log.warning("merge.failed", pr=ref, error=str(exc)[:200], unknown=unknown)
        return
    else:
        if merged is not None:
            merged()
        intent.done(merge_sha=merge_sha)
        prs.change(prs.records[ref], durable=False, state=PRState.MERGED, merge_sha=merge_sha)
        report.merged.append(ref)
        deps.log.info("merge.done", pr=ref, merge_sha=merge_sha[:12])
        deps.safety.basebind.verify_merge(rec, rc.base, sha, merge_sha, now, report)
    intent.settle()
    rec = prs.records[ref]
    if rec.state == "merged":
        close_issue(t, rec, BALLOT, f"Merged at head {sha} (merge commit {merge_sha}).")

"""Step 2 of a tick: classify one PR, record the verdict, publish L1.C3 and its decision issues."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from capdaemon.classify.engine import classify
from capdaemon.daemon.ballots.ballot_issue import ensure_ballot, reopened_round
from capdaemon.daemon.core.context import Tick, TickDeps
from capdaemon.daemon.core.reactions import CHECK_PUBLISHED
from capdaemon.daemon.core.tickdata import (
    BALLOT,
    REVIEW,
    SCOPE,
    _digest,
    _iso,
    auto_revert_floor,
    firm_d,
    without_stale_auto_revert,
)
from capdaemon.daemon.issues import texts
from capdaemon.daemon.issues.ensure import WantedIssue, close_issue, ensure_issue
from capdaemon.daemon.polling.gather import plan, unchanged
from capdaemon.daemon.polling.prstate import (
    ballot_outcome,
    full_fingerprint,
    light_fingerprint,
)
from capdaemon.daemon.polling.tasks import (
    CapabilityVerdict,
    bind_policy,
    capability_state,
    evaluate,
    linked_tasks,
)
from capdaemon.daemon.polling.tickpr import TickPR
from capdaemon.daemon.safety import recovery
from capdaemon.decide.checks import (
    CheckFacts,
    passive_issue_body,
    render_check,
)
from capdaemon.decide.labels import Label
from capdaemon.decide.tiers import Requirement
from capdaemon.model import PRSnapshot, Quadrant, RuleResult, Verdict
from capdaemon.stores.botstate import PRRecord
from capdaemon.stores.prrecord import PRState
from capdaemon.timefmt import parse_utc


def process_pr(t: Tick, item: TickPR) -> TickPR:
    """Reclassify and republish one known PR when its inputs (or its ballot state) changed.

    `item` is planned (gather.plan) and usually gathered; what the gather phase did not read
    is read here (a ballot decision republishing the PR in step 3 reads everything here).
    """
    deps, pr, now = t.deps, item.pr, t.now
    if item.error is not None:
        raise item.error
    item.verdict = item.capv = None  # classified again below, or unchanged
    rec = item.record = deps.prs.setdefault(pr.repo, pr.number, _iso(now))
    if rec.state != "open":  # reopened
        rnd = reopened_round(rec)
        rec = deps.prs.change(rec, durable=False, state=PRState.OPEN, ballot_round=rnd)
    if rec.head_ref != pr.head_ref:  # display only (the dashboard); upgrades older records
        rec = deps.prs.change(rec, durable=bool(rec.audited), head_ref=pr.head_ref)
    if item.settled is not None:
        deps.log.debug("pr.settled", pr=pr.ref, why=item.settled)
        # nothing changed that could matter: no read, no classification, no write
        return _done(item)
    checks = item.checks
    if checks is None:
        checks = item.checks = deps.forge.check_runs(pr.repo, pr.head_sha)
    t.ctx.tick_runs[(pr.repo, pr.head_sha)] = checks
    if unchanged(t, rec, item, checks):
        if rec.light != item.light:  # e.g. draft toggled: not a classification input
            deps.prs.change(rec, light=item.light)
        return _done(item)  # unchanged: no snapshot, no classification, no write
    if not _classified(t, item):
        return _done(item)  # the list is stale; the next tick sees the new head or base
    snap, rec = item.snap, item.rec
    if rec.head_sha and rec.head_sha != snap.head_sha:
        head_moved(t, rec, snap.head_sha)
    return _record_and_publish(t, item)


def _done(item: TickPR) -> TickPR:
    item.done()
    return item


def prepare_new(t: Tick, item: TickPR) -> TickPR | None:
    """Classify a PR never published before, recording and writing nothing: the tick publishes
    it later (publish_new) when its writes fit the budget. None: the list entry is stale.

    Its record is built aside (not in prs.json) and the classification is not audited yet:
    a PR left waiting is classified again, from free re-reads, in the tick that publishes it.
    """
    if item.error is not None:
        raise item.error
    pr = item.pr
    item.record = PRRecord(pr.repo, pr.number, first_seen=_iso(t.now), head_ref=pr.head_ref)
    if item.checks is None:
        item.checks = t.deps.forge.check_runs(pr.repo, pr.head_sha)
    return item if _classified(t, item) else None


def publish_new(t: Tick, item: TickPR) -> TickPR:
    """Record, audit and publish a PR prepared by prepare_new (its record joins prs.json)."""
    deps, pr = t.deps, item.pr
    if pr.ref in deps.prs.records:  # known meanwhile: handled as any known PR
        return process_pr(t, plan(t, item))  # on the checks and snapshot read already
    deps.prs.put(item.rec, durable=False)  # saved with its classification below
    assert item.checks is not None
    t.ctx.tick_runs[(pr.repo, pr.head_sha)] = item.checks
    return _record_and_publish(t, item)


def _classified(t: Tick, item: TickPR) -> bool:
    """Classify one head against its task's capability (nothing recorded or written): its
    snapshot (read now when the gather phase did not), verdict and capability verdict on
    the item. False when the head or base moved since the list was read."""
    deps, ctx, pr, now = t.deps, t.ctx, item.pr, t.now
    snap = item.snapshot
    if snap is None:
        snap = item.snapshot = deps.forge.snapshot(
            pr.repo,
            pr.number,
            contents_for=deps.contents_for,
            known_runs=(pr.head_sha, item.checks or ()),
        )
    if snap.head_sha != pr.head_sha or snap.base_ref != pr.base_ref:
        deps.log.info("pr.moved_during_gather", pr=pr.ref)
        return False
    rc = item.rc
    item.capv = _capability(t, item)
    item.cap = capability_state(item.capv.task_id, ctx.load_cap, now)
    item.verdict = classify(
        label_floor(deps, item, snap),
        ctx.config_for(rc.name),  # central config + the repo's .capdaemon.yml, parsed once
        now=now,
        policy_error=ctx.policy_error(rc.name),
        user_rules=deps.rules,
        agent_severity=deps.safety.burn_in.agent_severities(),
    )
    return True


def _record_and_publish(t: Tick, item: TickPR) -> TickPR:
    """Record the verdict (the audit entry is fsynced before anything is written), then
    publish L1.C3 and the decision issues."""
    deps, now, report = t.deps, t.now, t.report
    rec, snap, verdict, capv = item.rec, item.snap, item.verdict, item.capv
    assert verdict is not None and capv is not None and item.checks is not None
    fp = full_fingerprint(item.pr, item.checks, item.policy_hash, item.cap)
    new_head = rec.head_sha != snap.head_sha  # a PR opened or pushed: its first L1.C3
    rec = deps.prs.change(rec, durable=False, **_noted_verdict(snap, verdict, capv, now))
    deps.safety.tiers.on_classified(rec, snap, now, t.reads)
    if rec.audited != fp:
        audit_classification(t, rec, snap, verdict, capv, fp)
        report.classified.append(rec.ref)
    publish(t, item)
    if new_head:  # measured from the PR's last change as listed (at or after the push)
        t.ctx.reactions.note(CHECK_PUBLISHED, rec.ref, item.pr.updated_at, now)
    rec = item.rec  # as the publication left it
    deps.prs.change(
        rec,
        fingerprint=fp,
        light=light_fingerprint(item.pr, item.policy_hash, item.cap),
        published=_digest(fp, rec.ballot_status(snap.head_sha).value),
    )
    return _done(item)


def _capability(t: Tick, item: TickPR) -> CapabilityVerdict:
    """The head against its task's capability (the bot's own verified revert needs none)."""
    deps, ctx, now, rc, snap = t.deps, t.ctx, t.now, item.rc, item.snap
    tasks = linked_tasks(snap, rc.task_branch_pattern)
    reverts = (
        recovery.bot_revert_of(deps.safety.probes, deps.bot_login, snap)
        if rc.require_capability
        else None
    )
    if reverts and not tasks:  # the bot's own verified revert: recovery needs no task
        return recovery.revert_capability(reverts)
    capv = evaluate(snap, tasks, ctx.load_cap, require=rc.require_capability, now=now)
    if capv.merge_policy is not None:
        return capv
    # No usable linked task (none, unknown, unreadable or several): leaving the trailer out
    # must not escape the policy of the author's or branch's active tasks (SPEC 4.1).
    caps, store_error = ctx.all_caps()
    if ctx.tasks_by_author is None:  # once per tick: the tasks each author's PRs linked
        ctx.tasks_by_author = {}
        for r in deps.prs.records.values():
            if r.task_id and r.author:
                ctx.tasks_by_author.setdefault(r.author.lower(), set()).add(r.task_id)
    own = ctx.tasks_by_author.get((snap.author or "").lower(), set()) if snap.author else set()
    bound = bind_policy(snap, caps, store_error, [*own, *tasks], ctx.load_cap, now)
    return replace(capv, merge_policy=bound.policy, policy_reason=bound.reason)


def _noted_verdict(
    snap: PRSnapshot, verdict: Verdict, capv: CapabilityVerdict, now: datetime
) -> dict[str, Any]:
    """What later ticks need of this head's verdict, kept on its record (prs.json)."""
    return {
        "head_sha": snap.head_sha,
        "author": snap.author,
        "title": snap.title,
        "task_id": capv.task_id,
        "merge_policy": capv.merge_policy,
        "policy_reason": capv.policy_reason,
        "quadrant": verdict.quadrant,
        "mergeable": snap.mergeable,
        "firm_d": firm_d(verdict),
        "auto_revert": any(
            o.rule == "auto_revert_marker" and o.result is RuleResult.VOTE for o in verdict.rules
        ),
        "blocking": (*(f.message for f in verdict.blocking), *capv.blocking),
        "merge_blocked_head": "",
        "updated_at": _iso(now),
    }


def label_floor(deps: TickDeps, item: TickPR, snap: PRSnapshot) -> PRSnapshot:
    """The snapshot the classifier sees: `decision:auto-revert` labels applied before this
    head was first seen no longer count (R2; clock-free: the committer date is the
    pusher's to set). The bot's own revert PR at exactly the revert commit is exempt."""
    rec = item.rec
    if rec.auto_revert_head != snap.head_sha:
        at = auto_revert_floor(snap.label_events)
        floor = at.isoformat() if at else ""
        # in memory (a new PR's record stays aside): saved with the classification
        rec = item.record = deps.prs.change(
            rec, durable=False, auto_revert_head=snap.head_sha, auto_revert_floor=floor
        )
    if not rec.auto_revert_floor:
        return snap
    if snap.head_sha and snap.head_sha == deps.safety.probes.bot_revert_head(rec.repo, rec.number):
        return snap
    return without_stale_auto_revert(snap, parse_utc(rec.auto_revert_floor, "auto_revert_floor"))


def audit_classification(
    t: Tick, rec: PRRecord, snap: PRSnapshot, verdict: Verdict, capv: CapabilityVerdict, fp: str
) -> None:
    """The classification of this head in the classifier log (a scope violation in the actions
    log too), counted once per head in the metrics."""
    deps, now = t.deps, t.now
    entry = {
        "pr": rec.ref,
        "head_sha": snap.head_sha,
        "base_ref": snap.base_ref,
        "base_sha": snap.base_sha,
        **verdict.to_dict(),
        "capability": capv.to_dict(),
        "blocking": list(rec.blocking),
        "fingerprint": fp,
        # the central config and user rules decided with (`config.changed` names each hash)
        "config_hash": deps.policy_hash,
    }
    if rec.auto_revert_floor:
        entry["auto_revert_floor"] = rec.auto_revert_floor
    deps.classifier_log.append(entry, now=now)
    if capv.violations and capv.enforced:
        deps.actions_log.append(
            {
                "action": "scope_violation",
                "pr": rec.ref,
                "head_sha": snap.head_sha,
                "task_id": capv.task_id,
                "violations": [v.to_dict() for v in capv.violations],
            },
            now=now,
        )
        deps.log.warning(
            "scope.violation", pr=rec.ref, task=capv.task_id, count=len(capv.violations)
        )
    counted = rec.counted_head
    if counted != snap.head_sha:
        deps.metrics.count_quadrant(verdict.quadrant.value)
        counted = snap.head_sha
    rec = deps.prs.change(rec, durable=False, counted_head=counted, audited=fp)
    deps.log.info(
        "pr.classified",
        pr=rec.ref,
        head=snap.head_sha[:12],
        quadrant=verdict.quadrant.value,
        task=capv.task_id,
        blocking=len(rec.blocking),
    )


def head_moved(t: Tick, rec: PRRecord, new_head: str) -> None:
    """A push: an approval for the old head is void; a ballot round rebinds when still D."""
    deps, now = t.deps, t.now
    if rec.ballot_approves(rec.head_sha):
        deps.actions_log.append(
            {
                "action": "approval_voided",
                "pr": rec.ref,
                "head_sha": rec.head_sha,
                "new_head_sha": new_head,
            },
            now=now,
        )
        deps.log.info("ballot.voided", pr=rec.ref, old=rec.head_sha[:12], new=new_head[:12])
    deps.prs.change(rec, durable=False, would_merge_head="")


def publish(t: Tick, item: TickPR) -> None:
    """Write the decision issues, then L1.C3 (which links to the ballot), for the head the
    item was classified on this tick."""
    deps, now, rec, snap, verdict, capv = (
        t.deps,
        t.now,
        item.rec,
        item.snap,
        item.verdict,
        item.capv,
    )
    assert verdict is not None and capv is not None  # classified this tick
    is_d = deps.safety.tiers.needs_ballot(rec, verdict.quadrant)
    ballot_issue = None
    if is_d:  # the ballot first, so the check can link to it
        ballot_issue = ensure_ballot(t, item)
    else:
        note = f"No ballot needed any more: head {snap.head_sha} is quadrant {verdict.quadrant}."
        close_issue(t, rec, BALLOT, note)
    rec = item.rec  # as the ballot left it
    outcome = ballot_outcome(rec, snap.head_sha, now) if is_d else None
    deps.safety.tiers.gate(rec, snap, now, t.report)
    check = render_check(
        verdict,
        CheckFacts(
            head_sha=snap.head_sha,
            tier=deps.safety.tiers.decision(rec),
            ballot=outcome,
            ballot_url=deps.issue_url(ballot_issue),
            one_tap=deps.safety.tiers.one_tap_result(rec, now),
            blocking=tuple(capv.blocking),
            shadow=deps.shadow,
        ),
    )
    automatic = not is_d and deps.safety.tiers.decision(rec).requirement is Requirement.NONE
    if verdict.quadrant in (Quadrant.B, Quadrant.C) and not rec.blocking and automatic:
        # a passive review of what capdaemon approves by itself: never of a blocked PR, nor
        # of one waiting for an owner (a ballot or a one-tap: the owner's answer decides)
        _passive_review(t, item)
    if capv.blocking:
        _scope_issue(t, item)
    deps.forge.publish_check(
        rec.repo,
        snap.head_sha,
        success=check.success,
        title=check.title,
        summary=check.summary,
        marker={"kind": "l1c3", "pr": rec.ref, "head": snap.head_sha},
        known_runs=t.ctx.tick_runs.get((rec.repo, snap.head_sha)),  # read this tick: no re-read
    )
    t.ctx.tick_runs.pop((rec.repo, snap.head_sha), None)  # our L1.C3 changed: read again
    deps.prs.change(item.rec, durable=False, check_success=check.success)
    deps.log.info("check.published", pr=rec.ref, head=snap.head_sha[:12], success=check.success)


def _passive_review(t: Tick, item: TickPR) -> None:
    """Open (or keep) the passive review issue of a B or C head capdaemon merges by itself."""
    deps, rec, snap, verdict = t.deps, item.rec, item.snap, item.verdict
    assert verdict is not None  # classified this tick
    label = (
        Label.AUTO_APPROVED_CRITICAL_REVERSIBLE
        if verdict.quadrant is Quadrant.B
        else Label.AUTO_APPROVED_IRREVERSIBLE_NON_CRITICAL
    )
    days = deps.config.passive_review_days
    want = WantedIssue(
        REVIEW,
        {"kind": REVIEW, "pr": rec.ref, "quadrant": verdict.quadrant.value},
        texts.review_title(
            verdict.quadrant.value, rec.repo, rec.number, snap.title, shadow=deps.shadow
        ),
        passive_issue_body(
            verdict.quadrant, rec.ref, "", snap.title, verdict, days=days, shadow=deps.shadow
        ),
        (label.value,),
    )
    ensure_issue(t, rec, want)


def _scope_issue(t: Tick, item: TickPR) -> None:
    """Open (or keep) the issue that says why this head is outside its task's scope."""
    rec, snap, capv = item.rec, item.snap, item.capv
    assert capv is not None  # classified this tick
    body = texts.scope_body(
        pr_ref=rec.ref, task=capv.task_id, head_sha=snap.head_sha, problems=capv.blocking
    )
    want = WantedIssue(
        SCOPE,
        {"kind": SCOPE, "pr": rec.ref, "head": snap.head_sha},
        texts.scope_title(rec.repo, rec.number),
        body,
        (Label.SCOPE_VIOLATION.value,),
    )
    ensure_issue(t, rec, want)

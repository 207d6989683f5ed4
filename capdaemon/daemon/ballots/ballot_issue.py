"""A PR's ballot issue: open it, or start a new round in it (head, base, reopen, restore)."""

from __future__ import annotations

from dataclasses import replace

from capdaemon.daemon.core.context import Tick
from capdaemon.daemon.core.tickdata import BALLOT
from capdaemon.daemon.issues import texts
from capdaemon.daemon.issues.ensure import WantedIssue, ensure_issue
from capdaemon.daemon.polling.tickpr import TickPR
from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.checks import ballot_issue_body
from capdaemon.decide.labels import Label
from capdaemon.decide.rounds import BallotRound, RoundReason, next_round
from capdaemon.model import PRSnapshot
from capdaemon.stores.botstate import PRRecord
from capdaemon.stores.prrecord import BallotRecord


def ensure_ballot(t: Tick, item: TickPR) -> int | None:
    """Open the ballot (round 1) or start a new round in the same issue (capdaemon.decide.
    rounds.next_round): when the head or the base changed, when the PR was reopened after a
    rejection capdaemon acted on, or when someone else edited the ballot's text (restored: R5).

    A new round ignores every comment and reaction already on the issue when it starts
    (their ids, read after the new-round comment: clock-free, R3), as well as anything
    stamped before the round's start.
    """
    now, rec, snap, verdict = t.now, item.rec, item.snap, item.verdict
    assert verdict is not None  # classified this tick
    prior = rec.ballot_round
    # GitHub stamps comments and reactions in whole seconds: a vote in the same second as the
    # round's start belongs to it (votes already on the issue are excluded by id)
    start = now.replace(microsecond=0)
    rnd, why = next_round(
        prior,
        repo=rec.repo,
        pr=rec.number,
        head_sha=snap.head_sha,
        base_ref=snap.base_ref,
        now=start,
        issue_restored=bool(t.ctx.tampered.get(rec.ref, {}).get(BALLOT)),
    )
    new_round = prior is not None and why is not None
    voided = _void_approval(t, rec, snap, prior, why) if new_round else None
    if new_round or prior is None:
        pending = BallotRecord(BallotStatus.PENDING, snap.head_sha, rnd.round)
        rec = t.deps.prs.change(rec, durable=False, ballot=pending)
    labels = [Label.PENDING_OWNER.value]
    if rec.ballot_status(snap.head_sha) is BallotStatus.DEFERRED:
        labels.append(Label.DEFERRED.value)
    want = WantedIssue(
        BALLOT,
        {"kind": BALLOT, "pr": rec.ref, "head": snap.head_sha, "round": rnd.round},
        texts.ballot_title(rec.repo, rec.number, snap.title),
        ballot_issue_body(rec.ref, "", snap.title, snap.head_sha, rnd.round, verdict),
        tuple(labels),
        round_no=rnd.round if why is RoundReason.ISSUE_RESTORED else None,
    )
    number = ensure_issue(t, rec, want)
    if number is None:
        return None
    if prior is not None and why is not None:
        rnd = _start_round(t, rec, snap, prior, rnd, why, voided, number)
    t.deps.prs.change(item.rec, durable=False, ballot_round=replace(rnd, issue=number))
    return number


def _void_approval(
    t: Tick, rec: PRRecord, snap: PRSnapshot, prior: BallotRound | None, why: RoundReason | None
) -> str | None:
    """The head whose approval a new round voids (None: nothing approved was voided)."""
    if prior is None or not rec.ballot_approves(prior.head_sha):
        return None
    if why is not RoundReason.HEAD_CHANGED:  # a push is audited as it is seen
        t.deps.actions_log.append(
            {
                "action": "approval_voided",
                "pr": rec.ref,
                "head_sha": prior.head_sha,
                "new_head_sha": snap.head_sha,
                "reason": texts.round_reason(why, prior.base_ref, snap.base_ref),
            },
            now=t.now,
        )
    return prior.head_sha


def _start_round(
    t: Tick,
    rec: PRRecord,
    snap: PRSnapshot,
    prior: BallotRound,
    rnd: BallotRound,
    why: RoundReason,
    voided: str | None,
    number: int,
) -> BallotRound:
    """Say on the issue why a new round starts; every vote already on it is stale."""
    deps = t.deps
    assert deps.decision_repo is not None
    marker = {"kind": "round", "key": f"{rec.ref}:round:{rnd.round}"}
    if why is RoundReason.HEAD_CHANGED:
        text = texts.new_round_comment(prior.head_sha, snap.head_sha, rnd.round, voided)
        deps.forge.comment_once(deps.decision_repo, number, marker, text)
    elif why is not RoundReason.ISSUE_RESTORED:
        reason = texts.round_reason(why, prior.base_ref, snap.base_ref)
        text = texts.rebound_round_comment(reason, snap.head_sha, snap.base_ref, rnd.round, voided)
        deps.forge.comment_once(deps.decision_repo, number, marker, text)
    # every vote already on the issue belongs to an earlier round, whatever its time
    stale = [f"comment:{c.id}" for c in deps.forge.comments(deps.decision_repo, number)]
    stale += [f"reaction:{r.id}" for r in deps.forge.reactions(deps.decision_repo, number)]
    rnd = rnd.with_stale_votes(stale)
    deps.actions_log.append(
        {
            "action": "ballot_round",
            "pr": rec.ref,
            "head_sha": snap.head_sha,
            "round": rnd.round,
            "issue": number,
            "reason": why.value,
            "stale_votes": len(rnd.stale_vote_ids),
        },
        now=t.now,
    )
    return rnd


def reopened_round(rec: PRRecord) -> BallotRound | None:
    """The PR was closed and is open again: its ballot round as it stands now (a rejected
    round ends: a new one starts)."""
    return rec.ballot_round.seen_reopened() if rec.ballot_round else rec.ballot_round

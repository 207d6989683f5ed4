"""Step 3 of a tick: ballot rounds, owners' votes and their outcomes (approve, defer, reject)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

from capdaemon.daemon.core.context import Tick, TickDeps
from capdaemon.daemon.core.failure import per_item, report_error
from capdaemon.daemon.core.reactions import BALLOT_COUNTED
from capdaemon.daemon.core.tickdata import (
    BALLOT,
    BALLOT_REREAD,
    _BallotReads,
    _digest,
    _iso,
)
from capdaemon.daemon.issues import texts
from capdaemon.daemon.issues.ensure import close_issue, decision_owners, issue_activity
from capdaemon.daemon.merging.reconcile import pr_intent
from capdaemon.daemon.polling.gather import concurrently, plan
from capdaemon.daemon.polling.poll import read_repo_policy
from capdaemon.daemon.polling.prstate import ballot_outcome
from capdaemon.daemon.polling.publish import process_pr
from capdaemon.daemon.polling.tickpr import TickPR
from capdaemon.decide.ballot import BallotOutcome, BallotStatus, Vote, resolve_ballot
from capdaemon.decide.checks import reject_comment, rejected_check
from capdaemon.decide.rounds import BallotRound
from capdaemon.forge.errors import ForgeError
from capdaemon.forge.types import IssueActivity
from capdaemon.stores.botstate import PRRecord
from capdaemon.stores.prrecord import BallotRecord, BallotSeen, PRState
from capdaemon.timefmt import parse_utc


# ------------------------------------------------------------------ step 3
def step_ballots(t: Tick) -> None:
    """Count the owners' votes on the ballots and the one-tap requests of the PRs seen; a
    decision republishes the PR at once, so step 4 of this tick can merge it."""
    deps, ctx, now, report = t.deps, t.ctx, t.now, t.report
    todo = _open_rounds(t)
    fps: dict[str, str | None] = {}
    wanted: dict[str, int] = {}
    if todo:
        activity = issue_activity(deps, ctx, report)
        for s in todo:
            rec = s.rec
            number = _issue_of(rec)
            fps[rec.ref] = fp = ballot_fp(t, rec, activity.get(number))
            if not ballot_quiet(rec, fp, s.pr.head_sha, now):
                wanted[rec.ref] = number
    reads = read_ballots(t, wanted)
    for s in todo:
        rec = s.rec
        if rec.ref not in wanted:  # nobody commented or reacted since the last full read
            report.ballots[rec.ref] = rec.ballot_status(s.pr.head_sha).value
            continue
        deps.check_stop()
        status: str | None = None
        with per_item(report, "ballot.failed", rec.ref, pr=rec.ref) as item:
            status = count_votes(t, s, reads[rec.ref])
        if item.failed:
            ctx.ballot_unread.add(rec.ref)  # no merge on an approval we could not re-read
        fp, rec = fps.get(rec.ref), s.rec  # as the count left it
        seen = None  # unread, or the outcome is not applied yet: read in full next tick
        if status is not None and fp and status == rec.ballot_status(s.pr.head_sha):
            seen = BallotSeen(fp, _iso(now))
        deps.prs.change(rec, ballot_seen=seen)
        deps.heartbeat()
    _one_taps(t)


def _open_rounds(t: Tick) -> list[TickPR]:
    """The PRs whose ballot round is open on the head seen (a rejected round whose close did
    not happen is retried here)."""
    todo: list[TickPR] = []
    for s in t.ctx.seen:
        rec = s.rec
        needs = t.deps.safety.tiers.needs_ballot(rec, s.quadrant)
        if not needs or not rec.ballot_round or rec.state != PRState.OPEN:
            continue
        if rec.ballot_round.rejected_at:  # over; reopened: a new round in step 2
            if not rec.ballot_round.reopened:
                retry_rejection(t, s)
            continue
        if rec.ballot_round.head_sha != s.pr.head_sha or rec.head_sha != s.pr.head_sha:
            continue  # not rebound yet (the snapshot failed this tick)
        todo.append(s)
    return todo


def _one_taps(t: Tick) -> None:
    """Read the pending one-tap requests; one decided now gets its new check at once."""
    deps, ctx, seen, now, report = t.deps, t.ctx, t.ctx.seen, t.now, t.report
    decided = set(deps.safety.tiers.poll(seen, now, t.reads, report))
    for s in seen:
        if s.rec.ref not in decided or s.rec.state != PRState.OPEN:
            continue
        tap = deps.safety.tiers.one_tap_result(s.rec, now)
        ctx.reactions.note(BALLOT_COUNTED, s.rec.ref, tap.at if tap else None, now)
        deps.check_stop()
        # a failure leaves its fingerprint cleared: the next tick does it
        with per_item(report, "one_tap.republish_failed", s.rec.ref, pr=s.rec.ref):
            republish(t, s)


def _issue_of(rec: PRRecord) -> int:
    """The ballot issue of the PR's round (a round is recorded with its issue)."""
    assert rec.ballot_round is not None and rec.ballot_round.issue is not None
    return rec.ballot_round.issue


def ballot_fp(t: Tick, rec: PRRecord, act: IssueActivity | None) -> str | None:
    """What the issue list says about a ballot, bound to its round (None: unknown → read).

    Comments count and updated_at show new (and deleted) comments; the reaction rollup
    shows new and removed reactions. An edit of an existing comment may show in neither,
    and need not: an edited command never counts (SPEC 3), so an edit can only withdraw a
    vote, and the statuses whose reads are skipped (pending, deferred) have no vote a
    withdrawal could turn into a merge — an approved ballot is always read in full.
    The policy hash binds it to the owners and rules in force.
    """
    if act is None or act.reactions is None or act.state != "open" or not rec.ballot_round:
        return None
    rnd = rec.ballot_round
    return _digest(
        act.number,
        act.comments,
        _iso(act.updated_at) if act.updated_at else "",
        [list(pair) for pair in act.reactions],
        rnd.round,
        rnd.head_sha,
        _iso(rnd.started_at),
        sorted(rnd.stale_vote_ids),
        _policy_hash(t, rec.repo),
        rec.author,
    )


def ballot_quiet(rec: PRRecord, fp: str | None, head_sha: str, now: datetime) -> bool:
    """True when a ballot needs no read: same activity as at the last full read, less than
    BALLOT_REREAD ago, and not approved (an approval is re-read every tick until merged)."""
    seen = rec.ballot_seen
    if not fp or seen is None or seen.fp != fp or rec.ballot_approves(head_sha):
        return False
    return now - parse_utc(seen.at, "ballot_seen.at") < BALLOT_REREAD


def read_ballots(t: Tick, wanted: Mapping[str, int]) -> dict[str, _BallotReads]:
    """Gather phase of step 3: comments and reactions of the ballots to read, concurrently."""
    deps = t.deps
    repo = deps.decision_repo
    calls: dict[tuple[str, str], Callable[[], Any]] = {}
    if repo is not None:
        for ref, number in wanted.items():
            calls[(ref, "c")] = partial(deps.forge.comments, repo, number)
            calls[(ref, "r")] = partial(deps.forge.reactions, repo, number)
    got = concurrently(t, calls)
    out: dict[str, _BallotReads] = {}
    for ref in wanted:
        reads = out[ref] = _BallotReads()
        for kind in ("c", "r"):
            result = got.get((ref, kind))
            if isinstance(result, BaseException):
                reads.error = reads.error or result
            elif kind == "c":
                reads.comments = result
            else:
                reads.reactions = result
    return out


def count_votes(t: Tick, s: TickPR, reads: _BallotReads | None = None) -> str:
    """Count the owners' votes and apply a changed outcome; returns the resolved status."""
    deps, ctx, now, report = t.deps, t.ctx, t.now, t.report
    rec = s.rec
    assert rec.ballot_round is not None and deps.decision_repo is not None
    issue, rnd = _issue_of(rec), rec.ballot_round
    if reads is not None and reads.error is not None:
        raise reads.error
    comments = reads.comments if reads is not None else None
    reactions = reads.reactions if reads is not None else None
    if comments is None:
        comments = deps.forge.comments(deps.decision_repo, issue)
    if reactions is None:
        reactions = deps.forge.reactions(deps.decision_repo, issue)
    answered = {int(k.split(":", 1)[1]) for k in rec.handled if k.startswith("reply:")}
    facts = rnd.facts(
        owners=decision_owners(
            deps, ctx, rec.repo, [c.user for c in comments] + [r.user for r in reactions]
        ),
        pr_author=rec.author,
        bot_login=deps.bot_login,
        comments=comments,
        reactions=reactions,
        answered_comment_ids=answered,
    )
    outcome = resolve_ballot(facts, now)
    for vote in _audit_votes(t, rec, issue, rnd, outcome):
        ctx.reactions.note(BALLOT_COUNTED, rec.ref, vote.at, now)
    _answer_unknown_commands(t, s.rec, issue, outcome)
    report.ballots[rec.ref] = outcome.status.value
    previous = s.rec.ballot_status(s.pr.head_sha).value
    if outcome.status.value != previous:
        apply_ballot(t, s, issue, rnd, outcome, previous)
    return outcome.status.value


def _audit_votes(
    t: Tick, rec: PRRecord, issue: int, rnd: BallotRound, outcome: BallotOutcome
) -> list[Vote]:
    """Each vote counted or ignored, in the actions log once; returns the votes counted now."""
    deps = t.deps
    handled = set(rec.handled)
    counted: list[Vote] = []
    for vote in (*outcome.counted, *outcome.ignored):
        key = f"vote:{vote.key}"
        if key in handled:
            continue
        deps.actions_log.append(
            {
                "action": "vote_counted" if vote.counted else "vote_ignored",
                "pr": rec.ref,
                "issue": f"{deps.decision_repo}#{issue}",
                "round": rnd.round,
                **vote.to_dict(),
            },
            now=t.now,
        )
        if not vote.counted:
            deps.log.info("vote.ignored", pr=rec.ref, user=vote.user, reason=vote.reason)
        else:
            counted.append(vote)
        rec = deps.prs.change(rec, durable=False, handled=(*rec.handled, key))
    return counted


def _answer_unknown_commands(t: Tick, rec: PRRecord, issue: int, outcome: BallotOutcome) -> None:
    """One reply per comment whose command capdaemon does not know (audited)."""
    deps = t.deps
    assert deps.decision_repo is not None
    for unknown in outcome.unknown_commands:
        deps.forge.comment_once(
            deps.decision_repo,
            issue,
            {"kind": "reply", "key": f"comment:{unknown.comment_id}"},
            unknown.reply,
        )
        deps.actions_log.append(
            {
                "action": "unknown_command_answered",
                "pr": rec.ref,
                "comment_id": unknown.comment_id,
                "user": unknown.user,
                "line": unknown.command.line,
            },
            now=t.now,
        )
        handled = (*rec.handled, f"reply:{unknown.comment_id}")
        rec = deps.prs.change(rec, durable=False, handled=handled)


def apply_ballot(
    t: Tick, s: TickPR, issue: int, rnd: BallotRound, outcome: BallotOutcome, previous: str
) -> None:
    deps, now = t.deps, t.now
    rec = s.rec
    assert deps.decision_repo is not None
    status = outcome.status
    deps.actions_log.append(
        {
            "action": "ballot",
            "pr": rec.ref,
            "status": status.value,
            "previous": previous,
            "head_sha": outcome.head_sha,
            "round": rnd.round,
            "decided_by": outcome.decided_by,
            "reason": outcome.reason,
            "issue": f"{deps.decision_repo}#{issue}",
        },
        now=now,
    )
    deps.log.info("ballot.resolved", pr=rec.ref, status=status.value, by=outcome.decided_by)
    deciding = outcome.deciding.key if outcome.deciding else "none"
    deps.forge.comment_once(
        deps.decision_repo,
        issue,
        {"kind": "ballot-outcome", "key": f"{rec.ref}:{rnd.round}:{status.value}:{deciding}"},
        texts.outcome_comment(outcome, shadow=deps.shadow),
    )
    if status is BallotStatus.REJECTED:
        deps.actions_log.append(
            {
                "action": "rejection",
                "pr": rec.ref,
                "head_sha": outcome.head_sha,
                "author": rec.author,
                "by": outcome.decided_by,
            },
            now=now,
        )
        if not deps.shadow:  # the round is over, whatever happens to the votes later
            over = replace(rnd.rejected(now), issue=issue)
            rec = deps.prs.change(rec, durable=False, ballot_round=over)
    rec = record_ballot(t, rec, rnd, outcome)  # record before act
    rejected = status is BallotStatus.REJECTED
    if rejected:
        rec = publish_rejected_check(deps, rec, outcome)
    if rejected and close_pr(t, rec, reject_comment(outcome)):
        close_issue(t, s.rec, BALLOT, "Rejected: the PR is closed.")
    rec = s.rec
    if rec.state == PRState.OPEN and not (rec.ballot_round and rec.ballot_round.rejected_at):
        republish(t, s)


def republish(t: Tick, s: TickPR) -> None:
    """Republish the check and the decision issues of a PR whose owner decision changed this
    tick (same code path as step 2), so step 4 of the same tick sees the new check. Everything
    is read again, on a fresh TickPR: the PR's own item keeps what step 2 decided."""
    deps, ctx, rec = t.deps, t.ctx, s.rec
    if rec.repo not in ctx.policies:
        read_repo_policy(t, s.rc, deps.forge.policy_text(rec.repo, s.rc.base))
    policy_hash = ctx.policies[rec.repo].policy_hash
    process_pr(t, plan(t, TickPR(s.rc, s.pr, policy_hash, t.deps.prs.records)))


def publish_rejected_check(deps: TickDeps, rec: PRRecord, outcome: BallotOutcome) -> PRRecord:
    """L1.C3 on the rejected head says who rejected it (the PR is closed next and never
    republished, so the check must not keep saying it waits for an answer); returns the
    PR's record."""
    check = rejected_check(rec.quadrant or "D", outcome)
    try:
        deps.forge.publish_check(
            rec.repo,
            rec.head_sha,
            success=False,
            title=check.title,
            summary=check.summary,
            marker={"kind": "l1c3", "pr": rec.ref, "head": rec.head_sha},
        )
    except ForgeError as exc:  # the close goes ahead: the check only reports it
        deps.log.warning("check.publish_failed", pr=rec.ref, error=str(exc)[:200])
        return rec
    return deps.prs.change(rec, durable=False, check_success=False)


def record_ballot(t: Tick, rec: PRRecord, rnd: BallotRound, outcome: BallotOutcome) -> PRRecord:
    """The ballot's outcome in the PR's record, saved (before anything acts on it)."""
    voted_at = _iso(outcome.deciding.at) if outcome.deciding is not None else None
    ballot = BallotRecord(
        outcome.status,
        outcome.head_sha,
        rnd.round,
        outcome.decided_by,
        outcome.reason,
        _iso(t.now),
        voted_at,  # when the deciding vote was cast (reaction times)
    )
    return t.deps.prs.change(rec, ballot=ballot)


def retry_rejection(t: Tick, s: TickPR) -> None:
    """A rejection recorded on the round whose close did not happen (failed, or lost to a
    crash): close the PR now. Votes are not read again: the round is over."""
    rec = s.rec
    t.report.ballots[rec.ref] = BallotStatus.REJECTED.value
    outcome = ballot_outcome(rec, rec.ballot.head_sha if rec.ballot else s.pr.head_sha, t.now)
    if close_pr(t, rec, reject_comment(outcome)):
        close_issue(t, s.rec, BALLOT, "Rejected: the PR is closed.")


def close_pr(t: Tick, rec: PRRecord, comment: str) -> bool:
    """Close a rejected PR (record before act). Shadow mode only audits "would_close".
    The PR's record changes in the store (a holder of `rec` reads it again there)."""
    deps, report = t.deps, t.report
    base = {"action": "close", "pr": rec.ref, "head_sha": rec.head_sha}
    if deps.shadow:
        deps.actions_log.append({**base, "status": "would_close"}, now=t.now)
        return True
    intent = pr_intent(t, rec, "close", rec.head_sha)
    try:
        intent.attempt(lambda: deps.forge.close_pr(rec.repo, rec.number, comment))
    except ForgeError as exc:  # refused, or no answer (the intent stays for step 0)
        report_error(report, "pr.close_failed", f"{rec.ref}: {exc}", pr=rec.ref)
        return False
    intent.done()
    deps.prs.change(deps.prs.records[rec.ref], durable=False, state=PRState.CLOSED)
    intent.settle()
    report.closed.append(rec.ref)
    deps.log.info("pr.closed", pr=rec.ref)
    return True


def _policy_hash(t: Tick, repo: str) -> str:
    """The repo's policy hash this tick (the daemon's own when the repo was not polled)."""
    found = t.ctx.policies.get(repo)
    return found.policy_hash if found is not None else t.deps.policy_hash

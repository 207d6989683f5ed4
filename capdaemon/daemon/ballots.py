"""Step 3 of a tick: ballot rounds, owners' votes and their outcomes (approve, defer, reject)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from capdaemon.daemon import texts
from capdaemon.daemon.botstate import PRRecord
from capdaemon.daemon.tickdata import (
    BALLOT,
    BALLOT_REREAD,
    TickReport,
    _BallotReads,
    _digest,
    _iso,
    _parse,
    _Seen,
)
from capdaemon.decide.ballot import BallotOutcome, BallotStatus, Vote, resolve_ballot
from capdaemon.decide.checks import (
    ballot_issue_body,
    reject_comment,
)
from capdaemon.decide.labels import Label
from capdaemon.decide.rounds import BallotRound, RoundReason, next_round
from capdaemon.forge.errors import ForgeError, RateLimited
from capdaemon.forge.types import IssueActivity
from capdaemon.model import PRSnapshot, Quadrant, Verdict


class BallotsMixin:
    """Ticker steps that open ballot rounds, count votes and apply outcomes."""

    def _outcome(self, rec: PRRecord, head_sha: str, now: datetime) -> BallotOutcome:
        """The ballot state recorded for this head, as decide's BallotOutcome."""
        b = rec.ballot if rec.ballot.get("head_sha") == head_sha else {}
        status = BallotStatus(b.get("status", "pending"))
        deciding = None
        if b.get("by"):
            at = _parse(b["at"]) if b.get("at") else now
            deciding = Vote(b["by"], "comment", None, at, "", status, True)
        reason = str(b.get("reason", "no owner has answered yet"))
        return BallotOutcome(status, head_sha, reason, deciding)

    def _ensure_ballot(
        self,
        rec: PRRecord,
        snap: PRSnapshot,
        verdict: Verdict,
        now: datetime,
        report: TickReport,
    ) -> int | None:
        """Open the ballot (round 1) or start a new round in the same issue (capdaemon.decide.
        rounds.next_round): when the head or the base changed, when the PR was reopened after a
        rejection capdaemon acted on, or when someone else edited the ballot's text (restored: R5).

        A new round ignores every comment and reaction already on the issue when it starts
        (their ids, read after the new-round comment: clock-free, R3), as well as anything
        stamped before the round's start.
        """
        prior = BallotRound.from_json(rec.ballot_round) if rec.ballot_round else None
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
            issue_restored=bool(self._tampered.get(rec.ref, {}).get(BALLOT)),
        )
        reason = why.value if why else ""
        new_round = prior is not None and why is not None
        voided = None
        if (
            prior is not None
            and new_round
            and rec.ballot.get("head_sha") == prior.head_sha
            and BallotStatus(rec.ballot.get("status", "pending")).mergeable
        ):
            voided = prior.head_sha
            if why is not RoundReason.HEAD_CHANGED:  # a push is audited as it is seen
                self.actions_log.append(
                    {
                        "action": "approval_voided",
                        "pr": rec.ref,
                        "head_sha": prior.head_sha,
                        "new_head_sha": snap.head_sha,
                        "reason": texts.round_reason(why, prior.base_ref, snap.base_ref),
                    },
                    now=now,
                )
        if new_round or prior is None:
            rec.ballot = {"status": "pending", "head_sha": snap.head_sha, "round": rnd.round}
        labels = [Label.PENDING_OWNER.value]
        if self._ballot_key(rec, snap.head_sha) == BallotStatus.DEFERRED.value:
            labels.append(Label.DEFERRED.value)
        number = self._ensure_issue(
            rec,
            BALLOT,
            {"kind": BALLOT, "pr": rec.ref, "head": snap.head_sha, "round": rnd.round},
            texts.ballot_title(rec.repo, rec.number, snap.title),
            ballot_issue_body(rec.ref, "", snap.title, snap.head_sha, rnd.round, verdict),
            labels,
            now,
            report,
            round_no=rnd.round if why is RoundReason.ISSUE_RESTORED else None,
        )
        if number is None:
            return None
        if new_round and prior is not None:
            assert self.decision_repo is not None
            if why is RoundReason.HEAD_CHANGED:
                self.forge.comment_once(
                    self.decision_repo,
                    number,
                    {"kind": "round", "key": f"{rec.ref}:round:{rnd.round}"},
                    texts.new_round_comment(prior.head_sha, snap.head_sha, rnd.round, voided),
                )
            elif why is not RoundReason.ISSUE_RESTORED:
                self.forge.comment_once(
                    self.decision_repo,
                    number,
                    {"kind": "round", "key": f"{rec.ref}:round:{rnd.round}"},
                    texts.rebound_round_comment(
                        texts.round_reason(why, prior.base_ref, snap.base_ref),
                        snap.head_sha,
                        snap.base_ref,
                        rnd.round,
                        voided,
                    ),
                )
            # every vote already on the issue belongs to an earlier round, whatever its time
            stale = [f"comment:{c.id}" for c in self.forge.comments(self.decision_repo, number)]
            stale += [f"reaction:{r.id}" for r in self.forge.reactions(self.decision_repo, number)]
            rnd = rnd.with_stale_votes(stale)
            self.actions_log.append(
                {
                    "action": "ballot_round",
                    "pr": rec.ref,
                    "head_sha": snap.head_sha,
                    "round": rnd.round,
                    "issue": number,
                    "reason": reason,
                    "stale_votes": len(rnd.stale_vote_ids),
                },
                now=now,
            )
        rec.ballot_round = {**rnd.to_json(), "issue": number}
        return number

    # ------------------------------------------------------------------ step 3
    def _step_ballots(self, seen: list[_Seen], now: datetime, report: TickReport) -> None:
        todo: list[_Seen] = []
        for s in seen:
            rec = s.rec
            needs = rec.quadrant == Quadrant.D.value or self.safety.tiers.needs_ballot(rec)
            if not needs or not rec.ballot_round or rec.state != "open":
                continue
            if rec.ballot_round.get("rejected_at"):  # over; reopened: a new round in step 2
                if not rec.ballot_round.get("reopened"):
                    self._retry_rejection(s, now, report)
                continue
            if rec.ballot_round.get("head_sha") != s.pr.head_sha or rec.head_sha != s.pr.head_sha:
                continue  # not rebound yet (the snapshot failed this tick)
            todo.append(s)
        fps: dict[str, str | None] = {}
        wanted: dict[str, int] = {}
        if todo:
            activity = self.issue_activity(report)
            for s in todo:
                rec = s.rec
                number = int(rec.ballot_round["issue"])  # type: ignore[index]
                fps[rec.ref] = fp = self._ballot_fp(rec, activity.get(number))
                if not self._ballot_quiet(rec, fp, s.pr.head_sha, now):
                    wanted[rec.ref] = number
        reads = self._read_ballots(wanted)
        for s in todo:
            rec = s.rec
            if rec.ref not in wanted:  # nobody commented or reacted since the last full read
                report.ballots[rec.ref] = self._ballot_key(rec, s.pr.head_sha)
                continue
            self._check_stop()
            try:
                status = self._resolve_ballot(s, now, report, reads[rec.ref])
            except RateLimited:
                raise
            except ForgeError as exc:
                self._error(report, "ballot.failed", f"{rec.ref}: {exc}", pr=rec.ref)
                self._ballot_unread.add(rec.ref)  # no merge on an approval we could not re-read
                status = None
            fp = fps.get(rec.ref)
            if status is not None and fp and status == self._ballot_key(rec, s.pr.head_sha):
                rec.ballot_seen = {"fp": fp, "at": _iso(now)}
            else:  # unread, or the outcome is not applied yet: read in full next tick
                rec.ballot_seen = {}
            self.prs.save(rec)
            self._heartbeat()
        self.safety.tiers.poll(seen, now, report)
        self.safety.channels.sync_desk(
            self, now, report
        )  # mirror one-taps into Telegram (when configured)

    def _ballot_fp(self, rec: PRRecord, act: IssueActivity | None) -> str | None:
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
            rnd.get("round"),
            rnd.get("head_sha"),
            rnd.get("started_at"),
            sorted(rnd.get("stale_vote_ids") or ()),
            self._repo_policy.get(rec.repo, self.policy_hash),
            rec.author,
        )

    def _ballot_quiet(self, rec: PRRecord, fp: str | None, head_sha: str, now: datetime) -> bool:
        """True when a ballot needs no read: same activity as at the last full read, less than
        BALLOT_REREAD ago, and not approved (an approval is re-read every tick until merged)."""
        seen = rec.ballot_seen
        if not fp or seen.get("fp") != fp or self._ballot_mergeable(rec, head_sha):
            return False
        try:
            return now - _parse(str(seen["at"])) < BALLOT_REREAD
        except (KeyError, ValueError):
            return False

    def _read_ballots(self, wanted: Mapping[str, int]) -> dict[str, _BallotReads]:
        """Gather phase of step 3: comments and reactions of the ballots to read, concurrently."""
        repo = self.decision_repo
        calls: dict[tuple[str, str], Callable[[], Any]] = {}
        if repo is not None:
            for ref, number in wanted.items():
                calls[(ref, "c")] = lambda n=number: self.forge.comments(repo, n)
                calls[(ref, "r")] = lambda n=number: self.forge.reactions(repo, n)
        got = self._concurrently(calls)
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

    def _owners(self, repo: str, users: Iterable[str]) -> set[str]:
        """Owners for `repo`: central owners plus the repo's (capdaemon.yml and the base
        branch's .capdaemon.yml), and admins when owners_include_admins."""
        owners = set(self.config_for(repo).owners_for(repo))
        if self.config.owners_include_admins:
            for user in {u.lower() for u in users} - owners:
                if self.forge.permission(repo, user) == "admin":
                    owners.add(user)
        return owners

    def _resolve_ballot(
        self, s: _Seen, now: datetime, report: TickReport, reads: _BallotReads | None = None
    ) -> str:
        """Count the owners' votes and apply a changed outcome; returns the resolved status."""
        rec = s.rec
        assert rec.ballot_round is not None and self.decision_repo is not None
        issue = int(rec.ballot_round["issue"])
        rnd = BallotRound.from_json(rec.ballot_round)
        if reads is not None and reads.error is not None:
            raise reads.error
        comments = reads.comments if reads is not None else None
        reactions = reads.reactions if reads is not None else None
        if comments is None:
            comments = self.forge.comments(self.decision_repo, issue)
        if reactions is None:
            reactions = self.forge.reactions(self.decision_repo, issue)
        answered = {int(k.split(":", 1)[1]) for k in rec.handled if k.startswith("reply:")}
        facts = rnd.facts(
            owners=self._owners(rec.repo, [c.user for c in comments] + [r.user for r in reactions]),
            pr_author=rec.author,
            bot_login=self.bot_login,
            comments=comments,
            reactions=reactions,
            answered_comment_ids=answered,
        )
        outcome = resolve_ballot(facts, now)
        handled = set(rec.handled)
        for vote in (*outcome.counted, *outcome.ignored):
            key = f"vote:{vote.key}"
            if key in handled:
                continue
            self.actions_log.append(
                {
                    "action": "vote_counted" if vote.counted else "vote_ignored",
                    "pr": rec.ref,
                    "issue": f"{self.decision_repo}#{issue}",
                    "round": rnd.round,
                    **vote.to_dict(),
                },
                now=now,
            )
            if not vote.counted:
                self.log.info("vote.ignored", pr=rec.ref, user=vote.user, reason=vote.reason)
            rec.handled.append(key)
        for unknown in outcome.unknown_commands:
            self.forge.comment_once(
                self.decision_repo,
                issue,
                {"kind": "reply", "key": f"comment:{unknown.comment_id}"},
                unknown.reply,
            )
            self.actions_log.append(
                {
                    "action": "unknown_command_answered",
                    "pr": rec.ref,
                    "comment_id": unknown.comment_id,
                    "user": unknown.user,
                    "line": unknown.command.line,
                },
                now=now,
            )
            rec.handled.append(f"reply:{unknown.comment_id}")
        report.ballots[rec.ref] = outcome.status.value
        previous = self._ballot_key(rec, s.pr.head_sha)
        if outcome.status.value != previous:
            self._apply_ballot(s, issue, rnd, outcome, previous, now, report)
        return outcome.status.value

    def _apply_ballot(
        self,
        s: _Seen,
        issue: int,
        rnd: BallotRound,
        outcome: BallotOutcome,
        previous: str,
        now: datetime,
        report: TickReport,
    ) -> None:
        rec = s.rec
        assert self.decision_repo is not None
        status = outcome.status
        self.actions_log.append(
            {
                "action": "ballot",
                "pr": rec.ref,
                "status": status.value,
                "previous": previous,
                "head_sha": outcome.head_sha,
                "round": rnd.round,
                "decided_by": outcome.decided_by,
                "reason": outcome.reason,
                "issue": f"{self.decision_repo}#{issue}",
            },
            now=now,
        )
        self.log.info("ballot.resolved", pr=rec.ref, status=status.value, by=outcome.decided_by)
        deciding = outcome.deciding.key if outcome.deciding else "none"
        self.forge.comment_once(
            self.decision_repo,
            issue,
            {"kind": "ballot-outcome", "key": f"{rec.ref}:{rnd.round}:{status.value}:{deciding}"},
            texts.outcome_comment(outcome, shadow=self.shadow),
        )
        if status is BallotStatus.REJECTED:
            self.actions_log.append(
                {
                    "action": "rejection",
                    "pr": rec.ref,
                    "head_sha": outcome.head_sha,
                    "author": rec.author,
                    "by": outcome.decided_by,
                },
                now=now,
            )
            if not self.shadow:  # the round is over, whatever happens to the votes later
                rec.ballot_round = {**rnd.rejected(now).to_json(), "issue": issue}
        self._record_ballot(rec, rnd, outcome, now)  # record before act
        rejected = status is BallotStatus.REJECTED
        if rejected and self._close_pr(rec, reject_comment(outcome), now, report):
            self._close_issue(rec, BALLOT, "Rejected: the PR is closed.", now)
        if rec.state == "open" and not (rec.ballot_round or {}).get("rejected_at"):
            # republish the check and the ballot body for the new state (same code path as step 2)
            policy_hash = self._repo_policy.get(rec.repo)
            if policy_hash is None:
                policy = self.forge.policy_text(rec.repo, s.rc.base)
                policy_hash = _digest(self.policy_hash, policy)
            self._process_pr(s.rc, s.pr, policy_hash, now, report)

    def _record_ballot(
        self, rec: PRRecord, rnd: BallotRound, outcome: BallotOutcome, now: datetime
    ) -> None:
        rec.ballot = {
            "status": outcome.status.value,
            "head_sha": outcome.head_sha,
            "round": rnd.round,
            "by": outcome.decided_by,
            "reason": outcome.reason,
            "at": _iso(now),
        }
        self.prs.save(rec)

    def _note_reopened(self, rec: PRRecord) -> None:
        """The PR was closed and is open again: a rejected round ends (a new one starts)."""
        if rec.ballot_round:
            rnd = BallotRound.from_json(rec.ballot_round)
            rec.ballot_round = {**rnd.seen_reopened().to_json(), "issue": rnd.issue}

    def _retry_rejection(self, s: _Seen, now: datetime, report: TickReport) -> None:
        """A rejection recorded on the round whose close did not happen (failed, or lost to a
        crash): close the PR now. Votes are not read again: the round is over."""
        rec = s.rec
        report.ballots[rec.ref] = BallotStatus.REJECTED.value
        outcome = self._outcome(rec, str(rec.ballot.get("head_sha") or s.pr.head_sha), now)
        if self._close_pr(rec, reject_comment(outcome), now, report):
            self._close_issue(rec, BALLOT, "Rejected: the PR is closed.", now)

    def _close_pr(self, rec: PRRecord, comment: str, now: datetime, report: TickReport) -> bool:
        """Close a rejected PR (record before act). Shadow mode only audits "would_close"."""
        base = {"action": "close", "pr": rec.ref, "head_sha": rec.head_sha}
        if self.shadow:
            self.actions_log.append({**base, "status": "would_close"}, now=now)
            return True
        rec.pending = {"op": "close", "head_sha": rec.head_sha, "at": _iso(now)}
        self.prs.save(rec)
        self.actions_log.append({**base, "status": "attempted"}, now=now)
        self._crash("audit:close")
        try:
            self.forge.close_pr(rec.repo, rec.number, comment)
        except ForgeError as exc:
            self.actions_log.append({**base, "status": "failed", "error": str(exc)[:300]}, now=now)
            self._error(report, "pr.close_failed", f"{rec.ref}: {exc}", pr=rec.ref)
            return False
        finally:
            rec.pending = None
            self.prs.save(rec)
        self.actions_log.append({**base, "status": "done"}, now=now)
        rec.state = "closed"
        report.closed.append(rec.ref)
        self.log.info("pr.closed", pr=rec.ref)
        return True

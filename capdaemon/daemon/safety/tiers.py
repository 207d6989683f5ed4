"""Tiers and one-tap: each head's tier (task level + changed files) and its one-tap issue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from capdaemon.audit import AuditLog
from capdaemon.capability.model import CapabilityError
from capdaemon.channels.config import one_tap_ttl
from capdaemon.classify.trailers import commit_agent_session
from capdaemon.config import Config
from capdaemon.daemon.core.failure import per_item
from capdaemon.daemon.core.reactions import time_or_none
from capdaemon.daemon.safety.common import (
    ONE_TAP,
    QUIET_REREAD,
    Report,
    SeenPR,
    TickReads,
    log,
)
from capdaemon.decide.checks import one_tap_issue_body
from capdaemon.decide.labels import Label
from capdaemon.decide.rounds import after_rejection_tier
from capdaemon.decide.tiers import (
    OneTapResult,
    OneTapState,
    Requirement,
    TierDecision,
    one_tap_state,
    policy_of,
    tier_for,
)
from capdaemon.forge.errors import ForgeError
from capdaemon.forge.types import IssueActivity
from capdaemon.model import PRSnapshot, Quadrant
from capdaemon.state import canonical_json
from capdaemon.stores.botstate import PRRecord, PRStore
from capdaemon.stores.safety_state import SafetyStore
from capdaemon.timefmt import parse_utc, utc_iso

if TYPE_CHECKING:
    from capdaemon.forge.port import ForgePort


@dataclass
class Tiers:
    """The tier of each PR head and the one-tap requests of tier-2 heads (safety.json)."""

    config: Config
    store: SafetyStore
    forge: ForgePort
    actions_log: AuditLog
    prs: PRStore
    decision_repo: str | None
    bot_login: Callable[[], str]

    # ------------------------------------------------------------------ tiers
    def _level(self, task_id: str | None, reads: TickReads) -> int | None:
        if not task_id:
            return None
        try:
            return int(reads.load_cap(task_id).capability.level)
        except (CapabilityError, AttributeError):
            return None  # the capability layer already blocks such a PR

    def on_classified(
        self, rec: PRRecord, snap: PRSnapshot, now: datetime, reads: TickReads
    ) -> None:
        """Record the head's tier (task level + changed files) and the agent ids of its commits.

        Not saved here (that re-serialised the whole safety.json per PR: quadratic on a first
        tick): the tick saves once per chunk and at its end. Crash-safe because a PR whose tier
        entry is missing for its head is never "settled" or "unchanged" (`recorded`): the
        next tick reclassifies it (without a second classification audit) and records it again.
        """
        s = self.store
        policy = policy_of(rec.merge_policy)
        level = self._level(rec.task_id, reads)
        cfg = self.config
        td = replace(
            tier_for(
                level, snap.files, cfg.tiers, policy, secret_globs=cfg.classifier.secret_globs
            ),
            policy_reason=rec.policy_reason,
        )
        size = {
            "files": len(snap.files),
            "lines": sum(f.additions + f.deletions for f in snap.files),
        }
        entry = {"head_sha": snap.head_sha, "level": level, **td.to_dict(), **size}
        if s["tiers"].get(rec.ref) != entry:
            s["tiers"][rec.ref] = entry
            if td.tier > 1:
                self.actions_log.append({"action": "tier", "pr": rec.ref, **entry}, now=now)
        ids: set[str] = set()
        for c in snap.commits:
            session, _why = commit_agent_session(c.message)
            if session is not None:
                ids.add(session.agent_id)
        s["agents_by_pr"][rec.ref] = sorted(ids)

    def recorded(self, rec: PRRecord) -> bool:
        """True when safety.json holds the tier of the PR's current head under the policy it is
        judged by now (see on_classified; a tier recorded under another policy, e.g. `auto`
        for a PR without a task before such PRs were judged as `tiered`, is computed again)."""
        entry = self.store["tiers"].get(rec.ref)
        return (
            bool(entry)
            and entry.get("head_sha") == rec.head_sha
            and entry.get("merge_policy") == policy_of(rec.merge_policy)
            and rec.ref in self.store["agents_by_pr"]
        )

    def decision(self, rec: PRRecord) -> TierDecision:
        """The PR's tier for its current head; unknown under `tiered` → tier 3 (fail closed); a
        PR an owner rejected once → at least a full ballot (capdaemon.decide.rounds)."""
        after_rejection = rec.ballot_round is not None and rec.ballot_round.after_rejection
        return after_rejection_tier(self._decision(rec), after_rejection)

    def _decision(self, rec: PRRecord) -> TierDecision:
        policy = policy_of(rec.merge_policy)
        entry = self.store["tiers"].get(rec.ref)
        if entry and entry.get("head_sha") == rec.head_sha and entry.get("merge_policy") == policy:
            return TierDecision(
                int(entry["tier"]),
                tuple(entry.get("reasons") or ()),
                policy,
                str(entry.get("policy_reason") or ""),
            )
        # Unknown tier: tier 3 is a floor under every policy, so fail closed under all of them.
        return TierDecision(3, ("tier not computed for this head",), policy, rec.policy_reason)

    def needs_ballot(self, rec: PRRecord, quadrant: Quadrant | None) -> bool:
        """The one answer to "does this PR need an owner's ballot": its quadrant is D, or its
        tier asks for a full ballot — tier 3 (under every policy, `manual` included: a human
        merges after it), or an expired one-tap. `quadrant` is the quadrant the caller
        judges by (None: none that asks for a ballot)."""
        if quadrant is Quadrant.D:
            return True
        req = self.decision(rec).owner_requirement
        if req is Requirement.BALLOT:
            return True
        if req is Requirement.ONE_TAP:
            entry = self._one_tap(rec)
            return entry is not None and entry.get("state") == OneTapState.EXPIRED.value
        return False

    # ------------------------------------------------------------------ one-tap
    def pending_one_tap(self, rec: PRRecord) -> int | None:
        """The decision issue of the PR head's one-tap while it waits for an owner's 👍."""
        entry = self._one_tap(rec)
        if entry is None or entry.get("state") != OneTapState.PENDING.value:
            return None
        issue = entry.get("issue")
        return issue if isinstance(issue, int) and not isinstance(issue, bool) else None

    def _one_tap(self, rec: PRRecord) -> dict[str, Any] | None:
        entry: dict[str, Any] | None = self.store["one_tap"].get(rec.ref)
        return entry if entry and entry.get("head_sha") == rec.head_sha else None

    def gate(
        self, rec: PRRecord, snap: PRSnapshot, now: datetime, report: Report | None = None
    ) -> bool:
        """For a tier-2 head: open its `decision:one-tap` issue; False until an owner's 👍 (or
        an approved ballot after expiry). Other tiers: True (ballots are the quadrant path's)."""
        td = self.decision(rec)
        if td.requirement is not Requirement.ONE_TAP:
            return True
        if rec.ballot_approves(rec.head_sha):
            return True
        entry = self._one_tap(rec)
        if entry is None:
            entry = self._open_one_tap(rec, snap, td, now, report)
            if entry is None:
                return False
        return entry.get("state") == OneTapState.APPROVED.value

    def _open_one_tap(
        self,
        rec: PRRecord,
        snap: PRSnapshot,
        td: TierDecision,
        now: datetime,
        report: Report | None,
    ) -> dict[str, Any] | None:
        repo = self.decision_repo
        if repo is None:
            log.warning("one_tap.no_decision_repo", pr=rec.ref)
            return None
        s = self.store
        old = s["one_tap"].get(rec.ref)
        ttl = one_tap_ttl(self.config)
        issue = self.forge.ensure_issue(
            repo,
            {"kind": ONE_TAP, "key": f"{rec.ref}@{snap.head_sha}", "pr": rec.ref},
            f"One-tap: {rec.ref} {snap.title}"[:200],
            one_tap_issue_body(rec.ref, "", snap.title, snap.head_sha, td, ttl),
            [Label.ONE_TAP.value],
        )
        opened = issue.created_at or now
        entry: dict[str, Any] = {
            "head_sha": snap.head_sha,
            "issue": issue.number,
            "opened_at": utc_iso(opened),
            "state": OneTapState.PENDING.value,
            "reason": "waiting for an owner 👍",
            "by": None,
        }
        s["one_tap"][rec.ref] = entry
        s.save()
        self.actions_log.append(
            {
                "action": "one_tap_opened",
                "pr": rec.ref,
                "head_sha": snap.head_sha,
                "issue": f"{repo}#{issue.number}",
                "tier": td.tier,
                "reasons": list(td.reasons),
            },
            now=now,
        )
        if report is not None:
            report.issues.append(f"{ONE_TAP}:{repo}#{issue.number}")
        stale = old and old.get("issue") and old["issue"] != issue.number
        if stale and not old.get("issue_closed"):
            self._close(
                int(old["issue"]), "The PR head moved: a new one-tap request replaces this."
            )
        return entry

    def one_tap_result(self, rec: PRRecord, now: datetime) -> OneTapResult | None:
        """The one-tap state of the PR's current head, for MergeFacts (None when there is none)."""
        entry = self._one_tap(rec)
        if entry is None:
            return None
        return OneTapResult(
            OneTapState(entry["state"]),
            str(entry.get("reason", "")),
            entry.get("by"),
            time_or_none(entry.get("voted_at")),
        )

    def poll(
        self,
        seen: Sequence[SeenPR],
        now: datetime,
        reads: TickReads,
        report: Report | None = None,
    ) -> list[str]:
        """Read the 👍/👎 on pending one-tap issues. Returns the PRs whose one-tap was decided
        (or expired) now: the caller republishes them in the same tick (their fingerprint is
        cleared too, so a crash before that republishes them in the next)."""
        decided: list[str] = []
        if self.decision_repo is None:
            return decided
        for item in seen:
            rec = item.rec
            entry = self._one_tap(rec)
            if rec.state != "open" or entry is None or entry["state"] != OneTapState.PENDING.value:
                continue
            if self._poll_one(rec, entry, self.decision_repo, now, reads, report):
                decided.append(rec.ref)
        return decided

    def _poll_one(
        self,
        rec: PRRecord,
        entry: dict[str, Any],
        repo: str,
        now: datetime,
        reads: TickReads,
        report: Report | None,
    ) -> bool:
        """Read one pending one-tap; True when it was decided (or expired) now."""
        s = self.store
        ttl = one_tap_ttl(self.config)
        # Skip the read when the issue's reaction rollup is as at the last read, that read is
        # recent (QUIET_REREAD) and the deadline has not passed (expiry needs a read).
        activity = reads.issue_activity(report)
        fp = _one_tap_fp(activity.get(int(entry["issue"])) if activity is not None else None)
        deadline = parse_utc(entry["opened_at"], "opened_at") + ttl
        if fp and entry.get("seen_fp") == fp and now < deadline:
            try:
                if now - parse_utc(str(entry["seen_at"]), "seen_at") < QUIET_REREAD:
                    return False
            except (KeyError, ValueError):
                pass
        with per_item(report, "one_tap.failed", rec.ref, log=log, pr=rec.ref) as item:
            reactions = self.forge.reactions(repo, int(entry["issue"]))
            res = one_tap_state(
                parse_utc(entry["opened_at"], "opened_at"),
                reactions,
                reads.owners(rec.repo, [r.user for r in reactions]),
                now,
                ttl,
                pr_author=rec.author,
                bot_login=self.bot_login(),
            )
        if item.failed:
            return False
        if res.state is OneTapState.PENDING:
            if fp:
                entry.update(seen_fp=fp, seen_at=utc_iso(now))
            else:
                entry.pop("seen_fp", None)
            s.save()
            return False
        entry.update(state=res.state.value, reason=res.reason, by=res.approved_by)
        if res.at is not None:
            entry["voted_at"] = utc_iso(res.at)
        s.save()
        self.actions_log.append(
            {
                "action": "one_tap",
                "pr": rec.ref,
                "head_sha": rec.head_sha,
                "status": res.state.value,
                "by": res.approved_by,
                "reason": res.reason,
            },
            now=now,
        )
        log.info("one_tap.decided", pr=rec.ref, state=res.state.value, by=res.approved_by)
        if res.state is OneTapState.EXPIRED and self._close(int(entry["issue"]), f"{res.reason}."):
            entry["issue_closed"] = True
            s.save()
        # republished by the caller: the check, a ballot after expiry
        self.prs.change(rec, fingerprint="")
        return True

    def _close(self, number: int, comment: str) -> bool:
        """Close a one-tap issue; False (logged) when GitHub refused or did not answer."""
        if self.decision_repo is None:
            return False
        try:
            self.forge.close_issue(self.decision_repo, number, comment)
        except ForgeError as exc:
            log.warning("issue.close_failed", issue=number, error=str(exc)[:200])
            return False
        return True

    def one_tap_open(self, ref: str) -> bool:
        """True while the PR's last one-tap issue may still be open on GitHub (it has one, and
        capdaemon has not recorded closing it)."""
        entry = self.store["one_tap"].get(ref)
        return bool(entry and entry.get("issue") and not entry.get("issue_closed"))

    def close_settled(self, rec: PRRecord, comment: str, now: datetime) -> None:
        """Close the one-tap issue of a PR that merged or closed, once: the close is idempotent
        on GitHub (a marked comment, then the state), recorded in safety.json so it is not asked
        again, and audited. A ForgeError propagates (the next tick tries again)."""
        entry = self.store["one_tap"].get(rec.ref)
        repo = self.decision_repo
        if repo is None or not entry or not entry.get("issue") or entry.get("issue_closed"):
            return
        number = int(entry["issue"])
        self.forge.close_issue(repo, number, comment)
        entry["issue_closed"] = True
        self.store.save()
        self.actions_log.append(
            {
                "action": "issue_closed",
                "pr": rec.ref,
                "kind": ONE_TAP,
                "issue": f"{repo}#{number}",
                "comment": comment,
            },
            now=now,
        )
        log.info("issue.closed", pr=rec.ref, kind=ONE_TAP, issue=number)


def _one_tap_fp(act: IssueActivity | None) -> str | None:
    """A one-tap issue's reaction rollup as the issue list shows it (None: unknown → read)."""
    if act is None or act.reactions is None or act.state != "open":
        return None
    return canonical_json([act.number, [list(p) for p in act.reactions]])

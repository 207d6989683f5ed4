"""Merges bound to the approved base: PRs retargeted away, and the check after each merge.

A ballot, a classification and a merge decision hold for one (head sha, base ref). GitHub's
merge call guards the head sha only, so the base is read right before merging
(Forge.merge(base=...)) and checked after it: a merge commit that is not on the approved base
is an incident that trips the breaker at once, and is reverted where auto-revert is on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from capdaemon.audit import AuditLog
from capdaemon.daemon.safety.common import Report
from capdaemon.daemon.safety.probes import Probes
from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.breaker import IncidentKind
from capdaemon.decide.probe import ProbeWatch
from capdaemon.forge.errors import ForgeError
from capdaemon.forge.types import PRSummary
from capdaemon.logging import get_logger
from capdaemon.stores.botstate import PRRecord, PRStore
from capdaemon.stores.prrecord import BallotRecord

if TYPE_CHECKING:
    from capdaemon.forge.port import ForgePort

log = get_logger("capdaemon.tick")


@dataclass
class BaseBinding:
    """Ballots and merges bound to their base: retargeted PRs, and the check after a merge."""

    prs: PRStore
    actions_log: AuditLog
    forge: ForgePort
    probes: Probes

    def note_retargeted(self, base: str, prs: Iterable[PRSummary], now: datetime) -> None:
        """Tracked open PRs now listed on another base than the supervised `base`: their ballot
        round no longer holds (an approval is void; back on any base it is a new round)."""
        for pr in prs:
            if pr.base_ref != base:
                rec = self.prs.records.get(pr.ref)
                if rec is not None and rec.state == "open":
                    self.note_left(rec, pr.base_ref, now)

    def note_left(self, rec: PRRecord, found: str, now: datetime) -> None:
        """Record that `rec`'s PR targets `found`, not its ballot's base (once per move)."""
        if not rec.ballot_round:
            if rec.fingerprint:  # no ballot to void; classified again when it comes back
                self.prs.change(rec, fingerprint="")
            return
        rnd = rec.ballot_round
        if rnd.base_ref == found:
            return  # already noted
        self.actions_log.append(
            {
                "action": "base_changed",
                "pr": rec.ref,
                "head_sha": rec.head_sha,
                "from": rnd.base_ref or None,
                "to": found,
                "round": rnd.round,
            },
            now=now,
        )
        if rec.ballot_approves(rnd.head_sha):
            self.actions_log.append(
                {
                    "action": "approval_voided",
                    "pr": rec.ref,
                    "head_sha": rnd.head_sha,
                    "new_head_sha": rec.head_sha,
                    "reason": f"the PR's base changed to {found}",
                },
                now=now,
            )
        self.prs.change(
            rec,
            ballot=BallotRecord(BallotStatus.PENDING, rnd.head_sha, rnd.round),
            ballot_round=rnd.left_for(found),
            fingerprint="",
        )
        log.warning("pr.base_changed", pr=rec.ref, to=found)

    def verify_merge(
        self,
        rec: PRRecord,
        base: str,
        head_sha: str,
        merge_sha: str,
        now: datetime,
        report: Report | None,
    ) -> bool:
        """After capdaemon's merge: is the merge commit on the approved `base`? False (an incident
        raised, the breaker tripped, a revert PR opened where auto-revert is on) when it is not.

        One compare answers it; the PR is read only when the commit is not there, to name the
        branch it went to (a read failing then still raises the incident)."""
        try:
            on_base = self.forge.branch_contains(rec.repo, base, merge_sha)
        except ForgeError as exc:  # unknown: audited; the probe still watches the merge
            self.actions_log.append(
                {
                    "action": "merge_base_check",
                    "status": "unknown",
                    "pr": rec.ref,
                    "merge_sha": merge_sha,
                    "error": str(exc)[:300],
                },
                now=now,
            )
            message = f"{rec.ref}: {exc}"
            if report is not None:
                report.errors.append(message)
            log.warning("merge.base_check_failed", error=message, pr=rec.ref)
            return True
        if on_base:
            return True
        try:
            into = self.forge.pull_status(rec.repo, rec.number).base_ref or "?"
        except ForgeError:
            into = "?"
        why = f"merged into {into}, not the approved base {base}"
        self.actions_log.append(
            {
                "action": "merge_wrong_base",
                "pr": rec.ref,
                "head_sha": head_sha,
                "merge_sha": merge_sha,
                "approved_base": base,
                "merged_into": into,
            },
            now=now,
        )
        log.error("merge.wrong_base", pr=rec.ref, merge_sha=merge_sha[:12], into=into, base=base)
        try:
            parents = max(1, len(self.forge.commit_parents(rec.repo, merge_sha)))
        except ForgeError:
            parents = 2  # unknown: never auto-revert it
        watch = ProbeWatch(rec.repo, rec.number, merge_sha, parents, now, into, True)
        self.probes.failed(watch, why, [], now, report, kind=IncidentKind.WRONG_BASE)
        return False

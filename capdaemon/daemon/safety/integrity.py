"""Before a tick acts: the audit logs' chains are whole, or nothing is appended (an incident)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from capdaemon.audit import AuditCorruptError, AuditLog, VerifyReport
from capdaemon.config import Config
from capdaemon.daemon.safety.breaker import Breaker
from capdaemon.daemon.safety.common import INCIDENT, Report
from capdaemon.decide._common import ActionKind
from capdaemon.decide._text import md
from capdaemon.decide.breaker import Incident, IncidentKind, record_incident
from capdaemon.decide.labels import Label
from capdaemon.forge.errors import ForgeError
from capdaemon.logging import get_logger
from capdaemon.stores.safety_state import SafetyStore, breaker_update
from capdaemon.timefmt import parse_utc, utc_iso

if TYPE_CHECKING:
    from capdaemon.forge.port import ForgePort

AUDIT_CHECK_EVERY = timedelta(hours=1)  # the whole chains again (edits in the middle of a log)
log = get_logger("capdaemon.integrity")


@dataclass
class AuditGate:
    """Checks both audit logs before a tick acts; a broken chain is an incident, then a stop."""

    config: Config
    store: SafetyStore
    forge: ForgePort
    classifier_log: AuditLog
    actions_log: AuditLog
    decision_repo: str | None
    breaker: Breaker

    def gate(self, now: datetime, report: Report | None = None) -> None:
        """Check both logs (the entries since the last check; in full at start, hourly, and
        while a failure is known). On a failure: a log event, one incident (breaker and an
        incident issue saying where) per distinct failure, then AuditCorruptError: the tick
        appends nothing."""
        info = self.store["audit_check"]
        last = info.get("at")
        full = (
            bool(info.get("failed"))
            or not last
            or now - parse_utc(last, "audit_check.at") >= AUDIT_CHECK_EVERY
        )
        checked = (self.classifier_log.check(full=full), self.actions_log.check(full=full))
        bad = [r for r in checked if r]
        if full:
            info["at"] = utc_iso(now)
        sig = "; ".join(str(r) for r in bad) or None
        if sig is None:
            if info.get("failed"):
                log.info("audit.chain_whole_again", was=info["failed"])
            info["failed"] = None
            self.store.save()
            return
        for r in bad:
            log.error("audit.corrupt", log=str(r.path), line=r.line, reason=r.reason)
        if sig != info.get("failed"):
            info["failed"] = sig
            self.store.save()
            self._incident(bad, sig, now, report)
        raise AuditCorruptError(
            f"{sig}; refusing to append to the audit logs: repair the line by hand "
            "(`capdaemon audit verify` names it), then restart"
        )

    def _incident(
        self, bad: list[VerifyReport], sig: str, now: datetime, report: Report | None
    ) -> None:
        """Count the incident in the breaker (audited only into a log that is whole) and open
        an incident issue naming each bad line."""
        incident = Incident(now, IncidentKind.AUDIT_INTEGRITY, sig[:300])
        with breaker_update(self.breaker.state_dir) as bf:
            bf.state, actions = record_incident(bf.state, incident, now, self.config.breaker)
            for a in actions:
                if a.kind is ActionKind.AUDIT and self.actions_log.corrupt is None:
                    self.actions_log.append(dict(a.payload), now=now)
            self.breaker.apply(bf, [a for a in actions if a.kind is not ActionKind.AUDIT], now)
        repo = self.decision_repo
        if repo is None:
            return
        key = "audit-" + hashlib.sha256(sig.encode("utf-8")).hexdigest()[:16]
        try:
            issue = self.forge.ensure_issue(
                repo,
                {"kind": INCIDENT, "key": key},
                f"Audit log corrupt: {bad[0].path.name} line {bad[0].line}"[:200],
                _issue_body(bad),
                [Label.INCIDENT.value],
            )
            if report is not None:
                report.issues.append(f"{INCIDENT}:{repo}#{issue.number}")
        except ForgeError as exc:
            log.warning("audit.incident_issue_failed", error=str(exc)[:200])


def _issue_body(bad: list[VerifyReport]) -> str:
    where = "\n".join(f"- `{md(r.path.name)}` line {r.line}: {md(r.reason)}" for r in bad)
    return (
        "## Audit log corrupt\n\n"
        f"{where}\n\n"
        "capdaemon refuses to append to its audit logs and runs no tick until the chain is "
        "whole again: nothing is merged, closed or recorded meanwhile. Run "
        "`capdaemon audit verify` on the host, repair or restore the named line by hand "
        "(never delete entries), then restart the daemon. This counts as one incident for "
        "the circuit breaker.\n"
    )

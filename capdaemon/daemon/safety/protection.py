"""Branch protection: SPEC 6.5 as read from GitHub; drift is an incident, once per drift."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from capdaemon.audit import AuditLog
from capdaemon.config import Config
from capdaemon.daemon.core.failure import per_item
from capdaemon.daemon.issues import protection_issue
from capdaemon.daemon.safety.breaker import Breaker
from capdaemon.daemon.safety.common import Report, log
from capdaemon.decide.breaker import Incident, IncidentKind
from capdaemon.decide.labels import L1C3_CHECK_NAME
from capdaemon.stores.safety_state import SafetyStore

if TYPE_CHECKING:
    from capdaemon.forge.port import ForgePort


def protection_problems(prot: Mapping[str, Any] | None, app_id: int | None) -> list[str]:
    """Why a branch protection document falls short of SPEC 6.5 (empty: it is as required)."""
    if prot is None:
        return ["the branch is not protected"]
    problems = []
    rsc = prot.get("required_status_checks") or {}
    checks = rsc.get("checks") or [{"context": c} for c in rsc.get("contexts") or ()]
    mine = [c for c in checks if c.get("context") == L1C3_CHECK_NAME]
    if not mine:
        problems.append(f"{L1C3_CHECK_NAME} is not a required check")
    elif app_id is not None and not any(c.get("app_id") == app_id for c in mine):
        problems.append(f"{L1C3_CHECK_NAME} is not pinned to App {app_id}")
    force = prot.get("allow_force_pushes")
    if bool(force.get("enabled")) if isinstance(force, dict) else bool(force):
        problems.append("force pushes are allowed")
    if prot.get("required_pull_request_reviews") is None:
        problems.append("pull requests are not required")
    return problems


@dataclass
class Protection:
    """Each supervised base branch's protection, its issue, and drift incidents."""

    config: Config
    store: SafetyStore
    forge: ForgePort
    actions_log: AuditLog
    decision_repo: str | None
    breaker: Breaker

    def check(self, now: datetime, report: Report | None) -> None:
        """Drift from the SPEC 6.5 protection is an incident, once per drift (not every tick)."""
        s = self.store
        app_id = self.config.github.app_id
        unknown = set(getattr(report, "unknown_repos", ()))  # named by the poll step already
        for rc in self.config.repos:
            if rc.name in unknown:
                continue
            with per_item(report, "protection.read_failed", rc.name, log=log, repo=rc.name) as item:
                prot = self.forge.effective_protection(rc.name, rc.base)
            if item.failed:
                continue
            problems = protection_problems(prot, app_id)
            entry = s["protection"].setdefault(rc.name, {"seen_ok": False, "drift": None})
            protection_issue.sync(
                self.forge,
                self.actions_log,
                self.decision_repo,
                protection_issue.Branch(rc.name, rc.base, rc.base),
                problems,
                entry,
                now,
                report,
            )
            self._judge(f"{rc.name}:{rc.base}", rc.name, rc.base, problems, entry, now)
        s.save()

    def _judge(
        self,
        where: str,
        repo: str,
        base: str,
        problems: list[str],
        entry: dict[str, Any],
        now: datetime,
    ) -> None:
        if not problems:
            if entry.get("drift"):
                self.actions_log.append({"action": "protection.restored", "repo": where}, now=now)
            entry.update(seen_ok=True, drift=None, missing=None)
            return
        sig = "; ".join(problems)
        if not entry.get("seen_ok"):
            if entry.get("missing") != sig:  # never protected: say so once, not an incident
                entry["missing"] = sig
                hint = "run: " + protection_issue.protect_command(repo, base)
                self.actions_log.append(
                    {
                        "action": "protection.missing",
                        "repo": where,
                        "problems": problems,
                        "hint": hint,
                    },
                    now=now,
                )
                log.warning("protection.missing", repo=where, problems=problems)
            return
        if entry.get("drift") == sig:
            return
        entry["drift"] = sig
        self.store.save()
        self.actions_log.append(
            {"action": "protection.drift", "repo": where, "problems": problems}, now=now
        )
        log.warning("protection.drift", repo=where, problems=problems)
        self.breaker.record(Incident(now, IncidentKind.PROTECTION_DRIFT, sig[:300], where), now)

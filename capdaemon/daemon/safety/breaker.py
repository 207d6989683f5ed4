"""The circuit breaker: incidents counted in breaker.json, its incident issue, `/breaker reset`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.audit import AuditLog
from capdaemon.config import Config
from capdaemon.daemon.safety.common import API_FAIL_TICKS, INCIDENT, Report, log
from capdaemon.daemon.safety.logtail import BreakerLogTail
from capdaemon.decide._common import Action, ActionKind
from capdaemon.decide.ballot import edit_reason
from capdaemon.decide.breaker import (
    BreakerState,
    Incident,
    IncidentKind,
    incident_issue_body,
    record_incident,
    reset,
)
from capdaemon.decide.commands import CommandKind, parse_command
from capdaemon.decide.labels import Label
from capdaemon.filenames import BREAKER_FILE
from capdaemon.forge.errors import ForgeError
from capdaemon.state import StateError
from capdaemon.stores.safety_state import (
    BreakerFile,
    SafetyStore,
    breaker_update,
    read_breaker,
)
from capdaemon.timefmt import utc_iso

if TYPE_CHECKING:
    from capdaemon.forge.port import ForgePort


@dataclass
class Breaker:
    """breaker.json and its incident issue in the decision repo."""

    config: Config
    state_dir: Path
    store: SafetyStore
    forge: ForgePort
    actions_log: AuditLog
    decision_repo: str | None
    bot_login: Callable[[], str]  # read when needed (the forge may ask GitHub)
    log_tail: BreakerLogTail

    def state(self) -> BreakerState:
        """The breaker as breaker.json says now (the CLI may have reset it); see breaker_state."""
        return breaker_state(self.state_dir, self.log_tail)

    def record(self, incident: Incident, now: datetime) -> BreakerState:
        """Count one incident in the breaker (audit, trip, incident issue); the new state."""
        with breaker_update(self.state_dir) as bf:
            bf.state, actions = record_incident(bf.state, incident, now, self.config.breaker)
            self.apply(bf, actions, now)
            return bf.state

    def apply(
        self,
        bf: BreakerFile,
        actions: Sequence[Action],
        now: datetime,
        *,
        audit: Mapping[str, Any] | None = None,
        reply_to: tuple[int, int] | None = None,
    ) -> None:
        """Do what decide asked: audit first (plus `audit` fields), then the incident issue
        writes (a REPLY goes to comment `reply_to` = (issue number, comment id))."""
        for a in actions:
            if a.kind is ActionKind.AUDIT:
                self.actions_log.append({**a.payload, **(audit or {})}, now=now)
        for a in actions:
            try:
                self._write(bf, a, now, reply_to)
            except ForgeError as exc:  # the state is recorded; the issue is retried next tick
                log.warning("breaker.issue_failed", action=a.kind.value, error=str(exc)[:200])

    def _write(
        self, bf: BreakerFile, a: Action, now: datetime, reply_to: tuple[int, int] | None
    ) -> None:
        repo, p = self.decision_repo, dict(a.payload)
        if not repo:
            return
        if a.kind is ActionKind.OPEN_INCIDENT_ISSUE:
            issue = self.forge.ensure_issue(
                repo, {"kind": INCIDENT, "key": p["key"]}, p["title"], p["body"], p["labels"]
            )
            bf.incident_issue = {"key": p["key"], "number": issue.number, "open": True}
            log.info("breaker.issue_opened", issue=issue.number)
        elif a.kind is ActionKind.UPDATE_INCIDENT_ISSUE and bf.incident_issue:
            self.forge.comment_once(
                repo,
                int(bf.incident_issue["number"]),
                {"kind": "incident-update", "key": f"{p['key']}:{utc_iso(now)}"},
                p["comment"],
            )
        elif a.kind is ActionKind.CLOSE_INCIDENT_ISSUE:
            open_issue = bf.incident_issue
            if open_issue and open_issue.get("key") == p["key"]:
                self.forge.close_issue(repo, int(open_issue["number"]), p["comment"])
                open_issue["open"] = False
        elif a.kind is ActionKind.REPLY and reply_to is not None:
            number, comment_id = reply_to
            self.forge.comment_once(
                repo, number, {"kind": "reply", "key": f"comment:{comment_id}"}, p["body"]
            )

    def api_failures(self, now: datetime, report: Report | None) -> None:
        """API errors in API_FAIL_TICKS ticks in a row count as one incident."""
        s = self.store
        s["api_fail_streak"] = (
            s["api_fail_streak"] + 1 if report is not None and report.errors else 0
        )
        s.save()
        if s["api_fail_streak"] == API_FAIL_TICKS and report is not None:
            detail = f"{API_FAIL_TICKS} ticks in a row with errors; last: {report.errors[-1]}"
            self.record(Incident(now, IncidentKind.API_FAILURES, detail[:300]), now)

    def sync_issue(self, now: datetime, report: Report | None = None) -> None:
        """Keep the incident issue in line with the state: open one for a trip, poll `/breaker
        reset`, close what a CLI reset left to close."""
        repo = self.decision_repo
        if repo is None:
            return
        with breaker_update(self.state_dir) as bf:
            for item in list(bf.to_close):
                issue = bf.incident_issue
                if issue and issue.get("key") == item.get("key") and issue.get("open"):
                    self.forge.close_issue(repo, int(issue["number"]), str(item.get("comment", "")))
                    issue["open"] = False
                bf.to_close.remove(item)
            if not bf.state.tripped:
                return
            number = self._incident_issue(bf, repo, now)
            self._read_commands(bf, repo, number, now)

    def _incident_issue(self, bf: BreakerFile, repo: str, now: datetime) -> int:
        """The incident issue of the current trip (opened when there is none yet)."""
        state = bf.state
        key = state.incident_key
        issue = bf.incident_issue
        if not issue or issue.get("key") != key:
            cfg = self.config.breaker
            opened = self.forge.ensure_issue(
                repo,
                {"kind": INCIDENT, "key": key},
                f"Circuit breaker tripped: {len(state.incidents)} incidents "
                f"in {cfg.window_hours:g} h",
                incident_issue_body(state, now, cfg),
                [Label.INCIDENT.value],
            )
            issue = bf.incident_issue = {"key": key, "number": opened.number, "open": True}
        return int(issue["number"])

    def _read_commands(self, bf: BreakerFile, repo: str, number: int, now: datetime) -> None:
        """Owners' `/breaker reset` comments on the incident issue (each read once)."""
        s = self.store
        handled = set(s["breaker_comments"])
        owners = {o.lower() for o in self.config.owners}
        for c in self.forge.comments(repo, number):
            if c.id in handled:
                continue
            handled.add(c.id)
            if c.user.lower() == self.bot_login().lower():
                continue
            cmd = parse_command(c.body)
            if cmd is None:
                continue
            base = {"issue": f"{repo}#{number}", "user": c.user, "comment_id": c.id}
            ignored = edit_reason(c.edited)
            if not ignored and cmd.kind is not CommandKind.BREAKER_RESET:
                ignored = "only /breaker reset counts on the incident issue"
            if ignored:
                self.actions_log.append(
                    {"action": "command_ignored", **base, "command": cmd.line, "reason": ignored},
                    now=now,
                )
                continue
            bf.state, actions = reset(bf.state, c.user, owners, now)
            self.apply(bf, actions, now, audit={"via": "comment", **base}, reply_to=(number, c.id))
            if not bf.state.tripped:
                break
        s["breaker_comments"] = sorted(handled)
        s.save()


def breaker_state(state_dir: Path, log_tail: BreakerLogTail) -> BreakerState:
    """The breaker as breaker.json in `state_dir` says now.

    A missing breaker.json while the audit log says the breaker is tripped (no reset since)
    is refused: deleting the file must not close the breaker."""
    bf = read_breaker(state_dir)
    path = Path(state_dir) / BREAKER_FILE
    if not bf.state.tripped and not path.exists() and log_tail.tripped():
        raise StateError(
            f"{path} is missing but actions.jsonl says the breaker "
            "is tripped and was never reset: restore the file (never closed silently)"
        )
    return bf.state


def owners_reset(
    state_dir: Path, actor: str, owners: Iterable[str], now: datetime, actions_log: AuditLog
) -> tuple[bool, str]:
    """The CLI reset: (done, message). The daemon closes the incident issue on its next tick."""
    with breaker_update(state_dir) as bf:
        bf.state, actions = reset(bf.state, actor, owners, now)
        message = ""
        for a in actions:
            p = dict(a.payload)
            if a.kind is ActionKind.AUDIT:
                actions_log.append({**p, "via": "cli"}, now=now)
                message = message or str(p.get("reason", ""))
            elif a.kind is ActionKind.REPLY:
                return False, str(p["body"])
            elif a.kind is ActionKind.CLOSE_INCIDENT_ISSUE:
                bf.to_close.append({"key": p["key"], "comment": p["comment"]})
        if any(a.payload.get("action") == "breaker.reset" for a in actions):
            return True, f"breaker reset by {actor}"
        return True, message or "breaker is not tripped"

"""One tick of the daemon: gather → decide → record → act for every supervised repo (SPEC 7).

Steps, each idempotent: 0 reconcile actions left "attempted" by a crash; 1 poll open PRs;
2 reclassify what changed, publish L1.C3, open/update decision issues; 3 poll ballots and
apply owners' votes; 4 merge what may merge; 5 auto-close passive reviews (and notify owners
of escalations); 6 burn-in and 7 probes/breaker (hooks for the safety-net issue); 8 metrics.
Decisions come from the pure core (capdaemon.classify, capdaemon.decide); every write goes
through the Forge, after its audit record is fsynced.

This module holds the Ticker and the tick loop; the steps are its mixins: gather (steps 1-2
reads), publish (step 2 writes), issues, ballots (step 3), merging (steps 0 and 4); shared
records and pure helpers are in tickdata.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capdaemon.audit import AuditLog, log_paths
from capdaemon.capability.model import CapabilityError, CapabilitySnapshot
from capdaemon.channels.notify import notify_tick
from capdaemon.config import Config
from capdaemon.daemon import integrity, safety, texts
from capdaemon.daemon.ballots import BallotsMixin
from capdaemon.daemon.botstate import Metrics, PRStore
from capdaemon.daemon.budget import TickBudget
from capdaemon.daemon.gather import GatherMixin
from capdaemon.daemon.issues import IssuesMixin
from capdaemon.daemon.merging import MergingMixin
from capdaemon.daemon.progress import PROGRESS_SECONDS, Progress
from capdaemon.daemon.publish import PublishMixin
from capdaemon.daemon.tickdata import (
    BALLOT,
    BALLOT_REREAD,
    CHECK_READING_RULES,
    CRASH_ENV,
    GATHER_CHUNK,
    GATHER_WORKERS,
    POLICY_FILE,
    REVIEW,
    SCOPE,
    WATCHED_KINDS,
    TickReport,
    _config_json,
    _digest,
    _iso,
    _rule_identity,
    _Seen,
    _Stopped,
    auto_revert_floor,
    firm_d,
    issue_text_hash,
    required_checks,
    without_stale_auto_revert,
)
from capdaemon.decide.merge import RequiredCheck
from capdaemon.forge.errors import ForgeError, RateLimited
from capdaemon.forge.types import IssueActivity
from capdaemon.globs import GlobSet
from capdaemon.logging import get_logger
from capdaemon.model import CheckRun, Quadrant
from capdaemon.stores.capabilities import load_snapshot
from capdaemon.stores.escalations import list_escalations

__all__ = [
    "BALLOT",
    "BALLOT_REREAD",
    "CHECK_READING_RULES",
    "CRASH_ENV",
    "GATHER_CHUNK",
    "GATHER_WORKERS",
    "POLICY_FILE",
    "REVIEW",
    "SCOPE",
    "WATCHED_KINDS",
    "TickReport",
    "Ticker",
    "auto_revert_floor",
    "firm_d",
    "issue_text_hash",
    "required_checks",
    "without_stale_auto_revert",
]


class Ticker(GatherMixin, PublishMixin, IssuesMixin, BallotsMixin, MergingMixin):
    """Holds the config, Forge and state of one daemon and runs ticks (one at a time)."""

    def __init__(
        self,
        config: Config,
        state_dir: Path,
        forge: Any,
        *,
        rules: Iterable[Any] = (),
        env: Mapping[str, str] | None = None,
        heartbeat: Callable[[], object] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.config = config
        self.state_dir = Path(state_dir)
        self.forge = forge
        if getattr(forge, "state_dir", False) is None:
            forge.state_dir = self.state_dir  # over-long bodies are saved here in full
        self.rules = tuple(rules)
        self._crash_after = (os.environ if env is None else env).get(CRASH_ENV, "")
        self._heartbeat = heartbeat or (lambda: None)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._stop = threading.Event()
        self._busy = threading.Lock()
        self.log = get_logger("capdaemon.tick")
        classifier_path, actions_path = log_paths(self.state_dir)
        self.classifier_log = AuditLog(classifier_path)  # corrupt → AuditCorruptError (StateError)
        self.actions_log = AuditLog(actions_path)
        self.prs = PRStore(self.state_dir)
        self.metrics = Metrics(self.state_dir)
        self.work_budget = TickBudget(self.state_dir, config.github)
        list_escalations(self.state_dir)  # a corrupt escalation record refuses start-up too
        self.policy_hash = _digest(_config_json(config), [_rule_identity(r) for r in self.rules])
        self.shadow = config.mode == "shadow"
        self._caps: dict[str, CapabilitySnapshot | CapabilityError] = {}
        cc = config.classifier
        # full texts for config files (schema vs values) and the bot's source (enclosing functions)
        self._contents_for = GlobSet.of(
            (*cc.config_file_globs, f"{cc.source_root.rstrip('/')}/**")
        ).match
        self._required: dict[str, tuple[RequiredCheck, ...]] = {}
        # per tick: check runs read in the gather phase, the decision repo's issue activity,
        # and the gather threads (reads only)
        self._tick_runs: dict[tuple[str, str], list[CheckRun]] = {}
        self._activity: dict[int, IssueActivity] | None = None
        self._activity_ok = False
        self._ballot_unread: set[str] = set()  # ballots whose read failed this tick: no merge
        self._pool: ThreadPoolExecutor | None = None
        # per tick: each repo's effective config (central + its base branch's .capdaemon.yml),
        # its policy hash, repos whose policy does not parse (no merges), and the decision
        # issues someone else edited or closed (restored this tick)
        self._effective: dict[str, Config] = {}
        self._repo_policy: dict[str, str] = {}
        self._policy_errors: dict[str, str] = {}
        self._policy_error_audited: dict[str, str] = {}
        self._tampered: dict[str, dict[str, str]] = {}
        self._decision_writes = False
        self._access_checked = False
        self.progress_every = PROGRESS_SECONDS  # a long tick reports "k of N" this often
        self.progress = Progress(self.log, every=self.progress_every)

    # ------------------------------------------------------------------ control
    def request_stop(self) -> None:
        """Ask the running tick to return after its current step (signal-safe)."""
        self._stop.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no tick is running; False on timeout."""
        if self._busy.acquire(timeout=-1 if timeout is None else timeout):
            self._busy.release()
            return True
        return False

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise _Stopped

    def _crash(self, point: str) -> None:
        """Test hook: die like `kill -9` at a named point (env CAPDAEMON_CRASH_AFTER, read once
        when the Ticker is built; never set in production). Points: `audit:merge` (after the
        "attempted" record), `act:merge` (after GitHub merged), `done:merge` (after the "done"
        record, before prs.json drops the pending merge), `audit:close`."""
        if self._crash_after == point:
            os._exit(137)

    @property
    def bot_login(self) -> str:
        """Who the bot acts as (the forge's login, else the configured one)."""
        return getattr(self.forge, "login", None) or self.config.bot_login

    @property
    def decision_repo(self) -> str | None:
        """Where decision issues go."""
        return self.config.ballot_repo

    # ------------------------------------------------------------------ the tick
    def tick(self, now: datetime | None = None) -> TickReport:
        """Run steps 0-8 once. `now` (aware) is injected by tests and the demo."""
        with self._busy:
            now = now or self._clock()
            if now.tzinfo is None:
                raise ValueError("tick(now=...) needs an aware datetime")
            started = time.monotonic()
            report = TickReport(started_at=now)
            self.forge.new_tick()
            self._caps = {}
            self._required = {}
            self._tick_runs = {}
            self._activity = None
            self._activity_ok = False
            self._ballot_unread = set()
            self._effective = {}
            self._repo_policy = {}
            self._policy_errors = {}
            self._tampered = {}
            self._decision_writes = False
            before = self._budget()
            self.progress = Progress(self.log, every=self.progress_every)
            self.work_budget.start(now, before.get("remaining"), before.get("limit"))
            self.log.info("tick.start", at=_iso(now), repos=len(self.config.repos))
            try:
                integrity.gate(self, now, report)  # a corrupt log: an incident, then no tick
                self._check_stop()
                if not self._access_checked:
                    self._access_checked = True
                    self.check_decision_access(now, report)
                self._step_reconcile(now, report)
                self._find_tampered(report)
                self._restore_reviews(now, report)
                seen = self._step_poll_and_classify(now, report)  # steps 1-2
                if self._decision_writes:
                    self._activity = None  # step 3 lists the issues again, after our writes
                self._check_stop()
                self._step_ballots(seen, now, report)  # step 3
                self._check_stop()
                self._step_merge(seen, now, report)  # step 4
                self._check_stop()
                self._step_passive_reviews(now, report)  # step 5
                self._step_escalations(now, report)
                self._check_stop()
                self._step_burn_in(seen, now, report)  # step 6 (hook)
                self._step_probes_and_breaker(now, report)  # step 7 (hook)
            except _Stopped:
                report.interrupted = True
                self.log.info("tick.interrupted")
            except RateLimited as exc:
                report.errors.append(f"rate limited: {exc}")
                self.log.warning("tick.rate_limited", wait_seconds=exc.wait_seconds)
            finally:
                if self._pool is not None:
                    self._pool.shutdown(wait=True, cancel_futures=True)
                    self._pool = None
                safety.save(self)
                self.prs.compact()
                report.seconds = round(time.monotonic() - started, 3)
                self._step_metrics(report, before, now)  # step 8
                notify_tick(self, now, report)  # owners' channels, after the GitHub writes
            self.log.info(
                "tick.done",
                seconds=report.seconds,
                prs_seen=report.prs_seen,
                classified=len(report.classified),
                merged=len(report.merged),
                errors=len(report.errors),
                api_requests=report.api_requests,
            )
            return report

    # ------------------------------------------------------------------ start-up
    def check_decision_access(self, now: datetime, report: TickReport | None = None) -> list[str]:
        """Warn (log, audit → digest "attention") when a non-owner, non-bot login can write to
        the decision repo (R5). Candidates: its collaborators when listable, else the PR
        authors (agents) the daemon knows. Returns "login (role)" strings; never blocks."""
        from capdaemon.daemon.access import decision_repo_writers

        authors = {r.author for r in self.prs.records.values() if r.author}
        try:
            writers, how = decision_repo_writers(self.forge, self.config, authors)
        except RateLimited:
            raise
        except Exception as exc:  # a warning only: never stops the daemon
            self.log.warning("access.check_failed", error=str(exc)[:300])
            return []
        found = [f"{w.login} ({w.role})" for w in writers]
        if found:
            self.actions_log.append(
                {
                    "action": "access.decision_repo_writers",
                    "repo": self.decision_repo,
                    "writers": found,
                    "how": how,
                },
                now=now,
            )
            self.log.warning(
                "access.decision_repo_writers", repo=self.decision_repo, writers=found, how=how
            )
        return found

    # ------------------------------------------------------------------ steps 6-7 (hooks)
    def _step_burn_in(self, seen: list[_Seen], now: datetime, report: TickReport) -> None:
        """Step 6: advance L4 burn-in clocks (rejections are read from the "rejection" records)."""
        safety.step_burn_in(self, seen, now, report)

    def _step_probes_and_breaker(self, now: datetime, report: TickReport) -> None:
        """Step 7: post-merge probes, auto-revert, branch protection drift and the breaker."""
        safety.step_probes_and_breaker(self, now, report)

    # ------------------------------------------------------------------ step 8
    def _budget(self) -> dict[str, Any]:
        try:
            return dict(self.forge.rate_budget())
        except ForgeError:
            return {}

    def _step_metrics(self, report: TickReport, before: Mapping[str, Any], now: datetime) -> None:
        after = self._budget()
        used = None
        if before.get("requests") is not None and after.get("requests") is not None:
            used = int(after["requests"]) - int(before["requests"])
        report.api_requests, report.api_remaining = used, after.get("remaining")
        self.work_budget.finish(
            now,
            _delta(before, after, "writes"),
            (used or 0) - _delta(before, after, "not_modified"),
        )
        open_by_q = {q.value: 0 for q in Quadrant}
        for rec in self.prs.records.values():
            if rec.state == "open" and rec.quadrant:
                open_by_q[rec.quadrant] += 1
        self.metrics.update(
            last_tick_at=_iso(now),
            last_tick_seconds=report.seconds,
            ticks=int(self.metrics.data.get("ticks", 0)) + 1,
            prs_seen=report.prs_seen,
            classified_last_tick=len(report.classified),
            merged_last_tick=len(report.merged),
            errors_last_tick=len(report.errors),
            open_by_quadrant=open_by_q,
            api_requests_used=used,
            api_remaining=after.get("remaining"),
            api_limit=after.get("limit"),
            backlog_left=report.backlog_left,
            budget=dict(self.work_budget.figures),
            mode=self.config.mode,
        )
        self.metrics.save()

    # ------------------------------------------------------------------ helpers
    def _load_cap(self, task_id: str) -> CapabilitySnapshot:
        """A task's capability snapshot, verified against the audit log once per tick."""
        if task_id not in self._caps:
            try:
                self._caps[task_id] = load_snapshot(self.state_dir, task_id)
            except CapabilityError as exc:
                self._caps[task_id] = exc
        found = self._caps[task_id]
        if isinstance(found, CapabilityError):
            raise found
        return found

    def _issue_url(self, number: int | None) -> str:
        """An issue's web address when the API base is github.com's, else "" (a raw ref is used)."""
        return texts.issue_web_url(self.config.github.base_url, self.decision_repo, number)

    def _error(self, report: TickReport, event: str, message: str, **kv: Any) -> None:
        report.errors.append(message)
        self.log.warning(event, error=message, **kv)


def _delta(before: Mapping[str, Any], after: Mapping[str, Any], key: str) -> int:
    """How much a forge counter grew during the tick (0 when the forge does not say)."""
    a, b = after.get(key), before.get(key)
    return int(a) - int(b) if isinstance(a, int) and isinstance(b, int) else 0

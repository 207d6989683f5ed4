"""One tick of the daemon: gather → decide → record → act for every supervised repo (SPEC 7).

Steps, each idempotent: 0 reconcile actions left "attempted" by a crash; 1 poll open PRs;
2 reclassify what changed, publish L1.C3, open/update decision issues; 3 poll ballots and
apply owners' votes; 4 merge what may merge; 5 auto-close passive reviews (and notify owners
of escalations); 6 burn-in and 7 probes/breaker (the SafetyNet); 8 metrics.
Decisions come from the pure core (capdaemon.classify, capdaemon.decide); every write goes
through the Forge, after its audit record is fsynced.

This module holds the Ticker: it builds the daemon's long-lived collaborators once (TickDeps,
in context, with the SafetyNet as `deps.safety`) and runs each tick on a fresh TickContext.
Every step is a function of one `Tick` (context.py); steps.py's `STEPS` (a full tick) and
`TARGETED_STEPS` (steps 1-4 for the repos a change detector flagged) list them in order:
poll (steps 1-2) with gather (its reads) and publish (its writes), each PR one `TickPR`;
issues, ballots (step 3), merging (steps 0 and 4), the safety net. Shared records and pure
helpers are in tickdata and prstate.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.audit import AuditLog, log_paths
from capdaemon.classify.ruletable import CHECK_READING_RULES
from capdaemon.config import Config
from capdaemon.daemon.core.budget import TickBudget
from capdaemon.daemon.core.context import (
    Tick,
    TickContext,
    TickDeps,
    bot_login_of,
    crash_at,
)
from capdaemon.daemon.core.progress import PROGRESS_SECONDS, Progress
from capdaemon.daemon.core.reactions import save_reactions, save_targeted
from capdaemon.daemon.core.steps import STEPS, TARGETED_STEPS, TickReader, run_steps
from capdaemon.daemon.core.steptimes import StepTimes
from capdaemon.daemon.core.tickdata import (
    BALLOT,
    BALLOT_REREAD,
    CRASH_ENV,
    GATHER_CHUNK,
    GATHER_WORKERS,
    REVIEW,
    SCOPE,
    WATCHED_KINDS,
    TickReport,
    _config_json,
    _digest,
    _iso,
    _rule_identity,
    _Stopped,
    auto_revert_floor,
    firm_d,
    issue_text_hash,
    required_checks,
    without_stale_auto_revert,
)
from capdaemon.daemon.safety.net import SafetyNet
from capdaemon.forge.appclock import DRIFT_REPORT_SECONDS, describe_offset
from capdaemon.forge.errors import FORGE_FAILURES, RateLimited, TickAbort
from capdaemon.globs import GlobSet
from capdaemon.logging import get_logger
from capdaemon.model import Quadrant
from capdaemon.stores.botstate import Metrics, PRStore
from capdaemon.stores.escalations import list_escalations

if TYPE_CHECKING:
    from capdaemon.channels.onetap import TelegramDesk
    from capdaemon.classify.user_rules import UserRule
    from capdaemon.forge.port import ForgePort

__all__ = [
    "BALLOT",
    "BALLOT_REREAD",
    "CHECK_READING_RULES",
    "CRASH_ENV",
    "GATHER_CHUNK",
    "GATHER_WORKERS",
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


class Ticker:
    """One daemon's tick runner: builds its collaborators once (TickDeps), then runs ticks one
    at a time, each on a fresh TickContext. It is also the Telegram desk's host (DeskHost)."""

    def __init__(
        self,
        config: Config,
        state_dir: Path,
        forge: ForgePort,
        *,
        rules: Iterable[UserRule] = (),
        env: Mapping[str, str] | None = None,
        heartbeat: Callable[[], object] | None = None,
        clock: Callable[[], datetime] | None = None,
        desk: TelegramDesk | None = None,
        before_tick: Callable[[Ticker, datetime], list[str]] | None = None,
    ) -> None:
        self.config = config
        self.state_dir = Path(state_dir)
        self.forge = forge
        self.rules = tuple(rules)
        self.clock = clock or (lambda: datetime.now(UTC))
        self.busy = threading.Lock()  # held while a tick (or a Telegram tap) runs
        self.log = get_logger("capdaemon.tick")
        classifier_path, actions_path = log_paths(self.state_dir)
        self.classifier_log = AuditLog(classifier_path)  # corrupt → AuditCorruptError (StateError)
        self.actions_log = AuditLog(actions_path)
        self.prs = PRStore(self.state_dir)
        self.metrics = Metrics(self.state_dir)
        list_escalations(self.state_dir)  # a corrupt escalation record refuses start-up too
        crash_after = (os.environ if env is None else env).get(CRASH_ENV, "")
        # the safety net, built once; the Telegram desk reads it as `ticker.safety` (DeskHost)
        self.safety = self._safety(config, crash_after, desk)
        self.deps = TickDeps(
            config=config,
            state_dir=self.state_dir,
            forge=forge,
            rules=self.rules,
            log=self.log,
            classifier_log=self.classifier_log,
            actions_log=self.actions_log,
            prs=self.prs,
            metrics=self.metrics,
            work_budget=TickBudget(self.state_dir, config.github),
            policy_hash=config_hash(config, self.rules),
            contents_for=_contents_for(config),
            heartbeat=heartbeat or (lambda: None),
            safety=self.safety,
            crash_after=crash_after,
        )
        # the config reload (service.reload.Reloader): applied at the start of each full tick
        self._before_tick = before_tick
        self.progress_every = PROGRESS_SECONDS  # a long tick reports "k of N" this often
        self._ctx = self.new_context(datetime.now(UTC))

    def apply_config(self, config: Config, rules: Iterable[UserRule]) -> None:
        """Run the next ticks on `config` (between two ticks: the caller holds no tick). The
        state, the logs and the Telegram desk carry over; the parts reading the config are
        built again for it. Its `github:` must be the running one (a restart changes that)."""
        self.config = config
        self.rules = tuple(rules)
        self.safety = self._safety(config, self.deps.crash_after, self.safety.channels.desk)
        self.deps = dataclasses.replace(
            self.deps,
            config=config,
            rules=self.rules,
            policy_hash=config_hash(config, self.rules),
            contents_for=_contents_for(config),
            safety=self.safety,
        )
        self._ctx = self.new_context(datetime.now(UTC))

    def _safety(self, config: Config, crash_after: str, desk: TelegramDesk | None) -> SafetyNet:
        logs, stores = (self.classifier_log, self.actions_log), (self.prs, self.metrics)
        return build_safety(config, self.state_dir, self.forge, logs, stores, crash_after, desk)

    def new_context(self, now: datetime) -> TickContext:
        """A fresh context for a tick starting at `now` (nothing an earlier tick read)."""
        progress = Progress(self.log, every=self.progress_every)
        return TickContext(TickReport(started_at=now), self.config, self.state_dir, progress)

    # ------------------------------------------------------------------ control
    def request_stop(self) -> None:
        """Ask the running tick to return after its current step (signal-safe)."""
        self.deps.stop.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no tick is running; False on timeout."""
        if self.busy.acquire(timeout=-1 if timeout is None else timeout):
            self.busy.release()
            return True
        return False

    @property
    def bot_login(self) -> str:
        """Who the bot acts as (the forge's login, else the configured one)."""
        return self.deps.bot_login

    @property
    def decision_repo(self) -> str | None:
        """Where decision issues go."""
        return self.deps.decision_repo

    @property
    def config_hash(self) -> str:
        """The hash of the running config and user rules (every classification records it)."""
        return self.deps.policy_hash

    @property
    def shadow(self) -> bool:
        """Shadow mode: decide and record, never merge or close."""
        return self.deps.shadow

    # ------------------------------------------------------------------ the tick
    def tick(self, now: datetime | None = None) -> TickReport:
        """Run steps 0-8 once. `now` (aware) is injected by tests and the demo."""
        with self.busy:
            return self._tick(now, None)

    def targeted_tick(self, repos: Iterable[str], now: datetime | None = None) -> TickReport | None:
        """A tick for just the repos a change detector flagged: their open PRs listed, decided,
        recorded and acted on (steps 1-4), under the same lock as the full tick — never a
        second writer. None, doing nothing, while another tick runs (the caller keeps the
        repos for its next look). The other steps, and PRs of other repos, stay with the full
        tick."""
        if not self.busy.acquire(blocking=False):
            return None
        try:
            if self.deps.stop.is_set():  # the daemon is stopping: nothing new starts
                return None
            return self._tick(now, frozenset(repos))
        finally:
            self.busy.release()

    def _tick(self, now: datetime | None, only: frozenset[str] | None) -> TickReport:
        """One tick under the held lock: every step (`only` None), or a targeted one."""
        now = now or self.clock()
        if now.tzinfo is None:
            raise ValueError("tick(now=...) needs an aware datetime")
        full = only is None
        reload = self._before_tick if full else None
        config_errors = reload(self, now) if reload is not None else []
        started = time.monotonic()
        self.forge.new_tick(full=full)
        before = self._budget()
        ctx = self._ctx = self.new_context(now)
        report = ctx.report
        tick = Tick(self.deps, ctx, now, self, TickReader(self.deps, ctx), only)
        report.config_errors.extend(config_errors)
        self.deps.work_budget.start(now, before.get("remaining"), before.get("limit"))
        event = "tick" if full else "tick.targeted"
        self.log.info(
            f"{event}.start", at=_iso(now), repos=sorted(only or ()) or len(self.config.repos)
        )
        self.safety.channels.start_tick(now)  # before the tick's first record
        times = StepTimes(self.forge, ctx.merge_waits)
        try:
            run_steps(tick, STEPS if full else TARGETED_STEPS, times)
        except _Stopped:
            report.interrupted = True
            self.log.info(f"{event}.interrupted")
        except RateLimited as exc:
            report.errors.append(f"rate limited: {exc}")
            self.log.warning(f"{event}.rate_limited", wait_seconds=exc.wait_seconds)
        finally:
            ctx.close_pool()
            self.safety.save()
            if full:
                self.prs.compact()
            report.seconds = round(time.monotonic() - started, 3)
            self._note_clock(report)
            if full:
                self._step_metrics(report, before, now)  # step 8
            else:
                self._spent(report, before, now)
                save_targeted(self.metrics, report, ctx.reactions, now)
            self.safety.channels.notify(now, report)  # owners' channels, after GitHub
        self._log_done(event, report, times)
        return report

    def serve_changed(self, repos: frozenset[str]) -> TickReport:
        """Inside the running full tick, on its thread and under its lock, at one of its safe
        points (handover.serve_changed): the targeted steps for the repos a change detector saw
        change, on a context of their own (a targeted tick that does not wait for the full
        tick's end). The forge's tick state (wait budget, memo) and the owners' notifications
        stay the full tick's; a stop request or a rate limit ends the full tick too."""
        now = self.clock()
        ctx = self.new_context(now)
        report = ctx.report
        tick = Tick(self.deps, ctx, now, self, TickReader(self.deps, ctx), repos)
        started, before = time.monotonic(), self._budget()
        self.log.info("tick.targeted.start", at=_iso(now), repos=sorted(repos), within="tick")
        times = StepTimes(self.forge, ctx.merge_waits)
        try:
            run_steps(tick, TARGETED_STEPS, times)
        finally:
            ctx.close_pool()
            self.safety.save()
            report.seconds = round(time.monotonic() - started, 3)
            report.api_requests = _used(before, self._budget())
            save_targeted(self.metrics, report, ctx.reactions, now)
        self._log_done("tick.targeted", report, times)
        return report

    def _log_done(self, event: str, report: TickReport, times: StepTimes) -> None:
        self.log.info(
            f"{event}.done",
            seconds=report.seconds,
            prs_seen=report.prs_seen,
            classified=len(report.classified),
            merged=len(report.merged),
            errors=len(report.errors),
            api_requests=report.api_requests,
            backlog_left=report.backlog_left,
            steps=times.summary(),
        )

    # ------------------------------------------------------------------ start-up
    def check_decision_access(self, now: datetime, report: TickReport | None = None) -> list[str]:
        """Warn (log, audit → digest "attention") when a non-owner, non-bot login can write to
        the decision repo (R5). Candidates: its collaborators when listable, else the PR
        authors (agents) the daemon knows. Returns "login (role)" strings; never blocks."""
        from capdaemon.daemon.issues.access import decision_repo_writers

        authors = {r.author for r in self.prs.records.values() if r.author}
        try:
            writers, how = decision_repo_writers(self.forge, self.config, authors)
        except TickAbort:
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

    # ------------------------------------------------------------------ step 8
    def _note_clock(self, report: TickReport) -> None:
        """GitHub's clock against ours (from the last answer's `Date`): in the summary, and a
        warning when it is off by DRIFT_REPORT_SECONDS or more."""
        report.config_hash = self.deps.policy_hash
        offset = getattr(getattr(self.forge, "transport", None), "clock_offset", None)
        if not isinstance(offset, (int, float)):
            return
        report.clock_offset_seconds = round(offset)
        if abs(offset) >= DRIFT_REPORT_SECONDS:
            self.log.warning(
                "tick.clock_drift",
                offset_seconds=round(offset),
                detail=describe_offset(offset),
                fix="enable time sync (timedatectl set-ntp true)",
            )

    def _budget(self) -> dict[str, Any]:
        try:
            return dict(self.forge.rate_budget())
        except FORGE_FAILURES:
            return {}

    def _spent(
        self, report: TickReport, before: Mapping[str, Any], now: datetime
    ) -> tuple[dict[str, Any], int | None, dict[str, Any]]:
        """What the tick spent, into the report and the work budget: (the forge's figures
        after it, requests sent, backlog figures)."""
        after = self._budget()
        used = _used(before, after)
        report.api_requests, report.api_remaining = used, after.get("remaining")
        backlog = {
            "backlog_left": report.backlog_left,
            "backlog_unread": report.backlog_unread,
            "backlog_waiting": dict(report.backlog_waiting),
        }
        self.deps.work_budget.finish(
            now,
            _delta(before, after, "writes"),
            (used or 0) - _delta(before, after, "not_modified"),
            backlog,
        )
        return after, used, backlog

    def _step_metrics(self, report: TickReport, before: Mapping[str, Any], now: datetime) -> None:
        after, used, backlog = self._spent(report, before, now)
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
            merged_total=int(self.metrics.data.get("merged_total", 0)) + len(report.merged),
            errors_last_tick=len(report.errors),
            open_by_quadrant=open_by_q,
            api_requests_used=used,
            api_remaining=after.get("remaining"),
            api_limit=after.get("limit"),
            **backlog,
            budget=dict(self.deps.work_budget.figures),
            mode=self.config.mode,
            clock_offset_seconds=report.clock_offset_seconds,
        )
        save_reactions(self.metrics, self._ctx.reactions, now)  # event → action, per kind
        self.metrics.save()


def config_hash(config: Config, rules: Iterable[UserRule]) -> str:
    """The hash of a config and its user rules that every classification records."""
    return _digest(_config_json(config), [_rule_identity(r) for r in rules])


def _contents_for(config: Config) -> Callable[[str], bool]:
    """Paths whose full text the classifier reads: config files (schema vs values) and the
    bot's source (enclosing functions)."""
    cc = config.classifier
    return GlobSet.of((*cc.config_file_globs, f"{cc.source_root.rstrip('/')}/**")).match


def build_safety(
    config: Config,
    state_dir: Path,
    forge: ForgePort,
    logs: tuple[AuditLog, AuditLog],
    stores: tuple[PRStore, Metrics],
    crash_after: str,
    desk: TelegramDesk | None = None,
) -> SafetyNet:
    """The daemon's SafetyNet, built before the TickDeps that carry it (logs: classifier,
    actions; stores: PRs, metrics). What it reads per tick (task capabilities, owners under
    the repo's policy, required checks, the decision repo's issue activity) each step
    receives from the tick now running (`Tick.reads`): nothing one tick read is seen by the
    next."""
    return SafetyNet.build(
        config=config,
        state_dir=state_dir,
        forge=forge,
        classifier_log=logs[0],
        actions_log=logs[1],
        prs=stores[0],
        metrics=stores[1],
        bot_login=partial(bot_login_of, forge, config),
        crash=partial(crash_at, crash_after),
        desk=desk,
    )


def _used(before: Mapping[str, Any], after: Mapping[str, Any]) -> int | None:
    """Requests sent between two of the forge's budget readings (None: it does not count)."""
    if before.get("requests") is None or after.get("requests") is None:
        return None
    return int(after["requests"]) - int(before["requests"])


def _delta(before: Mapping[str, Any], after: Mapping[str, Any], key: str) -> int:
    """How much a forge counter grew during the tick (0 when the forge does not say)."""
    a, b = after.get(key), before.get(key)
    return int(a) - int(b) if isinstance(a, int) and isinstance(b, int) else 0

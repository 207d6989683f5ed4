"""What a tick works with: `TickDeps` (built once per daemon), `TickContext` (new each tick),
and `Tick`, the one argument of every step."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from capdaemon.audit import AuditLog
from capdaemon.capability.model import CapabilityError, CapabilitySnapshot
from capdaemon.channels.onetap import DeskHost
from capdaemon.config import Config
from capdaemon.config.policy import RepoPolicy as PolicyAdditions
from capdaemon.daemon.core.budget import TickBudget
from capdaemon.daemon.core.changes import ChangedRepos
from capdaemon.daemon.core.progress import Progress
from capdaemon.daemon.core.reactions import ReactionClock
from capdaemon.daemon.core.tickdata import TickReport, _Stopped
from capdaemon.daemon.issues import texts
from capdaemon.daemon.merging.mergewait import MergeabilityWaits
from capdaemon.daemon.polling.tickpr import TickPR
from capdaemon.decide.merge import RequiredCheck
from capdaemon.forge.types import IssueActivity
from capdaemon.model import CheckRun
from capdaemon.stores.botstate import Metrics, PRStore
from capdaemon.stores.capabilities import load_snapshot, snapshot_ids

if TYPE_CHECKING:
    from capdaemon.classify.user_rules import UserRule
    from capdaemon.daemon.safety.common import TickReads
    from capdaemon.daemon.safety.net import SafetyNet
    from capdaemon.forge.port import ForgePort


def bot_login_of(forge: ForgePort, config: Config) -> str:
    """Who the bot acts as: the forge's login, else the configured one."""
    return getattr(forge, "login", None) or config.bot_login


def crash_at(crash_after: str, point: str) -> None:
    """Die like `kill -9` when `point` is the test hook's named point (see TickDeps.crash)."""
    if crash_after == point:
        os._exit(137)


@dataclass
class TickDeps:
    """The long-lived collaborators of one daemon: config, state, forge, stores and logs."""

    config: Config
    state_dir: Path
    forge: ForgePort
    rules: tuple[UserRule, ...]
    log: Any  # a structlog BoundLogger (capdaemon.logging.get_logger)
    classifier_log: AuditLog
    actions_log: AuditLog
    prs: PRStore
    metrics: Metrics
    work_budget: TickBudget
    policy_hash: str
    contents_for: Callable[[str], bool]
    heartbeat: Callable[[], object]
    safety: SafetyNet  # the daemon's safety net (capdaemon.daemon.core.tick.build_safety)
    crash_after: str = ""
    stop: threading.Event = field(default_factory=threading.Event)
    # repo → the policy hash whose parse error is already in the actions log (once per text)
    policy_error_audited: dict[str, str] = field(default_factory=dict)
    # what is done once per daemon and config (e.g. "access": the decision repo's writers)
    once: set[str] = field(default_factory=set)
    # (repo, number) → the head whose merge waits only on checks, and the feed that may show
    # them turn green ("check-runs", or "checks": runs and statuses; decide.merge's
    # waiting_check_feed): the change detector watches it between ticks; in the order they
    # started waiting on that head (the newest last)
    waiting_checks: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    # the repos a change detector saw change and no tick has taken yet (it adds them; a
    # targeted tick or a full tick's safe points take them; empty with no detector)
    changed: ChangedRepos = field(default_factory=ChangedRepos)

    @property
    def shadow(self) -> bool:
        """Shadow mode: decide and record, never merge or close."""
        return self.config.mode == "shadow"

    @property
    def decision_repo(self) -> str | None:
        """Where decision issues go."""
        return self.config.ballot_repo

    @property
    def bot_login(self) -> str:
        """Who the bot acts as (the forge's login, else the configured one)."""
        return bot_login_of(self.forge, self.config)

    def check_stop(self) -> None:
        """Leave the tick (raise _Stopped) when a stop was requested."""
        if self.stop.is_set():
            raise _Stopped

    def crash(self, point: str) -> None:
        """Test hook: die like `kill -9` at a named point (env CAPDAEMON_CRASH_AFTER, read once
        when the Ticker is built; never set in production). Points, for each irreversible
        write (`merge`, `close`, `revert`; see capdaemon.daemon.merging.intent): `audit:` (after the
        "attempted" record), `act:` (after GitHub answered), `done:` (after the "done" record,
        before the kept intent is dropped)."""
        crash_at(self.crash_after, point)

    def issue_url(self, number: int | None) -> str:
        """An issue's web address when the API base is github.com's, else "" (a raw ref is used)."""
        return texts.issue_web_url(self.config.github.base_url, self.decision_repo, number)


@dataclass
class RepoPolicy:
    """One supervised repo's policy as read this tick (central config + its .capdaemon.yml)."""

    effective: Config
    policy_hash: str
    error: str | None = None  # the parse error (then `effective` is the central config)
    base: str = ""  # the base branch the policy was read from
    additions: PolicyAdditions | None = None  # what the .capdaemon.yml adds (None: no file)


@dataclass
class TickContext:
    """Everything one tick has read and decided; a new one for every tick."""

    report: TickReport
    config: Config
    state_dir: Path
    progress: Progress
    caps: dict[str, CapabilitySnapshot | CapabilityError] = field(default_factory=dict)
    required: dict[str, tuple[RequiredCheck, ...]] = field(default_factory=dict)
    # check runs read in the gather phase, by (repo, head sha)
    tick_runs: dict[tuple[str, str], list[CheckRun]] = field(default_factory=dict)
    activity: dict[int, IssueActivity] | None = None  # the decision repo's issue activity
    activity_ok: bool = False
    ballot_unread: set[str] = field(default_factory=set)  # ballots whose read failed: no merge
    pool: ThreadPoolExecutor | None = None  # the gather threads (reads only)
    policies: dict[str, RepoPolicy] = field(default_factory=dict)  # repo → its policy
    tampered: dict[str, dict[str, str]] = field(default_factory=dict)  # ref → kind → what
    cap_index: tuple[list[CapabilitySnapshot], str | None] | None = None  # see all_caps
    tasks_by_author: dict[str, set[str]] | None = None  # lower-cased login → tasks its PRs linked
    decision_writes: bool = False  # an issue was written: step 3 lists the issues again
    merge_waits: MergeabilityWaits = field(default_factory=MergeabilityWaits)  # unknown → re-read
    reactions: ReactionClock = field(default_factory=ReactionClock)  # event → action times
    seen: list[TickPR] = field(default_factory=list)  # the open PRs steps 1-2 handled
    polled: bool = False  # steps 1-2 are done: changes seen now are served apart (hand_off)
    owed: set[str] = field(default_factory=set)  # repos taken from the detector, not yet served
    handed_off: set[str] = field(default_factory=set)  # repos served apart inside this tick

    def config_for(self, repo: str) -> Config:
        """The effective config of a supervised repo this tick (central config until polled)."""
        found = self.policies.get(repo)
        return found.effective if found is not None else self.config

    def policy_error(self, repo: str) -> str | None:
        """Why the repo's .capdaemon.yml does not parse this tick (None: it does, or none)."""
        found = self.policies.get(repo)
        return found.error if found is not None else None

    def load_cap(self, task_id: str) -> CapabilitySnapshot:
        """A task's capability snapshot, verified against the audit log once per tick."""
        if task_id not in self.caps:
            try:
                self.caps[task_id] = load_snapshot(self.state_dir, task_id)
            except CapabilityError as exc:
                self.caps[task_id] = exc
        found = self.caps[task_id]
        if isinstance(found, CapabilityError):
            raise found
        return found

    def all_caps(self) -> tuple[list[CapabilitySnapshot], str | None]:
        """Every dispatched snapshot (expired ones too), read once per tick, and why the store
        could not be read (an unreadable folder or a corrupt or tampered snapshot), if so."""
        if self.cap_index is None:
            snaps: list[CapabilitySnapshot] = []
            errors: list[str] = []
            try:
                ids = snapshot_ids(self.state_dir)
            except OSError as exc:
                ids, errors = [], [f"capabilities folder: {exc}"]
            for task_id in ids:
                try:
                    snaps.append(self.load_cap(task_id))
                except CapabilityError as exc:
                    errors.append(f"{task_id}: {exc}")
            self.cap_index = (snaps, "; ".join(errors)[:300] or None)
        return self.cap_index

    def hand_off(self, repos: Collection[str]) -> None:
        """`repos` are served apart, inside this tick, on what is read now: this tick's later
        steps leave their PRs alone (what it read of them is older), and the decision repo's
        issue list is read again when next needed (the work apart may have written to it)."""
        gone = set(repos)
        self.handed_off |= gone
        self.seen = [s for s in self.seen if s.pr.repo not in gone]
        self.tick_runs = {k: v for k, v in self.tick_runs.items() if k[0] not in gone}
        self.activity, self.activity_ok = None, False

    def close_pool(self) -> None:
        """Stop the gather threads (at the end of the tick)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class TickHost(DeskHost, Protocol):
    """The daemon a tick runs in (the Ticker): the Telegram desk's host, and its start-up
    check of who can write to the decision repo."""

    def check_decision_access(self, now: datetime, report: TickReport | None = None) -> list[str]:
        """Warn when a non-owner can write to the decision repo; the logins found."""
        ...

    def serve_changed(self, repos: frozenset[str]) -> TickReport:
        """Inside the running full tick: the targeted steps for `repos`, on a context of their
        own; what they saw and did."""
        ...


@dataclass(frozen=True)
class Tick:
    """One tick as every step receives it: the daemon's collaborators (`deps`), what this tick
    read and decided so far (`ctx`, with its report), the tick's time, the daemon it runs in
    (the Telegram desk's host), what the safety net reads through this tick (`reads`, over
    `ctx`'s caches) and the repos it is limited to (None: every supervised repo)."""

    deps: TickDeps
    ctx: TickContext
    now: datetime
    host: TickHost
    reads: TickReads
    only: frozenset[str] | None = None
    report: TickReport = field(init=False)  # what this tick saw and did: `ctx.report`

    def __post_init__(self) -> None:
        object.__setattr__(self, "report", self.ctx.report)

    def check_stop(self) -> None:
        """Leave the tick (raise _Stopped) when a stop was requested."""
        self.deps.check_stop()

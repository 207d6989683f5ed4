"""Between ticks under `capdaemon run`: a cheap change detector and the targeted tick it runs.

Each look sends, per supervised repo, one conditional GET of its most recently updated open PR
(`pulls?sort=updated&direction=desc&per_page=1`: a push, a comment, a label, a PR opened or
retargeted puts a PR on top or moves its update time) and, while a decision issue is open, one
of the decision repo's most recently updated issues (an `/approve`, a 👍, a close). The forge
sends each with the ETag of its last answer: while nothing changed GitHub answers 304, which
is not counted against the rate limit. Measured (bench/bench_change_feeds.py): the repository
events feed sees the same changes but lags 30 s to 6 h on GitHub, so it is not used.

A repo whose list moved gets a targeted tick (Ticker.targeted_tick): its open PRs listed,
decided, recorded and acted on, under the tick lock (never a second writer). While a full tick
runs, the repos are kept and handed over at the next look. A failed read changes nothing (its
mark stays, so the next look still sees the change); the full tick at its interval is the
safety net for anything a look misses. Looks are spaced by the longest of `detect_seconds`,
GitHub's `X-Poll-Interval` (when it sends one) and what `detect_requests_per_minute` allows.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from capdaemon.daemon.core.tickdata import TickReport
from capdaemon.forge.errors import FORGE_FAILURES
from capdaemon.logging import get_logger
from capdaemon.state import StateError
from capdaemon.stores.prrecord import PRState

if TYPE_CHECKING:
    from capdaemon.daemon.core.tick import Ticker

JOB_ID = "detect"
JOB_SECONDS = 1.0  # the job wakes this often; a look is sent only when one is due
ISSUES_PER_LOOK = 10  # decision issues read per look: more changed at once → every ballot repo
Feed = tuple[str, str]  # (repo, "pulls" | "issues")

log = get_logger("capdaemon.detect")


@dataclass
class DetectorStats:
    """What the detector did since it started (for benchmarks and the log)."""

    looks: int = 0
    requests: int = 0
    failed_reads: int = 0
    changes: int = 0
    targeted_ticks: int = 0
    deferred: int = 0  # a change seen while a tick ran: kept for the next look


class ChangeDetector:
    """Looks for changes between ticks and runs a targeted tick for the repos that changed."""

    def __init__(self, ticker: Ticker, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ticker = ticker
        self.clock = clock
        self.marks: dict[Feed, tuple[tuple[int, str], ...]] = {}
        self.pending: set[str] = set()  # repos seen changed, not yet handed to a tick
        self.poll_interval = 0  # the longest X-Poll-Interval of the last look (s)
        self.last_look = -math.inf
        self.stats = DetectorStats()
        self._lock = threading.Lock()  # one look at a time (the job, a test, a benchmark)

    # ------------------------------------------------------------------ the job
    def run(self, now: datetime | None = None) -> TickReport | None:
        """One wake-up: look when a look is due, then a targeted tick for what changed (or
        for what an earlier look saw while a tick ran). Its report, or None."""
        with self._lock:
            if self.ticker.deps.stop.is_set():
                return None
            self.pending |= self.look()
            if not self.pending:
                return None
            repos = sorted(self.pending)
            report = self.ticker.targeted_tick(repos, now)
            if report is None:
                self.stats.deferred += 1
                log.info("detect.deferred", repos=repos, reason="a tick is running")
                return None
            self.pending.clear()
            self.stats.targeted_ticks += 1
            return report

    def interval(self, feeds: int) -> float:
        """Seconds between two looks of `feeds` requests each (0: the detector is off)."""
        sc = self.ticker.config.schedule
        if sc.detect_seconds <= 0:
            return 0.0
        by_rate = 60.0 * feeds / sc.detect_requests_per_minute
        return max(float(sc.detect_seconds), float(self.poll_interval), by_rate)

    def feeds(self) -> list[Feed]:
        """What one look reads: each supervised repo's PR list, and the decision repo's issue
        list while one of its issues is open (nobody can vote on a closed one)."""
        config = self.ticker.config
        out: list[Feed] = [(rc.name, "pulls") for rc in config.repos]
        decision = config.ballot_repo
        if decision and self._open_issues():
            out.append((decision, "issues"))
        return out

    def _open_issues(self) -> dict[int, set[str]]:
        """Open decision issue number → the repos of the open PRs it is about."""
        found: dict[int, set[str]] = {}
        for rec in list(self.ticker.prs.records.values()):
            if rec.state != PRState.OPEN:
                continue
            for info in list(rec.issues.values()):
                if info.open:
                    found.setdefault(info.number, set()).add(rec.repo)
        return found

    # ------------------------------------------------------------------ a look
    def look(self) -> set[str]:
        """Read every feed once when a look is due; the repos whose feed moved since the last
        look. The first look only sets the marks (`capdaemon run` takes it before its first
        tick); a feed read for the first time later counts as moved. A failed read leaves its
        mark as it was."""
        feeds = self.feeds()
        interval = self.interval(len(feeds))
        now = self.clock()
        if not feeds or interval <= 0 or now - self.last_look < interval:
            return set()
        self.last_look = now
        self.stats.looks += 1
        changed: set[str] = set()
        asked = 0
        for feed in feeds:
            moved, wait = self._read(feed)
            changed |= moved
            asked = max(asked, wait or 0)
        self.poll_interval = asked
        if changed:
            self.stats.changes += 1
            log.info("detect.changed", repos=sorted(changed))
        return changed

    def _read(self, feed: Feed) -> tuple[set[str], int | None]:
        """One feed: the repos it shows changed, and the poll interval it asked for."""
        repo, kind = feed
        count = 1 if kind == "pulls" else ISSUES_PER_LOOK
        self.stats.requests += 1
        try:
            got = self.ticker.forge.recent_changes(repo, kind, count)
        except FORGE_FAILURES as exc:  # the next look (a rate limit too), or the full tick
            self.stats.failed_reads += 1
            log.warning("detect.read_failed", repo=repo, feed=kind, error=str(exc)[:300])
            return set(), None
        old = self.marks.get(feed)
        self.marks[feed] = got.items
        if old is None and self.stats.looks > 1:  # unread until now (a failed read, a new repo)
            old = ()  # what changed meanwhile is not known: taken as changed
        if old is None or old == got.items:
            return set(), got.poll_interval
        if kind == "pulls":
            return {repo}, got.poll_interval
        return self._ballot_repos(old, got.items), got.poll_interval

    def _ballot_repos(
        self, old: Iterable[tuple[int, str]], new: tuple[tuple[int, str], ...]
    ) -> set[str]:
        """The repos of the PRs whose decision issues moved (every repo with an open decision
        issue when more moved than one look shows)."""
        before = set(old)
        moved = [n for n, mark in new if (n, mark) not in before]
        issues = self._open_issues()
        if len(moved) >= len(new) == ISSUES_PER_LOOK:  # the page overflowed: maybe more moved
            return {repo for repos in issues.values() for repo in repos}
        out: set[str] = set()
        for n in moved:
            out |= issues.get(n, set())
        supervised = {rc.name for rc in self.ticker.config.repos}
        decision = self.ticker.config.ballot_repo
        if decision in supervised and moved:
            out.add(decision)  # the decision repo's own PRs are in its issue list too
        return out & supervised


def add_detect_job(sched: Any, detector: ChangeDetector) -> None:
    """Schedule the detector on its own thread: it wakes every JOB_SECONDS and looks when a
    look is due; a targeted tick waits for the tick lock only as long as a try."""
    from apscheduler.executors.pool import ThreadPoolExecutor

    sched.add_executor(ThreadPoolExecutor(1), JOB_ID)
    first = datetime.now(UTC) + timedelta(seconds=JOB_SECONDS)
    sched.add_job(
        detect_job,
        "interval",
        args=(detector,),
        seconds=JOB_SECONDS,
        id=JOB_ID,
        executor=JOB_ID,
        max_instances=1,
        coalesce=True,
        misfire_grace_time=1,
        next_run_time=first,
    )


def detect_job(detector: ChangeDetector) -> None:
    """One scheduled wake-up; nothing it meets stops the daemon (the full tick decides that)."""
    try:
        detector.run()
    except StateError as exc:  # the next full tick meets it too and stops the daemon
        log.error("detect.state_error", error=str(exc))
    except Exception as exc:  # a failed look or targeted tick: the full tick is the safety net
        log.error("detect.failed", error=f"{type(exc).__name__}: {exc}")

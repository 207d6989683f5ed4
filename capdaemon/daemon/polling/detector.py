"""Between ticks under `capdaemon run`: a cheap change detector and the targeted tick it runs.

Each look sends, per supervised repo, one conditional GET of its most recently updated open PR
(`pulls?sort=updated&direction=desc&per_page=1`: a push, a comment, a label, a PR opened or
retargeted puts a PR on top or moves its update time) and, while a decision issue is open, one
of the first page of each of the decision repo's issue listings a vote moves, as the tick
lists them (capdaemon.daemon.issues.watch: the open ballots and one-taps by label, or every
open issue before the tick keeps a `since`; every comment, 👍, edit or close moves an item:
the reaction rollup is in each, and a reaction moves no update time, so no list sorted by
update time would show it). What the look cannot see in those is read in turn, one a look
while quiet: the check runs (and, when a commit status may meet a required check, the
combined status) of each PR whose merge waits only on checks (outside CI completing), and
the listings' later pages (over 100 issues). The forge sends each with the ETag of its last
answer (a checks read as the tick's own REST read of them, so it shares that one's): while
nothing changed GitHub answers 304, which is not counted against the rate limit.
Measured (bench/bench_change_feeds.py): the repository events feed sees the same changes but
lags 30 s to 6 h on GitHub, so it is not used.

A repo whose feed moved gets a targeted tick (Ticker.targeted_tick): its open PRs listed,
decided, recorded and acted on, under the tick lock (never a second writer). While a full
tick runs, the repos are kept for it to take at its safe points (`TickDeps.changed`: listed
again before it decides their PRs, or served by the targeted steps between two of its later
steps), else handed over at the next wake-up. A failed read changes
nothing (its mark stays, so the next look still sees the change); the full tick at its
interval is the safety net for anything a look misses. Looks are spaced by the longest of
`detect_seconds`, GitHub's `X-Poll-Interval` (when it sends one) and what
`detect_requests_per_minute` allows — or, for `detect_burst_seconds` after a look saw a
change, `detect_burst_requests_per_minute`, which also reads the later issue pages every look
and more slow feeds a look (capdaemon.daemon.polling.cadence). Whether a feed moved is decided
by pure functions (what_moved, repos_moved).

In a burst the detector also sweeps, after a look's own targeted tick, the check rollups of
every head waiting on checks in GraphQL (many heads a query, 1 point each;
capdaemon.daemon.polling.rollups), spaced by `detect_burst_graphql_points_per_hour` and
giving way when the ticks need the GraphQL budget: a CI run completing on a PR the per-PR
feeds have not reached yet is seen at the next sweep, not at the next tick. A failed sweep
changes nothing.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from capdaemon.daemon.core.tickdata import TickReport
from capdaemon.daemon.issues.watch import reaction_needs, safe_since, wanted_lists
from capdaemon.daemon.polling.cadence import (
    Cadence,
    in_burst,
    look_may_be_due,
    look_spacing,
    slow_share,
    sweep_due,
)
from capdaemon.daemon.polling.rollups import Head, rollups_flagged
from capdaemon.forge.errors import FORGE_FAILURES
from capdaemon.forge.rollups import rollup_queries
from capdaemon.forge.types import IssueList
from capdaemon.logging import get_logger
from capdaemon.state import StateError
from capdaemon.stores.prrecord import PRState

if TYPE_CHECKING:
    from capdaemon.daemon.core.tick import Ticker

JOB_ID = "detect"
CHECK_FEEDS = ("checks", "check-runs")  # a waiting PR's feeds (decide.merge.waiting_check_feed)
UNREAD_PER_BURST_LOOK = 2  # checks feeds a burst look reads for the first time (counted)
JOB_SECONDS = 1.0  # the job wakes this often; a look is sent only when one is due
ISSUES_PAGE = 100  # open decision issues on one page of the decision repo's issue list
# (repo, kind, ref): a repo's "pulls" list (ref ""), a page of one of the decision repo's
# "issues" listings (ref: "<IssueList.key()>#<page>"), a waiting PR's "checks" or only its
# "check-runs" (ref: its head sha)
Feed = tuple[str, str, str]
Marks = tuple[tuple[int, str], ...]

log = get_logger("capdaemon.detect")


@dataclass(frozen=True)
class Moved:
    """What one read of a feed shows moved since the read before it."""

    changed: bool = False
    numbers: frozenset[int] = frozenset()  # the items whose mark is new, or that left
    unknown: bool = False  # more (or other) items may have moved than `numbers` says


def what_moved(old: Marks | None, new: Marks, *, first_look: bool) -> Moved:
    """Compare a feed's marks with its last read (pure): the items whose mark is new, and
    those no longer listed (an issue closed leaves the open list). `old` None: never read
    before — on the first look that only sets the marks; later (a failed read, a new repo)
    what happened meanwhile is unknown, so it is taken as changed."""
    if old is None:
        return Moved(changed=not first_look, unknown=not first_look)
    if old == new:
        return Moved()
    before, now = set(old), {n for n, _ in new}
    numbers = {n for n, mark in new if (n, mark) not in before}
    numbers |= {n for n, _ in old if n not in now}
    return Moved(changed=True, numbers=frozenset(numbers))


def repos_moved(
    feed: Feed,
    moved: Moved,
    open_issues: Mapping[int, set[str]],
    supervised: set[str],
    decision: str | None,
) -> set[str]:
    """The repos a targeted tick must visit for what a feed showed moved (pure). A PR list or
    a PR's checks: its repo. The decision repo's issues: the repos of the PRs whose decision
    issues moved — every repo with an open decision issue when which ones is unknown — and the
    decision repo itself when it is supervised (its own PRs are in that list too)."""
    repo, kind, _ = feed
    if not moved.changed:
        return set()
    if kind != "issues":
        return {repo} & supervised
    if moved.unknown:
        out = {r for repos in open_issues.values() for r in repos}
    else:
        out = {r for n in moved.numbers for r in open_issues.get(n, set())}
    if decision is not None and (moved.numbers or moved.unknown):
        out.add(decision)
    return out & supervised


@dataclass
class DetectorStats:
    """What the detector did since it started (for benchmarks and the log)."""

    looks: int = 0
    requests: int = 0
    failed_reads: int = 0
    changes: int = 0
    targeted_ticks: int = 0
    deferred: int = 0  # a change seen while a tick ran: kept for the next look
    slow_reads: int = 0  # reads of a waiting PR's checks or of a later issue page
    burst_looks: int = 0  # looks taken at the burst rate (after a look saw a change)
    sweeps: int = 0  # rollup sweeps of the heads waiting on checks (in a burst)
    sweep_points: int = 0  # GraphQL points they spent (1 a query)
    failed_sweeps: int = 0
    held_sweeps: int = 0  # due but held back: the GraphQL budget is ahead of its pace


class ChangeDetector:
    """Looks for changes between ticks and runs a targeted tick for the repos that changed."""

    def __init__(self, ticker: Ticker, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ticker = ticker
        self.clock = clock
        self.marks: dict[Feed, Marks] = {}
        self.poll_interval = 0  # the longest X-Poll-Interval of the last look (s)
        self.last_look = -math.inf
        self.last_change = -math.inf  # when a look last saw a change (starts a burst)
        self.stats = DetectorStats()
        self._slow_turn = 0  # where the next look starts in the slow feeds
        self.rollups: dict[Head, str] = {}  # each waiting head's rollup state at the last sweep
        self.last_sweep = -math.inf
        self._lists: dict[str, IssueList] = {}  # the decision repo's listings read, by key
        self._held = False  # sweeps held back by the GraphQL budget since the last one
        self._lock = threading.Lock()  # one look at a time (the job, a test, a benchmark)

    # ------------------------------------------------------------------ the job
    def run(self, now: datetime | None = None) -> TickReport | None:
        """One wake-up: look when a look is due, then a targeted tick for what changed (or
        for what an earlier look saw while a tick ran); then, in a burst, the rollup sweep
        when due, and a targeted tick for what it flags. The sweep comes after the look's
        own targeted tick, so its queries never hold up acting on what the feeds showed.
        The last report, or None."""
        with self._lock:
            if self.ticker.deps.stop.is_set():
                return None
            report = self._serve(self.look(), now)
            flagged = self.sweep(self.clock(), burst=self.bursting())
            if flagged:
                self._saw(flagged)
                report = self._serve(flagged, now) or report
            return report

    def _serve(self, found: set[str], now: datetime | None) -> TickReport | None:
        """A targeted tick for `found` and every repo still waiting; None when there are
        none, or a tick is running (the repos wait for it, or for the next wake-up)."""
        repos = self.ticker.deps.changed.add(found)
        if not repos:
            return None
        report = self.ticker.targeted_tick(repos, now)
        if report is None:
            self.stats.deferred += 1
            log.info("detect.deferred", repos=repos, reason="a tick is running")
            return None
        self.ticker.deps.changed.served(repos)
        self.stats.targeted_ticks += 1
        return report

    def _saw(self, changed: set[str]) -> None:
        """A change seen now: it starts (or extends) a burst."""
        self.last_change = self.clock()
        self.stats.changes += 1
        log.info("detect.changed", repos=sorted(changed))

    @property
    def pending(self) -> set[str]:
        """The repos seen changed that no tick has taken yet (kept in `TickDeps.changed`, where
        a running full tick takes them at its safe points)."""
        return self.ticker.deps.changed.waiting()

    def bursting(self) -> bool:
        """True within `detect_burst_seconds` of the last look that saw a change."""
        return in_burst(self.cadence(), self.last_change, self.clock())

    def cadence(self) -> Cadence:
        """The schedule's settings (re-read: a SIGHUP may change them)."""
        return Cadence.of(self.ticker.config.schedule)

    def interval(self, requests: int, *, burst: bool = False) -> float:
        """Seconds between two looks of `requests` requests each (0: the detector is off)."""
        return look_spacing(self.cadence(), requests, self.poll_interval, burst=burst)

    def feeds(self, *, burst: bool | None = None) -> list[Feed]:
        """What one look reads: each supervised repo's PR list, while a decision issue is open
        (nobody can vote on a closed one) the first page of each decision-repo listing of
        _issue_lists, and, in turn, the slow feeds (see _slow_feeds): one a look while quiet;
        in a burst the later issue pages every look and as many waiting PRs' checks as the
        burst rate allows (cadence.slow_share). A checks feed never read has no ETag yet, so
        its first read is counted: only a burst sends one, UNREAD_PER_BURST_LOOK a look, those
        of the PRs that started waiting last first (a push has just started their CI), and the
        first look reads them as any feed; a quiet look stays free. `burst` None: as the clock
        says now."""
        burst = self.bursting() if burst is None else burst
        out, slow = self._every_look(burst)
        share = slow_share(
            self.cadence(), sum(map(_cost, out)), [_cost(f) for f in slow], burst=burst
        )
        if len(slow) > share:
            start = self._slow_turn % len(slow)
            slow = (slow[start:] + slow[:start])[:share]
        return out + slow

    def _every_look(self, burst: bool) -> tuple[list[Feed], list[Feed]]:
        """The feeds this look reads whatever the budget, and the slow feeds read in turn."""
        config = self.ticker.config
        out: list[Feed] = [(rc.name, "pulls", "") for rc in config.repos]
        decision = config.ballot_repo
        self._lists = {lst.key(): lst for lst in self._issue_lists(decision)}
        out += [(decision or "", "issues", f"{key}#1") for key in self._lists]
        slow = self._slow_feeds(decision if self._lists else None)
        out += [f for f in slow if not _in_turn(f, burst)]
        slow = [f for f in slow if _in_turn(f, burst)]
        unread = self._unread(slow)
        out += unread[::-1][:UNREAD_PER_BURST_LOOK] if burst else []  # the newest first
        return out, [f for f in slow if f not in unread]

    def _unread(self, slow: list[Feed]) -> list[Feed]:
        """The checks feeds among `slow` never read (no ETag yet); none on the first look,
        which reads any feed in turn (it only sets marks)."""
        if not self.stats.looks:
            return []
        return [f for f in slow if f[1] in CHECK_FEEDS and f not in self.marks]

    def _slow_feeds(self, decision: str | None) -> list[Feed]:
        """The checks of each PR whose merge waits only on checks (no list GitHub offers moves
        when a check run completes), and the later pages of the decision repo's listings (while
        the page before was full when last read). Marks of feeds no longer wanted are dropped."""
        out = self._waiting_heads()
        out += self._later_pages(decision)
        keep = set(out) | {(decision or "", "issues", f"{key}#1") for key in self._lists}
        for feed in [f for f in self.marks if f[1] != "pulls" and f not in keep]:
            del self.marks[feed]
        return out

    def _waiting_heads(self) -> list[Feed]:
        """The checks feed of each live PR of a supervised repo whose merge waits only on
        checks, in the order they started waiting."""
        supervised = {rc.name for rc in self.ticker.config.repos}
        records = self.ticker.prs.records
        out: list[Feed] = []
        for (repo, number), (sha, kind) in list(self.ticker.deps.waiting_checks.items()):
            rec = records.get(f"{repo}#{number}")
            live = rec is not None and rec.state == PRState.OPEN and rec.head_sha == sha
            if live and repo in supervised:
                out.append((repo, kind, sha))
        return out

    def _later_pages(self, decision: str | None) -> list[Feed]:
        """Each listing's pages after the first, while the page before was full when read."""
        out: list[Feed] = []
        if not decision:
            return out
        for key in self._lists:
            page = 1
            while len(self.marks.get((decision, "issues", f"{key}#{page}"), ())) >= ISSUES_PAGE:
                page += 1
                out.append((decision, "issues", f"{key}#{page}"))
        return out

    def _issue_lists(self, decision: str | None) -> list[IssueList]:
        """The decision repo's listings a look reads: with a kept `since`, the open ballots and
        one-taps by label (what a vote moves; the tick's changes list shows the rest, which
        waits for no owner); else, while a decision issue is open, every open issue."""
        if not decision:
            return []
        since = safe_since(self.ticker.deps.state_dir, decision)
        if since is None:
            return [IssueList()] if self._open_issues() else []
        records = list(self.ticker.prs.records.values())
        needs = reaction_needs(records, self.ticker.deps.safety.tiers.pending_one_tap)
        return list(wanted_lists(since, *needs)[1:])

    def _open_issues(self) -> dict[int, set[str]]:
        """Open decision issue number → the repos of the open PRs it is about (their ballots,
        reviews and other issues, and the one-tap of a head waiting for an owner's 👍)."""
        found: dict[int, set[str]] = {}
        tiers = self.ticker.deps.safety.tiers
        for rec in list(self.ticker.prs.records.values()):
            if rec.state != PRState.OPEN:
                continue
            numbers = [info.number for info in list(rec.issues.values()) if info.open]
            tap = tiers.pending_one_tap(rec)
            for n in numbers if tap is None else [*numbers, tap]:
                found.setdefault(n, set()).add(rec.repo)
        return found

    # ------------------------------------------------------------------ a look
    def look(self) -> set[str]:
        """Read every feed once when a look is due; the repos whose feed moved since the last
        look. The first look only sets the marks (`capdaemon run` takes it before its first
        tick); a list read for the first time later counts as moved (a slow feed does not:
        the tick that made it wanted had just read the same; a change in between is the full
        tick's). A failed read leaves its mark as it was."""
        now = self.clock()
        if not look_may_be_due(self.cadence(), self.last_look, self.poll_interval, now):
            return set()  # no look due: the feed list (every record, the watch file) not built
        burst = in_burst(self.cadence(), self.last_change, now)
        feeds = self.feeds(burst=burst)
        interval = self.interval(sum(_cost(f) for f in feeds), burst=burst)
        if not feeds or interval <= 0 or now - self.last_look < interval:
            return set()
        self.last_look = now
        self.stats.looks += 1
        self.stats.burst_looks += burst
        unread = [f for f in feeds if f[1] in CHECK_FEEDS and f not in self.marks]
        self._slow_turn += sum(1 for f in feeds if _in_turn(f, burst)) - len(unread) * burst
        changed: set[str] = set()
        asked = 0
        for feed in feeds:
            moved, wait = self._read(feed)
            changed |= moved
            asked = max(asked, wait or 0)
        self.poll_interval = asked
        if changed:
            self.last_change = now
            self.stats.changes += 1
            log.info("detect.changed", repos=sorted(changed))
        return changed

    def sweep(self, now: float, *, burst: bool) -> set[str]:
        """In a burst, when the points budget allows: the check rollup state of every head
        waiting on checks, in GraphQL; the repos whose heads it flags (rollups_flagged). A
        failed sweep changes no state seen and flags nothing (the full tick is the net)."""
        if not sweep_due(self.cadence(), self.last_sweep, now, 1, burst=burst):
            return set()  # not even a one-point sweep is due: the waiting heads not walked
        heads = [(repo, sha) for repo, _, sha in self._waiting_heads()]
        points = rollup_queries(len(heads))
        if not sweep_due(self.cadence(), self.last_sweep, now, points, burst=burst):
            return set()
        # the rest of the GraphQL budget is the ticks': when they need more, the sweep waits
        room = self.ticker.forge.graphql_room(points, self.cadence().sweep_points_per_hour)
        if not room and not self._held:  # logged once a spell
            log.info("detect.sweep_held", points=points, reason="GraphQL budget ahead of pace")
        self._held = not room
        if not room:
            self.stats.held_sweeps += 1
            return set()
        self.last_sweep = now
        self.stats.sweeps += 1
        self.stats.sweep_points += points
        try:
            got = self.ticker.forge.head_rollups(heads)
        except FORGE_FAILURES as exc:
            self.stats.failed_sweeps += 1
            log.warning("detect.sweep_failed", heads=len(heads), error=str(exc)[:300])
            return set()
        flagged = rollups_flagged(self.rollups, got)
        self.rollups = dict(got)
        if flagged:
            log.info("detect.rollups_moved", repos=sorted(flagged))
        return flagged

    def _read(self, feed: Feed) -> tuple[set[str], int | None]:
        """One feed: the repos it shows changed, and the poll interval it asked for."""
        repo, kind, ref = feed
        self.stats.requests += _cost(feed)
        key, _, page = ref.rpartition("#")
        slow = kind in CHECK_FEEDS or (kind == "issues" and page != "1")
        self.stats.slow_reads += slow
        try:
            if kind in CHECK_FEEDS:
                got = self.ticker.forge.check_marks(repo, ref, kind)
            elif kind == "issues":
                got = self.ticker.forge.issue_list_marks(repo, self._lists[key], int(page))
            else:
                got = self.ticker.forge.recent_changes(repo, kind, 1)
        except FORGE_FAILURES as exc:  # the next look (a rate limit too), or the full tick
            self.stats.failed_reads += 1
            log.warning("detect.read_failed", repo=repo, feed=kind, error=str(exc)[:300])
            return set(), None
        old = self.marks.get(feed)
        self.marks[feed] = got.items
        first = self.stats.looks <= 1 or slow
        moved = what_moved(old, got.items, first_look=first)
        config = self.ticker.config
        supervised = {rc.name for rc in config.repos}
        issues = self._open_issues() if kind == "issues" else {}
        return repos_moved(feed, moved, issues, supervised, config.ballot_repo), got.poll_interval


def _in_turn(feed: Feed, burst: bool) -> bool:
    """A slow feed read in turn (a waiting PR's checks; a later issue page, but for every
    look in a burst), not every look."""
    later_page = feed[1] == "issues" and feed[2].rpartition("#")[2] != "1"
    return feed[1] in CHECK_FEEDS or (not burst and later_page)


def _cost(feed: Feed) -> int:
    """Requests one read of `feed` sends (a PR's "checks": its check runs and its status)."""
    return 2 if feed[1] == "checks" else 1


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

"""A change a detector sees while a full tick runs is served inside that tick, at its safe
points, on what is read then — against the sandbox over HTTP."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Collection

from capdaemon.daemon.core.changes import ChangedRepos
from capdaemon.daemon.core.tick import Ticker
from capdaemon.daemon.core.tickdata import TickReport
from capdaemon.daemon.polling.detector import ChangeDetector

from .conftest import Harness

PROTECTED = "cron_settings.json"  # a D: the PR stays open, waiting for a ballot


def _detector(ticker: Ticker) -> ChangeDetector:
    """A detector whose clock jumps a minute per look (a look is always due)."""
    minutes = itertools.count(0, 60)
    return ChangeDetector(ticker, clock=lambda: float(next(minutes)))


class Paused:
    """The daemon's liveness hook (`TickDeps.heartbeat`, called per PR) that holds the tick
    at its first call where `when()` holds until released, then notes `watch()` at each
    later call."""

    def __init__(self, watch: Callable[[], object], when: Callable[[], bool]) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()
        self.watch, self.when = watch, when
        self.seen: list[object] = []

    def __call__(self) -> None:
        if self.reached.is_set():
            self.seen.append(self.watch())
        elif self.when():
            self.reached.set()
            assert self.go.wait(60), "never released"


def _tick_in_thread(ticker: Ticker, daemon: Harness) -> tuple[threading.Thread, list[TickReport]]:
    out: list[TickReport] = []
    thread = threading.Thread(target=lambda: out.append(ticker.tick(daemon.sb.now())))
    thread.start()
    return thread, out


def _held_tick(
    daemon: Harness,
    watch: Callable[[Ticker], object],
    when: Callable[[Ticker], bool] = lambda t: True,
    before: Callable[[], object] = lambda: None,
) -> tuple[Ticker, ChangeDetector, Paused, threading.Thread, list[TickReport]]:
    """A daemon whose open D PRs are known, its detector's marks set (then `before()`), and a
    full tick running in a thread, held at its first PR where `when` holds (its repo already
    listed)."""
    daemon.tick()
    ticker = daemon.ticker
    assert ticker is not None
    det = _detector(ticker)
    det.run(daemon.sb.now())  # the marks
    before()
    paused = Paused(lambda: watch(ticker), lambda: when(ticker))
    ticker.deps.heartbeat = paused
    thread, out = _tick_in_thread(ticker, daemon)
    assert paused.reached.wait(60), "the full tick never reached a PR"
    return ticker, det, paused, thread, out


def test_a_push_during_a_full_tick_is_acted_on_before_it_ends(daemon: Harness) -> None:
    """A full tick has listed the repo; an agent pushes to a waiting PR; the detector sees it
    but cannot run beside the tick. The tick serves it at its next safe point: while the
    tick is still in its merge step, the PR's record is already at the new head (decided on
    a read made after the push), and its L1.C3 is on the new head when the tick returns —
    not a tick later. The tick's own later steps leave the PR alone."""
    first = daemon.open_pr({PROTECTED: '{"jobs": ["a"]}\n'})
    second = daemon.open_pr({PROTECTED: '{"jobs": ["b"]}\n'}, user="agent-2")
    ref = f"{daemon.sb.repo}#{second}"
    ticker, det, paused, thread, out = _held_tick(daemon, lambda t: t.prs.records[ref].head_sha)
    new_head = daemon.push(second, {PROTECTED: '{"jobs": ["b", "c"]}\n'}, user="agent-2")
    assert det.run(daemon.sb.now()) is None  # the tick holds the lock: kept for it
    assert det.pending == {daemon.sb.repo}
    paused.go.set()
    thread.join(120)
    (report,) = out
    assert not report.interrupted and report.errors == []
    assert new_head in paused.seen  # the record moved on while the tick still ran
    assert ticker.prs.records[ref].head_sha == new_head
    assert daemon.check(second).head_sha == new_head
    assert det.pending == set()  # nothing left for a targeted tick after it
    assert ticker.metrics.data.get("targeted_ticks") == 1
    assert ticker.prs.records[f"{daemon.sb.repo}#{first}"].state == "open"


def test_a_stale_read_in_the_full_tick_does_not_overwrite_the_newer_record(
    daemon: Harness,
) -> None:
    """The attack: a new docs PR is classified A and published by the full tick, which will
    merge it in step 4; before that, the agent pushes a bot settings file onto it. The change
    is served apart at the new head (tier 3: a ballot, no merge), and the full tick's step 4
    does not act on its older read: no merge is even attempted, and the last classification
    is the new head's."""
    waiting = daemon.open_pr({PROTECTED: '{"jobs": ["d"]}\n'})
    opened: list[int] = []
    refs: list[str] = []

    def published(t: Ticker) -> bool:
        rec = t.prs.records.get(refs[0]) if refs else None
        return rec is not None and rec.quadrant in ("A", "B", "C")

    def open_docs_pr() -> None:
        opened.append(daemon.open_pr({"docs/late.md": "# late\n"}))
        refs.append(f"{daemon.sb.repo}#{opened[0]}")

    ticker, det, paused, thread, out = _held_tick(
        daemon, lambda t: None, when=published, before=open_docs_pr
    )
    (n,) = opened
    old_head = ticker.prs.records[refs[0]].head_sha
    new_head = daemon.push(n, {"cron_settings.json": '{"jobs": ["sneaked"]}\n'})
    assert det.run(daemon.sb.now()) is None
    paused.go.set()
    thread.join(120)
    assert out and out[0].errors == []
    assert not daemon.pull(n).merged
    assert daemon.actions("merge", n) == []  # not attempted on the older read
    rows = daemon.classifications(n)
    assert [r["head_sha"] for r in rows] == [old_head, new_head]
    daemon.issue_for(n, "ballot")  # the new head waits for the owners (a bot settings file)
    assert ticker.prs.records[refs[0]].head_sha == new_head
    assert ticker.prs.records[f"{daemon.sb.repo}#{waiting}"].state == "open"


def test_a_stop_requested_while_a_change_waits_is_honoured_first(daemon: Harness) -> None:
    """SIGTERM while the tick is held and a change waits for it: the tick ends at its next
    safe point, before serving the change; the change stays with the detector."""
    n = daemon.open_pr({PROTECTED: '{"jobs": ["f"]}\n'})
    ref = f"{daemon.sb.repo}#{n}"
    ticker, det, paused, thread, out = _held_tick(daemon, lambda t: None)
    old_head = ticker.prs.records[ref].head_sha
    daemon.push(n, {PROTECTED: '{"jobs": ["f", "g"]}\n'})
    det.run(daemon.sb.now())
    ticker.request_stop()
    paused.go.set()
    thread.join(120)
    assert out and out[0].interrupted
    assert ticker.prs.records[ref].head_sha == old_head  # nothing served after the stop
    assert det.pending == {daemon.sb.repo}
    assert not ticker.metrics.data.get("targeted_ticks")


def test_the_full_tick_still_merges_what_it_would_have(daemon: Harness) -> None:
    """A ready PR the full tick listed (it would merge it in step 4) and a change served
    inside the tick in the same repo: the ready PR is merged in this tick, once (by the work
    served apart, which took the repo over)."""
    waiting = daemon.open_pr({PROTECTED: '{"jobs": ["h"]}\n'})
    opened: list[int] = []
    _, det, paused, thread, out = _held_tick(
        daemon,
        lambda t: None,
        before=lambda: opened.append(daemon.open_pr({"docs/ready.md": "# ready\n"})),
    )
    daemon.push(waiting, {PROTECTED: '{"jobs": ["h", "i"]}\n'})
    det.run(daemon.sb.now())
    paused.go.set()
    thread.join(120)
    assert out and out[0].errors == []
    (ready,) = opened
    assert daemon.pull(ready).merged
    merges = [r for r in daemon.actions("merge", ready) if r.get("status") == "done"]
    assert len(merges) == 1


def test_a_repo_already_decided_is_served_before_the_next_repo(daemon: Harness) -> None:
    """Two repos: the full tick has decided the first and not yet the second when a push
    lands in the first. It is served at the safe point between the two repos: when the
    second repo's PR is decided, the first one's record is already at the new head."""
    sb = daemon.sb
    other = sb.create_repo("acme", "gizmos", files={"README.md": "# gizmos\n"})
    base = {"base": "main", "merge_method": "squash"}
    daemon.configure(repos=[{"name": sb.repo, **base}, {"name": other, **base}])
    n = daemon.open_pr({PROTECTED: '{"jobs": ["m"]}\n'})
    files = {PROTECTED: '{"jobs": ["g"]}\n'}
    sb.commit_files(other, "agent-1/g", files, "g", author="agent-1", parent_branch="main")
    sb.open_pr(other, "agent-1/g", "main", "An agent change", "body", "agent-1")
    ref = f"{sb.repo}#{n}"
    _, det, paused, thread, out = _held_tick(daemon, lambda t: t.prs.records[ref].head_sha)
    new_head = daemon.push(n, {PROTECTED: '{"jobs": ["m", "n"]}\n'})
    assert det.run(sb.now()) is None
    paused.go.set()
    thread.join(120)
    assert out and out[0].errors == []
    assert paused.seen and paused.seen[0] == new_head  # already when the next repo's PR ran
    assert daemon.check(n).head_sha == new_head


def test_a_change_seen_before_the_full_tick_decides_a_repo_is_listed_again(
    daemon: Harness,
) -> None:
    """The hand-over says the repo changed after the tick listed it but before it decided
    its PRs: the tick lists it again and decides the pushed PR at its new head in steps 1-2
    (no work apart needed)."""
    n = daemon.open_pr({PROTECTED: '{"jobs": ["j"]}\n'})
    ref = f"{daemon.sb.repo}#{n}"
    daemon.tick()
    ticker = daemon.ticker
    assert ticker is not None
    calls: list[Collection[str] | None] = []
    pushed: list[str] = []

    class HandOver(ChangedRepos):
        def take(self, among: Collection[str] | None = None) -> frozenset[str]:
            calls.append(among)
            if len(calls) == 2:  # after the list read, before its PRs are decided
                pushed.append(daemon.push(n, {PROTECTED: '{"jobs": ["j", "k"]}\n'}))
                return frozenset({daemon.sb.repo})
            return frozenset()

    ticker.deps.changed = HandOver()
    report = ticker.tick(daemon.sb.now())
    assert report.errors == [] and pushed
    assert ticker.prs.records[ref].head_sha == pushed[0]
    assert daemon.check(n).head_sha == pushed[0]
    assert not ticker.metrics.data.get("targeted_ticks")  # decided by the full tick itself

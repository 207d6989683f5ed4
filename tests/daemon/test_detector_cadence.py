"""The change detector's cadence: quiet looks within the quiet ceiling, faster looks for a
bounded window after a change (pure functions, then against the sandbox over HTTP), and a
waiting PR's checks read as the tick reads them (sharing its ETag)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.config import ConfigError, load_config
from capdaemon.daemon.polling.cadence import (
    Cadence,
    in_burst,
    look_may_be_due,
    look_spacing,
    slow_share,
    sweep_due,
)
from capdaemon.daemon.polling.detector import CHECK_FEEDS, ChangeDetector, _cost

from .conftest import Harness, write_config
from .test_detector import _counted
from .test_steady import _app_github, _settle


def _cadences(shortest: int, sweep_points: st.SearchStrategy[int]) -> st.SearchStrategy[Cadence]:
    """Schedules: looks at least `shortest` s apart, any rates, the sweep's points budget."""
    return st.builds(
        Cadence,
        detect_seconds=st.integers(shortest, 120 if shortest == 0 else 60),
        quiet_per_minute=st.integers(1, 120),
        burst_per_minute=st.integers(1, 450),
        burst_seconds=st.integers(0, 600),
        sweep_points_per_hour=sweep_points,
    )


cadences = _cadences(0, st.just(0))


@given(cadences, st.integers(0, 200), st.integers(0, 300), st.booleans())
def test_spacing_is_never_below_detect_seconds_nor_the_poll_interval(
    cad: Cadence, cost: int, poll: int, burst: bool
) -> None:
    gap = look_spacing(cad, cost, poll, burst=burst)
    if cad.detect_seconds <= 0:
        assert gap == 0  # the detector is off
    else:
        assert gap >= cad.detect_seconds and gap >= poll
        assert gap >= 60.0 * cost / cad.rate(burst) - 1e-9
        assert cad.rate(burst) >= cad.quiet_per_minute  # a burst is never slower than quiet


@given(
    cadences.filter(lambda c: c.detect_seconds > 0),
    st.lists(st.tuples(st.integers(0, 60), st.floats(0, 5)), min_size=1, max_size=60),
)
def test_quiet_looks_never_exceed_the_quiet_ceiling(
    cad: Cadence, looks: list[tuple[int, float]]
) -> None:
    """Looks of any cost, each as soon as it is due (plus any wake-up delay), no change seen:
    over the whole run no more than the quiet rate (the last look's own cost aside)."""
    now, sent, last = 0.0, 0, 0
    for cost, late in looks:
        assert not in_burst(cad, float("-inf"), now)
        sent += cost
        last = cost
        now += look_spacing(cad, cost, 0, burst=False) + late
    assert sent - last <= cad.quiet_per_minute * now / 60.0 + 1e-6


@given(cadences, st.floats(-1e6, 1e6), st.floats(0, 1e4))
def test_a_burst_ends_after_its_window(cad: Cadence, change: float, after: float) -> None:
    now = change + after
    if after >= cad.burst_seconds:
        assert not in_burst(cad, change, now)
    elif after < cad.burst_seconds - 1e-3:  # within the window (floats: not at its edge)
        assert in_burst(cad, change, now)
    assert not in_burst(cad, change, change + cad.burst_seconds)
    assert not in_burst(cad, float("-inf"), now)  # no change seen yet: quiet


@given(cadences, st.integers(0, 40), st.lists(st.integers(1, 2), max_size=50), st.booleans())
def test_slow_feeds_a_look_reads_fit_the_rate(
    cad: Cadence, base: int, costs: list[int], burst: bool
) -> None:
    """Quiet: one slow feed a look. Burst: what fits in a look `detect_seconds` apart at the
    burst rate — or one, so every slow feed is still read in turn."""
    n = slow_share(cad, base, costs, burst=burst)
    assert n <= len(costs) and (n >= 1 or not costs)
    if not burst:
        assert n == min(1, len(costs))
    else:
        budget = cad.rate(True) * cad.detect_seconds / 60.0
        if n > 1:
            assert base + sum(costs[:n]) <= budget
        if n < len(costs):  # as many as fit: the next one would not
            assert base + sum(costs[: n + 1]) > budget


def _clocked(daemon: Harness) -> tuple[ChangeDetector, list[float]]:
    ticker = daemon.ticker or daemon.start()
    now = [0.0]
    return ChangeDetector(ticker, clock=lambda: now[0]), now


def _run_until(
    daemon: Harness, det: ChangeDetector, now: list[float], end: float
) -> list[tuple[float, bool, int]]:
    """Wake the detector every simulated second until `end`: (time, burst?, cost) a look."""
    looks: list[tuple[float, bool, int]] = []
    while now[0] < end:
        before, bursts = det.stats.looks, det.stats.burst_looks
        burst = det.bursting()
        cost = sum(_cost(f) for f in det.feeds(burst=burst))
        det.run(daemon.sb.now())
        if det.stats.looks > before:
            assert (det.stats.burst_looks > bursts) == burst
            looks.append((now[0], burst, cost))
        now[0] += 1.0
    return looks


def test_after_a_change_looks_come_faster_then_quiet_again(daemon: Harness) -> None:
    """Quiet looks one every 10 s (6 requests a minute); a PR opened: the look that sees it
    starts a burst, the next looks come 1 s apart (60 a minute) while the window lasts, and
    once nothing has moved for `detect_burst_seconds` they are 10 s apart again."""
    daemon.configure(
        schedule={
            "tick_seconds": 60,
            "detect_seconds": 1,
            "detect_requests_per_minute": 6,
            "detect_burst_requests_per_minute": 60,
            "detect_burst_seconds": 20,
        }
    )
    daemon.tick()
    det, now = _clocked(daemon)
    cad = det.cadence()
    looks = _run_until(daemon, det, now, 40)
    assert [t for t, _, _ in looks] == [0, 10, 20, 30] and not any(b for _, b, _ in looks)
    n = daemon.open_pr({"docs/burst.md": "# burst\n"})
    looks += _run_until(daemon, det, now, 120)
    assert daemon.pull(n).merged and det.stats.targeted_ticks >= 1
    last_change = det.last_change
    assert 40 <= last_change < 60
    bursts = [t for t, b, _ in looks if b]
    assert bursts and bursts[0] == 41 and max(bursts) < last_change + cad.burst_seconds
    for (t0, _, cost), (t1, burst, _) in itertools.pairwise(looks):
        assert t1 - t0 == pytest.approx(look_spacing(cad, cost, 0, burst=burst))
    tail = [t for t, b, _ in looks if t > last_change + cad.burst_seconds]
    assert len(tail) >= 3 and all(b - a == 10 for a, b in itertools.pairwise(tail))


def test_a_quiet_detector_counts_nothing_and_keeps_to_the_quiet_ceiling(
    daemon: Harness,
) -> None:
    """A PR waiting on outside CI and an open ballot (a checks feed, the decision issue list):
    five simulated minutes of looks with nothing happening — every answer a 304, no burst,
    and no more requests than 30 a minute (the sandbox's own counters)."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    daemon.open_pr({"docs/ci.md": "# ci\n"})
    daemon.open_pr({"cron_settings.json": '{"jobs": ["q"]}\n'})  # protected: a D ballot
    _settle(daemon)
    det, now = _clocked(daemon)
    feeds = det.feeds()
    assert {f[1] for f in feeds} >= {"pulls", "issues"} and any(f[1] in CHECK_FEEDS for f in feeds)
    _run_until(daemon, det, now, 1)  # the first look sets the marks
    daemon.sb.reset_counters()
    looks = _run_until(daemon, det, now, 301)
    requests, counted = _counted(daemon)
    assert counted == 0 and det.stats.burst_looks == 0 and det.stats.targeted_ticks == 0
    assert requests == sum(c for _, _, c in looks)
    assert requests <= 30 * 5 + max(c for _, _, c in looks)


def test_a_newly_waiting_prs_first_checks_read_shares_the_ticks_etag(daemon: Harness) -> None:
    """The tick read a PR's check runs and statuses through REST (the GraphQL batch failing):
    the detector's first read of that PR's checks (runs and combined status: an unpinned
    required check may be met by either) sends the tick's ETags and both answers are 304s."""
    daemon.sb.set_protection(
        daemon.sb.repo,
        "main",
        {"required_status_checks": {"strict": False, "checks": [{"context": "ci/build"}]}},
    )
    ticker = daemon.ticker or daemon.start()
    ticker.forge.transport.backoff_base = ticker.forge.transport.backoff_max = 0.01
    n = daemon.open_pr({"docs/ci.md": "# ci\n"})
    daemon.sb.faults("POST", r"/graphql", status=502, count=1000)
    _settle(daemon)
    sha = daemon.pull(n).head.sha
    assert ticker.deps.waiting_checks == {(daemon.sb.repo, n): (sha, "checks")}
    det, now = _clocked(daemon)
    assert (daemon.sb.repo, "checks", sha) in det.feeds()
    daemon.sb.reset_counters()
    _run_until(daemon, det, now, 1)
    eps = daemon.sb.counters()["endpoints"]
    for path in ("check-runs", "status"):
        got = eps[f"GET /repos/{{owner}}/{{repo}}/commits/{{ref}}/{path}"]
        assert got["requests"] == 1 and got["not_modified"] == 1 and got["counted"] == 0
    daemon.sb.clear_faults()


@pytest.mark.parametrize(
    ("schedule", "key", "message"),
    [
        (
            {"detect_requests_per_minute": 40, "detect_burst_requests_per_minute": 20},
            "detect_burst_requests_per_minute",
            "must be from detect_requests_per_minute (40) to 450",
        ),
        (
            {"detect_burst_requests_per_minute": 901},
            "detect_burst_requests_per_minute",
            "secondary limit",
        ),
        ({"detect_burst_seconds": -5}, "detect_burst_seconds", "must be at least 0"),
        ({"detect_burst_seconds": "soon"}, "detect_burst_seconds", "expected an integer"),
        (
            {"detect_burst_graphql_points_per_hour": 2501},
            "detect_burst_graphql_points_per_hour",
            "must be from 0 (no rollup sweep) to 2500",
        ),
        (
            {"detect_burst_graphql_points_per_hour": -1},
            "detect_burst_graphql_points_per_hour",
            "must be at least 0",
        ),
        (
            {"detect_burst_graphql_points_per_hour": "lots"},
            "detect_burst_graphql_points_per_hour",
            "expected an integer",
        ),
    ],
)
def test_a_bad_burst_setting_is_named(
    daemon: Harness, tmp_path: Path, schedule: dict[str, object], key: str, message: str
) -> None:
    """One clear error naming the file and the `schedule.` key."""
    folder = write_config(tmp_path / "bad", daemon.sb, schedule=schedule)
    with pytest.raises(ConfigError) as err:
        load_config(folder)
    text = str(err.value)
    assert message in text and "capdaemon.yml" in text and f"schedule.{key}" in text


def test_in_a_burst_every_waiting_prs_checks_are_read_each_look(daemon: Harness) -> None:
    """Three PRs wait on outside CI. Quiet, a look reads one of their check feeds (each every
    third look); after a change, while the burst lasts, each look reads all three (they fit
    in 120 requests a minute at a look every 5 s), so a CI run completing on any of them is
    merged by the very next look."""
    daemon.configure(
        repo={"extra_checks": ["ci"]},
        schedule={
            "tick_seconds": 60,
            "detect_seconds": 5,
            "detect_requests_per_minute": 6,
            "detect_burst_requests_per_minute": 120,
            "detect_burst_seconds": 60,
        },
    )
    prs = [daemon.open_pr({f"docs/w{i}.md": f"# w{i}\n"}) for i in range(3)]
    _settle(daemon)
    det, now = _clocked(daemon)
    assert sum(f[1] in CHECK_FEEDS for f in det.feeds(burst=False)) == 1
    assert sum(f[1] in CHECK_FEEDS for f in det.feeds(burst=True)) == 3
    _run_until(daemon, det, now, 1)
    daemon.open_pr({"docs/other.md": "# other\n"})  # the change that starts a burst
    while not det.stats.changes:
        _run_until(daemon, det, now, now[0] + 1)
    _run_until(daemon, det, now, now[0] + 20)
    assert det.bursting() and det.stats.burst_looks >= 2
    last = prs[-1]  # the PR whose checks feed comes last in turn
    gh = _app_github(daemon, daemon.sb.evil_installation_id)  # another App: outside CI
    gh.get_repo(daemon.sb.repo).create_check_run(
        name="ci", head_sha=daemon.pull(last).head.sha, status="completed", conclusion="success"
    )
    looks = det.stats.looks
    while det.stats.looks == looks:
        det.run(daemon.sb.now())
        now[0] += 1.0
    assert daemon.pull(last).merged
    assert not any(daemon.pull(n).merged for n in prs[:-1])


def test_a_quiet_look_never_sends_a_checks_feeds_first_read(daemon: Harness) -> None:
    """Three PRs wait on outside CI; the detector's first look reads one of their check feeds.
    The other two have no ETag yet (a first read is counted): quiet looks leave them to the
    full tick — three minutes of looks, 0 counted, never read — and a burst reads them."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    for i in range(3):
        daemon.open_pr({f"docs/u{i}.md": f"# u{i}\n"})
    _settle(daemon)
    det, now = _clocked(daemon)
    _run_until(daemon, det, now, 1)
    read = {f for f in det.marks if f[1] in CHECK_FEEDS}
    assert len(read) == 1
    daemon.sb.reset_counters()
    _run_until(daemon, det, now, 181)
    assert _counted(daemon)[1] == 0 and det.stats.looks > 5
    assert {f for f in det.marks if f[1] in CHECK_FEEDS} == read  # the others never read
    in_burst = [f for f in det.feeds(burst=True) if f[1] in CHECK_FEEDS]
    assert len(in_burst) == 3 and set(in_burst) > read


def test_a_burst_reads_the_newest_waiting_heads_first(daemon: Harness) -> None:
    """Four PRs wait on outside CI, none of their feeds read yet. An agent pushes to the
    oldest: its new head starts waiting last, and a burst look's two first reads go to it
    and the newest PR before the older heads."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    prs = [daemon.open_pr({f"docs/n{i}.md": f"# n{i}\n"}) for i in range(4)]
    _settle(daemon)
    det, _ = _clocked(daemon)
    det.stats.looks = 1  # past the first look, which reads any feed in turn
    daemon.push(prs[0], {"docs/n0.md": "# n0, again\n"})
    daemon.tick()
    ticker = daemon.ticker
    assert ticker is not None
    assert list(ticker.deps.waiting_checks)[-1] == (daemon.sb.repo, prs[0])
    heads = {f[2] for f in det.feeds(burst=True) if f[1] in CHECK_FEEDS}
    assert heads == {daemon.pull(prs[0]).head.sha, daemon.pull(prs[3]).head.sha}
    assert not [f for f in det.feeds(burst=False) if f[1] in CHECK_FEEDS]  # quiet: none


sweep_cadences = _cadences(1, st.integers(0, 2500))


@given(
    sweep_cadences,
    st.lists(st.tuples(st.floats(0, 30), st.integers(0, 5), st.booleans()), max_size=200),
    st.floats(1, 7200),
)
def test_sweeps_keep_within_their_points_budget_over_any_window(
    cad: Cadence, wakes: list[tuple[float, int, bool]], window: float
) -> None:
    """Wake-ups at any times, sweeps of any cost, burst or not: a sweep runs only in a burst,
    never with a budget of 0, and over any window the points spent are at most what the
    budget allows for it plus one sweep."""
    now, last, spent = 0.0, float("-inf"), []
    for gap, points, burst in wakes:
        now += gap
        if sweep_due(cad, last, now, points, burst=burst):
            assert burst and points > 0 and cad.sweep_points_per_hour > 0
            spent.append((now, points))
            last = now
    if cad.sweep_points_per_hour == 0:
        assert not spent
    for start, _ in spent:
        inside = [p for t, p in spent if start <= t <= start + window]
        allowed = cad.sweep_points_per_hour * window / 3600.0 + max(inside)
        assert sum(inside) <= allowed + 1e-6


@given(sweep_cadences, st.floats(-1e6, 1e6), st.floats(0, 1e6), st.integers(1, 10))
def test_a_quiet_look_never_sweeps(cad: Cadence, last: float, now: float, points: int) -> None:
    assert not sweep_due(cad, last, now, points, burst=False)
    assert not sweep_due(cad, float("-inf"), now, 0, burst=True)  # nothing to sweep


@given(cadences, st.integers(0, 200), st.integers(0, 300), st.booleans(), st.floats(0, 1e4))
def test_a_wake_up_skipped_before_building_the_feeds_never_hides_a_due_look(
    cad: Cadence, cost: int, poll: int, burst: bool, since: float
) -> None:
    """Whatever a look would cost, when its spacing has passed the cheap check says a look
    may be due: skipping the feed list when it says no never delays a look."""
    gap = look_spacing(cad, cost, poll, burst=burst)
    if gap > 0 and since >= gap:
        assert look_may_be_due(cad, 0.0, poll, since)
    if not look_may_be_due(cad, 0.0, poll, since):
        assert gap <= 0 or since < gap


class _CountingDetector(ChangeDetector):
    """A detector that counts how often it builds its feed list."""

    built = 0

    def feeds(self, *, burst: bool | None = None) -> list[tuple[str, str, str]]:
        self.built += 1
        return super().feeds(burst=burst)


def test_wake_ups_between_looks_do_not_build_the_feed_list(daemon: Harness) -> None:
    """Woken every second for two quiet minutes with looks at least 5 s apart: the feed list
    (every record walked, the watch file read) is built only when a look may be due, not on
    every wake-up."""
    daemon.open_pr({"docs/a.md": "# a\n"})
    daemon.tick()
    now = [0.0]
    det = _CountingDetector(daemon.ticker or daemon.start(), clock=lambda: now[0])
    for _ in range(120):
        det.run(daemon.sb.now())
        now[0] += 1.0
    assert det.stats.looks >= 5
    assert det.built < 120 / 2  # each wake-up built it before

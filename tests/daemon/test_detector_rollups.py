"""The burst's rollup sweep: the check rollups of every PR waiting on checks in GraphQL, against
the sandbox over HTTP with a real Ticker and detector (pure parts: hypothesis properties)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.daemon.polling.detector import CHECK_FEEDS, ChangeDetector
from capdaemon.daemon.polling.rollups import TERMINAL, rollups_flagged
from capdaemon.forge.errors import ForgeError
from capdaemon.forge.gql import ROLLUP_STATES

from .conftest import Harness
from .test_detector import _counted, _merges
from .test_detector_cadence import _clocked, _run_until
from .test_steady import _app_github

heads = st.tuples(st.sampled_from(["a/x", "a/y", "b/z"]), st.sampled_from("0123456789"))
states = st.sampled_from(sorted(ROLLUP_STATES | {""}))
sweeps = st.dictionaries(heads, states, max_size=12)


@given(sweeps, sweeps)
def test_a_sweep_flags_only_moved_or_newly_terminal_heads(old: Any, new: Any) -> None:
    """A repo is flagged only for a head whose state moved, or a head first seen terminal;
    the same answer twice flags nothing (a missing required check costs one targeted tick)."""
    flagged = rollups_flagged(old, new)
    assert flagged <= {repo for repo, _ in new}
    for (repo, sha), state in new.items():
        before = old.get((repo, sha))
        if (before is not None and before != state) or (before is None and state in TERMINAL):
            assert repo in flagged
    for repo in flagged:
        assert any(
            r == repo and old.get((r, s)) != st_ and ((r, s) in old or st_ in TERMINAL)
            for (r, s), st_ in new.items()
        )
    assert rollups_flagged(new, new) == set()


BURST = {
    "tick_seconds": 60,
    "detect_seconds": 5,
    "detect_requests_per_minute": 30,
    "detect_burst_requests_per_minute": 300,
    "detect_burst_seconds": 600,
}


def _ci(daemon: Harness) -> Any:
    """The outside CI (another App) on the supervised repo."""
    return _app_github(daemon, daemon.sb.evil_installation_id).get_repo(daemon.sb.repo)


def _waiting(daemon: Harness, n: int, *, points: int = 1200, **repo: Any) -> dict[int, Any]:
    """`n` PRs whose merge waits only on `ci`, each with an in-progress `ci` run; the runs."""
    daemon.configure(
        repo={"extra_checks": ["ci"], **repo},
        schedule={**BURST, "detect_burst_graphql_points_per_hour": points},
    )
    prs = [daemon.open_pr({f"docs/w{i}.md": f"# w{i}\n"}) for i in range(n)]
    ci = _ci(daemon)
    runs = {
        p: ci.create_check_run("ci", daemon.pull(p).head.sha, status="in_progress") for p in prs
    }
    for _ in range(12):  # a backlog drains over a few ticks
        daemon.sb.reset_counters()
        report = daemon.tick()
        done = not report.classified and not daemon.writes()
        if done and daemon.ticker and len(daemon.ticker.deps.waiting_checks) >= n:
            break
        daemon.advance(seconds=60)
    ticker = daemon.ticker
    assert ticker is not None and len(ticker.deps.waiting_checks) == n
    return runs


def _burst(daemon: Harness) -> tuple[ChangeDetector, list[float]]:
    """A detector past its first look, in a burst started by a PR opened (and merged)."""
    det, now = _clocked(daemon)
    _run_until(daemon, det, now, 1)
    daemon.open_pr({"docs/start.md": "# start\n"})
    while not det.stats.changes:
        _run_until(daemon, det, now, now[0] + 1)
    assert det.bursting()
    return det, now


def _one_look(daemon: Harness, det: ChangeDetector, now: list[float]) -> None:
    looks = det.stats.looks
    while det.stats.looks == looks:
        det.run(daemon.sb.now())
        now[0] += 1.0


@pytest.mark.parametrize("points", [1200, 0])
def test_ci_completing_on_a_pr_the_feeds_have_not_reached_merges_at_the_next_look(
    daemon: Harness, points: int
) -> None:
    """60 PRs wait on `ci`, more than a burst look reads one by one. `ci` completes on one
    whose checks feed the next look does not read: with the sweep that look merges it; with
    the sweep off (a budget of 0) it does not (the per-PR feeds and the full tick would, later)."""
    runs = _waiting(daemon, 60, points=points)
    det, now = _burst(daemon)
    _run_until(daemon, det, now, now[0] + 6)  # a burst look or two: the first sweep
    assert (det.stats.sweeps > 0) == bool(points) and not det.stats.failed_sweeps
    read_next = {f[2] for f in det.feeds(burst=True) if f[1] in CHECK_FEEDS}
    target = next(p for p in sorted(runs) if daemon.pull(p).head.sha not in read_next)
    runs[target].edit(status="completed", conclusion="success")
    _one_look(daemon, det, now)
    assert daemon.pull(target).merged == bool(points)
    assert not any(daemon.pull(p).merged for p in runs if p != target)


def test_quiet_minutes_send_no_graphql_query(daemon: Harness) -> None:
    """PRs waiting on `ci`, the sweep on: five quiet minutes of looks send no GraphQL query,
    spend no point and no counted request."""
    _waiting(daemon, 3)
    det, now = _clocked(daemon)
    _run_until(daemon, det, now, 1)
    daemon.sb.reset_counters()
    daemon.sb.app.graphql.reset()
    _run_until(daemon, det, now, 301)
    eps = daemon.sb.counters()["endpoints"]
    assert not [k for k in eps if k.startswith("POST /graphql")]
    assert daemon.sb.app.graphql.total_points() == 0
    assert _counted(daemon)[1] == 0 and det.stats.sweeps == 0 and det.stats.looks > 20


def test_the_sweep_keeps_to_its_points_budget_over_a_burst(daemon: Harness) -> None:
    """A budget of 120 points an hour (one 1-point sweep every 30 s): five minutes in a burst
    with nothing else happening spend what the sandbox counts, and no more than the budget
    allows for five minutes plus one sweep."""
    _waiting(daemon, 3, points=120)
    det, now = _burst(daemon)
    _run_until(daemon, det, now, now[0] + 60)  # the burst's own changes served
    ticks, sweeps = det.stats.targeted_ticks, det.stats.sweep_points
    daemon.sb.app.graphql.reset()
    _run_until(daemon, det, now, now[0] + 300)
    spent = daemon.sb.app.graphql.total_points()
    assert det.bursting() and det.stats.targeted_ticks == ticks  # only sweeps spent points
    assert spent == det.stats.sweep_points - sweeps
    assert 9 <= spent <= 120 * 300 / 3600 + 1


@pytest.mark.parametrize("kind", ["status", "secondary"])
def test_a_failing_sweep_flags_nothing_and_loses_nothing(daemon: Harness, kind: str) -> None:
    """The sweep's query answers 502 (or GitHub's secondary rate limit): it changes no state
    seen and flags nothing; `ci` completing meanwhile is merged by a later sweep, once (a
    full tick after it merges nothing more)."""
    runs = _waiting(daemon, 3)
    ticker = daemon.ticker
    assert ticker is not None
    ticker.forge.transport.backoff_base = ticker.forge.transport.backoff_max = 0.01
    det, now = _burst(daemon)
    _run_until(daemon, det, now, now[0] + 6)
    seen = dict(det.rollups)
    assert all(seen[(daemon.sb.repo, daemon.pull(p).head.sha)] == "PENDING" for p in runs)
    target = min(runs)
    runs[target].edit(status="completed", conclusion="success")
    daemon.sb.faults("POST", r"/graphql", status=502, count=1000, kind=kind, retry_after=1)
    assert det.sweep(now[0] + 3600, burst=True) == set()
    assert det.rollups == seen and det.stats.failed_sweeps == 1
    daemon.sb.clear_faults()
    now[0] += 7200  # the next sweep is due
    assert det.sweep(now[0], burst=True) == {daemon.sb.repo}
    assert det.rollups[(daemon.sb.repo, daemon.pull(target).head.sha)] == "SUCCESS"
    det.ticker.deps.changed.add({daemon.sb.repo})
    det.run(daemon.sb.now())
    assert daemon.pull(target).merged
    daemon.tick()
    assert _merges(daemon, target) == 1


def test_graphql_errors_fail_the_whole_sweep_and_an_unknown_sha_is_dropped(
    daemon: Harness,
) -> None:
    """The forge's read: a head in a repository GitHub cannot resolve makes the sweep raise
    (never a partial answer); a sha GitHub does not know is left out."""
    runs = _waiting(daemon, 2)
    forge = daemon.ticker.forge  # type: ignore[union-attr]
    sha = daemon.pull(min(runs)).head.sha
    unknown = "0123456789abcdef0123456789abcdef01234567"
    got = forge.head_rollups([(daemon.sb.repo, sha), (daemon.sb.repo, unknown)])
    assert got == {(daemon.sb.repo, sha): "PENDING"}
    with pytest.raises(ForgeError):
        forge.head_rollups([(daemon.sb.repo, sha), ("acme/no-such-repo", sha)])


def test_a_rollup_made_green_by_another_app_runs_a_targeted_tick_but_no_merge(
    daemon: Harness,
) -> None:
    """Attack: `ci` is required from GitHub Actions (App 15368); another App posts a `ci` run,
    in progress and then passed, so the rollup turns SUCCESS. The sweep flags the repo and the
    targeted tick runs, but decides from its own reads: no merge."""
    runs = _waiting(daemon, 2, extra_checks=[{"context": "ci", "app_id": 15368}])
    det, now = _burst(daemon)
    _run_until(daemon, det, now, now[0] + 6)
    target = min(runs)
    runs[target].edit(status="completed", conclusion="success")
    ticks = det.stats.targeted_ticks
    _one_look(daemon, det, now)
    assert det.rollups[(daemon.sb.repo, daemon.pull(target).head.sha)] == "SUCCESS"
    assert det.stats.targeted_ticks > ticks  # the sweep's, and any its writes start
    assert not daemon.pull(target).merged
    daemon.tick()
    assert not daemon.pull(target).merged and _merges(daemon, target) == 0


def test_a_sweep_gives_way_when_the_ticks_need_the_graphql_budget(daemon: Harness) -> None:
    """The installation's GraphQL budget is nearly spent with most of its hour to go: a due
    sweep is held (no query, nothing flagged), `ci` completing meanwhile is still merged by
    the full tick, once; when a new window refills the budget, sweeps run again."""
    runs = _waiting(daemon, 3)
    det, now = _burst(daemon)
    _run_until(daemon, det, now, now[0] + 6)
    sweeps = det.stats.sweeps
    assert sweeps > 0 and not det.stats.held_sweeps
    key = f"installation:{daemon.sb.installation_id}:graphql"
    bucket = daemon.sb.app.limiter.bucket(key, 5000)
    bucket.used = 4900  # others spent it: 100 points left, most of the hour to go
    daemon.tick()  # the tick's GraphQL read tells the forge
    target = min(runs)
    runs[target].edit(status="completed", conclusion="success")
    daemon.sb.reset_counters()
    assert det.sweep(now[0] + 3600, burst=True) == set()
    assert det.stats.sweeps == sweeps and det.stats.held_sweeps == 1
    eps = daemon.sb.counters()["endpoints"]
    assert not [k for k in eps if k.startswith("POST /graphql CapdaemonRollups")]
    daemon.tick()
    assert daemon.pull(target).merged and _merges(daemon, target) == 1
    bucket.used = 0  # a new window
    daemon.tick()
    det.sweep(now[0] + 7200, burst=True)
    assert det.stats.sweeps == sweeps + 1

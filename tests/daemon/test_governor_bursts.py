"""The daemon's bursts stay within GitHub's secondary limit with a margin: a cold start over 55
new PRs, the hourly window rolling over on a backlog, and ticks overdue after a freeze each
send at most 720 REST points in any minute, as the sandbox (refusing over 720) counts them,
with no secondary refusal. Without the governor each of them was refused."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from capdaemon.filenames import BUDGET_FILE
from tests.forge.sharedclock import SharedClock

from .conftest import Harness
from .test_budget import _budgeted

pytestmark = pytest.mark.slow

LIMIT = 720  # 80 % of GitHub's 900 points a minute


def _governed(daemon: Harness) -> SharedClock:
    """Start the daemon with its forge's waits on a clock shared with the sandbox's windows,
    against a sandbox refusing over 720 points a minute across endpoints."""
    daemon.sb.set_fidelity(rest_points_per_minute=LIMIT, points_per_minute=0)
    ticker = daemon.start()
    clock = SharedClock(daemon.sb)
    transport: Any = ticker.forge.transport  # type: ignore[attr-defined]
    transport.sleep = clock.sleep
    transport.governor.now = clock
    return clock


def _installation(daemon: Harness) -> dict[str, Any]:
    stats: dict[str, Any] = daemon.sb.secondary_stats()
    return stats.get(f"installation:{daemon.sb.installation_id}", {})


def _open_many(daemon: Harness, n: int) -> list[int]:
    return [daemon.open_pr({f"docs/burst{i}.md": f"# {i}\n"}) for i in range(n)]


def _assert_within(daemon: Harness) -> None:
    stats = _installation(daemon)
    assert stats.get("refused", {}) == {}, stats
    assert stats["rest_points_max_minute"] <= LIMIT
    assert stats["peak_inflight"] == 1


def test_a_cold_start_over_60_new_prs_stays_within_720_points_a_minute(
    daemon: Harness,
) -> None:
    """60 new docs PRs, 200 writes a minute allowed: the first tick reads, classifies,
    publishes and merges them in one burst, and the sandbox never refuses a request."""
    _budgeted(daemon, writes_per_minute=200)
    _open_many(daemon, 60)
    _governed(daemon)
    daemon.sb.reset_counters()
    report = daemon.tick()
    assert not [e for e in report.errors if "rate limit" in e], report.errors
    assert report.classified
    _assert_within(daemon)


def test_the_hourly_window_rolling_over_on_a_backlog_stays_within_720(daemon: Harness) -> None:
    """50 new PRs read and classified while the hour's writes were spent (they wait): when
    the hour rolls over the tick publishes and merges all of them at once, and that burst is
    paced."""
    _budgeted(daemon, writes_per_minute=200, writes_per_hour=300)
    daemon.state_dir.mkdir(parents=True, exist_ok=True)
    spent = {"at": (daemon.sb.now() - timedelta(minutes=59)).isoformat(), "writes": 300}
    (daemon.state_dir / BUDGET_FILE).write_text(
        json.dumps({"ticks": [spent | {"counted": 0}], "waiting": {}}), encoding="utf-8"
    )
    _open_many(daemon, 50)
    _governed(daemon)
    report = daemon.tick()
    assert report.backlog_left == 50, report.backlog_left
    daemon.sb.reset_counters()
    daemon.advance(minutes=1, seconds=1)
    for _ in range(3):  # the rollover, then the merges the moved main made computable again
        report = daemon.tick()
        assert not [e for e in report.errors if "rate limit" in e], report.errors
        daemon.advance(seconds=20)
    _assert_within(daemon)


def test_ticks_overdue_after_a_freeze_stay_within_720(daemon: Harness) -> None:
    """After a SIGSTOP/SIGCONT the overdue ticks run back to back over 50 open PRs (30 of
    them pushed to meanwhile): their reads together are paced, none refused."""
    numbers = [daemon.open_pr({f"src/frozen{i}.py": f"x = {i}\n"}) for i in range(50)]
    _governed(daemon)
    daemon.tick()
    for n in numbers[:30]:
        daemon.push(n, {f"src/more{n}.py": "y = 1\n"})
    daemon.sb.reset_counters()
    daemon.advance(seconds=90)  # three 30 s intervals overdue
    for _ in range(3):
        report = daemon.tick(daemon.sb.now() + timedelta(seconds=1))
        assert not [e for e in report.errors if "rate limit" in e], report.errors
    _assert_within(daemon)

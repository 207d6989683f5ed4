"""A cold start over a backlog larger than the write budget: progress every tick, ballots and
approved merges keep flowing, the backlog is reported."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from capdaemon.config import GitHubConfig
from capdaemon.daemon.budget import TickBudget
from capdaemon.filenames import BUDGET_FILE

from .conftest import Harness

pytestmark = pytest.mark.slow

WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}


def _budgeted(daemon: Harness, **github: Any) -> None:
    daemon.configure()
    path = daemon.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["github"].update(github)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _metrics(daemon: Harness) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((daemon.state_dir / "tick_metrics.json").read_text())
    return data


def test_cold_start_over_budget_progresses_and_keeps_ballots_flowing(daemon: Harness) -> None:
    """Nine new PRs, 11 writes a minute (9 for new PRs a tick: a D ballot costs 2 writes, a B
    PR 3): each tick takes on new PRs and says how many wait; the D ballot, once approved,
    merges while the backlog is still there."""
    _budgeted(daemon, writes_per_minute=11)
    d = daemon.open_pr(WORKFLOW)  # oldest: taken on first
    for i in range(8):
        daemon.open_pr({f"docs/p{i}.md": f"# {i}\n"})
    backlog = []
    report = daemon.tick()
    backlog.append(report.backlog_left)
    assert report.backlog_left == 6 and len(report.classified) == 3
    assert _metrics(daemon)["backlog_left"] == 6
    assert _metrics(daemon)["budget"]["new_pr_writes"] == 9
    assert _metrics(daemon)["backlog_waiting"] == {"A": 0, "B": 6, "C": 0, "D": 0}
    daemon.ballot(d, "alice").create_comment("/approve A")
    merged = set(report.merged)
    while report.backlog_left:
        daemon.advance(seconds=61)
        report = daemon.tick()
        assert report.classified, "no progress in a tick"
        backlog.append(report.backlog_left)
        merged |= set(report.merged)
        if len(backlog) == 2:  # the approved ballot did not wait for the backlog
            assert f"acme/widgets#{d}" in report.merged and report.backlog_left > 0
    assert backlog == [6, 3, 0]
    for _ in range(12):  # a merge moves main: the others' mergeability is computed again
        if len(merged) == 9:
            break
        daemon.advance(seconds=61)
        merged |= set(daemon.tick().merged)
    assert len(merged) == 9  # every docs PR and the approved D PR
    assert json.loads((daemon.state_dir / BUDGET_FILE).read_text())["ticks"]


def test_same_minute_tick_takes_no_new_pr_but_still_merges_known_ones(daemon: Harness) -> None:
    """A second tick inside the same minute has spent its write budget: new PRs wait, and the
    tick still completes (ballots and merges of known PRs are never deferred)."""
    _budgeted(daemon, writes_per_minute=11)
    for i in range(5):
        daemon.open_pr({f"docs/q{i}.md": f"# {i}\n"})
    first = daemon.tick()
    assert first.backlog_left == 2
    second = daemon.tick()  # same clock: the minute's writes are spent
    assert second.backlog_left == 2 and not second.classified and not second.errors


def test_corrupt_budget_file_is_set_aside(daemon: Harness) -> None:
    """budget.json that is not JSON is renamed aside (kept) and the tick runs."""
    daemon.configure()
    daemon.state_dir.mkdir(parents=True, exist_ok=True)
    (daemon.state_dir / BUDGET_FILE).write_text("{not json", encoding="utf-8")
    daemon.open_pr({"docs/x.md": "# x\n"})
    report = daemon.tick()
    assert report.merged and not report.errors
    kept = list(daemon.state_dir.glob(f"{BUDGET_FILE}.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text() == "{not json"


def test_allowance_follows_the_primary_budget_and_the_hour(tmp_path: Path) -> None:
    """New PRs a tick may read, and writes it may spend on new PRs: reads bounded by the
    rate-limit headers' remaining requests (less a reserve sized from the limit) and by the
    configured hourly request budget; writes by what the last hour and minute spent; an hour
    later the budget is back."""
    now = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)
    b = TickBudget(tmp_path, GitHubConfig())
    assert b.start(now, rate_remaining=5000, rate_limit=5000) == (533, 70)  # 4800 // 9; 80 - 10
    assert b.start(now, rate_remaining=290, rate_limit=5000) == (10, 70)  # (290 - 200) // 9
    assert b.start(now, rate_remaining=100, rate_limit=5000) == (0, 70)  # the reserve is kept
    assert b.start(now, None) == (None, 70)  # no read budget known: reads are not limited
    b = TickBudget(tmp_path, GitHubConfig(requests_per_hour=400, writes_per_hour=60))
    b.start(now, None)
    b.finish(now, writes=30, counted=300)
    later = now + timedelta(minutes=5)
    assert b.start(later, None) == (0, 15)  # (400 - 300 - 100) // 9; 60 - 30 - 15
    assert b.start(now + timedelta(minutes=61), None) == (33, 45)
    again = TickBudget(tmp_path, GitHubConfig(requests_per_hour=400, writes_per_hour=60))
    assert again.start(later, None) == (0, 15)  # what the last process spent is remembered

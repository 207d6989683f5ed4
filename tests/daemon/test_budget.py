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
from capdaemon.daemon.core.budget import TickBudget, Waiting, rank_of, writes_for
from capdaemon.filenames import BUDGET_FILE
from capdaemon.model import Quadrant

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
        daemon.open_pr({f"notes/p{i}.md": f"# {i}\n"})
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
    assert len(merged) == 9  # every notes PR and the approved D PR
    assert json.loads((daemon.state_dir / BUDGET_FILE).read_text())["ticks"]


def test_same_minute_tick_takes_no_new_pr_but_still_merges_known_ones(daemon: Harness) -> None:
    """A second tick inside the same minute has spent its write budget: new PRs wait, and the
    tick still completes (ballots and merges of known PRs are never deferred)."""
    _budgeted(daemon, writes_per_minute=11)
    for i in range(5):
        daemon.open_pr({f"notes/q{i}.md": f"# {i}\n"})
    first = daemon.tick()
    assert first.backlog_left == 2
    second = daemon.tick()  # same clock: the minute's writes are spent
    assert second.backlog_left == 2 and not second.classified and not second.errors


def test_corrupt_budget_file_is_set_aside(daemon: Harness) -> None:
    """budget.json that is not JSON is renamed aside (kept) and the tick runs."""
    daemon.configure()
    daemon.state_dir.mkdir(parents=True, exist_ok=True)
    (daemon.state_dir / BUDGET_FILE).write_text("{not json", encoding="utf-8")
    daemon.open_pr({"notes/x.md": "# x\n"})
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
    # reads: (720 - 200) // 5 a minute (the governor's share of GitHub's secondary limit),
    # under 4800 // 5; writes 80 - 10
    assert b.start(now, rate_remaining=5000, rate_limit=5000) == (104, 70)
    assert b.start(now, rate_remaining=290, rate_limit=5000) == (18, 70)  # (290 - 200) // 5
    assert b.start(now, rate_remaining=100, rate_limit=5000) == (0, 70)  # the reserve is kept
    assert b.start(now, None) == (104, 70)  # no primary budget known yet: the minute's
    b.finish(now, writes=0, counted=650)
    # the minute's reads are spent (720 - 650 - 200 < 0): as many as can be published
    assert b.start(now, None) == (35, 70)  # 70 writes // 2 (a ballot or an A PR)
    assert b.start(now + timedelta(seconds=61), None) == (104, 70)
    lifted = GitHubConfig(writes_per_hour=10**6, writes_per_minute=10**6)
    assert TickBudget(tmp_path / "x", lifted).start(now, None) == (499_975, 999_950)
    (tmp_path / BUDGET_FILE).unlink()
    b = TickBudget(tmp_path, GitHubConfig(requests_per_hour=400, writes_per_hour=60))
    b.start(now, None)
    b.finish(now, writes=30, counted=300)
    later = now + timedelta(minutes=5)
    assert b.start(later, None) == (0, 15)  # (400 - 300 - 100) // 5; 60 - 30 - 15
    assert b.start(now + timedelta(minutes=61), None) == (60, 45)  # 300 // 5
    again = TickBudget(tmp_path, GitHubConfig(requests_per_hour=400, writes_per_hour=60))
    assert again.start(later, None) == (0, 15)  # what the last process spent is remembered


def test_publication_costs_and_order() -> None:
    """What publishing a new PR writes, and the order new PRs are published in: an owner's
    answer first (a ballot, a scope issue), then A merges, then B/C passive reviews."""
    assert writes_for(Quadrant.D, blocked=False) == 2  # ballot, L1.C3
    assert writes_for(Quadrant.A, blocked=False) == 2  # L1.C3, merge
    assert writes_for(Quadrant.B, blocked=False) == 3  # passive review, L1.C3, merge
    assert writes_for(Quadrant.C, blocked=True) == 2  # scope issue, L1.C3; no merge
    assert writes_for(Quadrant.D, blocked=True) == 3  # ballot, scope issue, L1.C3
    assert rank_of(Quadrant.D, blocked=False) < rank_of(Quadrant.A, blocked=False)
    assert rank_of(Quadrant.A, blocked=False) < rank_of(Quadrant.B, blocked=False)
    assert rank_of(Quadrant.B, blocked=False) == rank_of(Quadrant.C, blocked=False)
    assert rank_of(Quadrant.C, blocked=True) == rank_of(Quadrant.D, blocked=False)


def test_waiting_prs_are_remembered_and_a_malformed_entry_is_set_aside(tmp_path: Path) -> None:
    """The waiting PRs outlive the process (budget.json); a waiting entry that does not parse
    sets the whole file aside (kept, logged) and the budget starts empty."""
    now = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)
    b = TickBudget(tmp_path, GitHubConfig())
    b.start(now, None)
    b.waiting = {"acme/widgets#4": Waiting("f" * 32, "D", blocked=False)}
    b.finish(now, writes=5, counted=40)
    again = TickBudget(tmp_path, GitHubConfig())
    assert again.waiting == b.waiting and again.history == b.history
    path = tmp_path / BUDGET_FILE
    data = json.loads(path.read_text())
    data["waiting"]["acme/widgets#4"]["quadrant"] = "E"
    path.write_text(json.dumps(data), encoding="utf-8")
    broken = TickBudget(tmp_path, GitHubConfig())
    assert broken.waiting == {} and broken.history == []
    kept = list(tmp_path.glob(f"{BUDGET_FILE}.corrupt-*"))
    assert len(kept) == 1 and '"E"' in kept[0].read_text()

"""The hourly primary budget is planned on what GitHub says is left now, not on the last tick's
figure: reads of new PRs stop at the reserve kept for merges and votes, so an approved ballot
merges while another client has spent nearly all of the installation's hour."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from capdaemon.config import GitHubConfig
from capdaemon.daemon.core.budget import TickBudget

from .conftest import Harness

pytestmark = pytest.mark.slow

WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}
LEFT = 230  # requests left in the hour when the tick starts: the reserve (200) and a little


def test_an_approved_vote_merges_while_reads_have_nearly_spent_the_hour(
    daemon: Harness,
) -> None:
    """A D PR approved by its owner, then 60 new PRs open while another client of the
    installation leaves only 230 requests of the hour: the tick reads only the new PRs the
    budget above the reserve allows (the others wait, counted as unread) and the vote's merge
    goes through; no request is refused for a spent budget."""
    d = daemon.open_pr(WORKFLOW)
    daemon.tick()
    daemon.ballot(d, "alice").create_comment("/approve A")
    for i in range(60):
        daemon.open_pr({f"docs/r{i}.md": f"# {i}\n"})
    sb = daemon.sb
    key = f"installation:{sb.installation_id}"
    used = sb.app.limiter.bucket(key, 5000).used
    sb.spend_rate_limit(key, 5000 - used - LEFT)
    sb.reset_counters()
    daemon.advance(seconds=61)
    report = daemon.tick()
    assert f"acme/widgets#{d}" in report.merged, report.errors
    assert not [e for e in report.errors if "rate limit" in e], report.errors
    assert report.backlog_unread > 0  # deferred, and said so
    assert sb.counters()["total"]["errors"] == 0


def test_the_plan_follows_what_github_says_is_left(tmp_path: Path) -> None:
    """Planned on a full hour (104 new PRs a minute), replanned on 290 left: only
    (290 - 200) // 5 = 18 more are read; a later, fuller answer never raises the allowance."""
    b = TickBudget(tmp_path, GitHubConfig())
    now = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)
    assert b.start(now, rate_remaining=5000, rate_limit=5000) == (104, 70)
    b.replan(290, 5000)
    b.replan(4000, 5000)
    assert [b.take_read() for _ in range(19)] == [True] * 18 + [False]
    assert b.figures["new_pr_reads_replanned"] == 18

"""Content-creating writes are paced within GitHub's secondary limits instead of refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from capdaemon.forge.client import Forge
from capdaemon.forge.errors import RateLimited
from capdaemon.forge.pacing import ContentPacer, creates_content
from ghsandbox import Sandbox


class _Clock:
    def __init__(self, sb: Sandbox) -> None:
        self.t = 1000.0
        self.sb = sb
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds
        self.sb.advance_clock(seconds)  # GitHub's window moves on while we wait


def test_the_fourth_issue_waits_for_the_window_instead_of_being_refused(
    sandbox: Sandbox, make_forge: Callable[..., Forge]
) -> None:
    """With a limit of 3 a minute (GitHub: 80), the 4th new issue waits ~60 s and is accepted:
    GitHub never answers a secondary-limit 403 (without pacing the 4th was refused)."""
    sandbox.set_fidelity(content_per_minute=3)
    forge = make_forge()
    clock = _Clock(sandbox)
    forge.transport.sleep = clock.sleep
    forge.transport.pacer = ContentPacer(per_minute=3, per_hour=500, now=clock)
    sandbox.reset_counters()
    for i in range(4):
        forge.ensure_issue(sandbox.repo, {"kind": "note", "i": i}, f"note {i}", "text")
    assert sandbox.counters()["total"]["errors"] == 0
    assert len(clock.slept) == 1 and 59 <= clock.slept[0] <= 60


def test_a_wait_longer_than_the_tick_budget_stops_the_tick(
    sandbox: Sandbox, make_forge: Callable[..., Forge]
) -> None:
    """Over the hourly limit the wait is far beyond the budget: RateLimited, nothing sent."""
    forge = make_forge(wait=30)
    clock = _Clock(sandbox)
    forge.transport.pacer = ContentPacer(per_minute=80, per_hour=2, now=clock)
    for i in range(2):
        forge.ensure_issue(sandbox.repo, {"kind": "note", "i": i}, f"note {i}", "text")
    before = sandbox.counters()["total"]["requests"]
    with pytest.raises(RateLimited):
        forge.ensure_issue(sandbox.repo, {"kind": "note", "i": 9}, "note 9", "text")
    writes = [k for k in sandbox.counters()["endpoints"] if k.startswith("POST")]
    assert sandbox.counters()["total"]["requests"] - before <= 2  # reads only (marker lookup)
    assert "POST /repos/{owner}/{repo}/issues" in writes


def test_only_issue_comment_and_pull_creation_counts() -> None:
    """Labels, check runs and edits are not content-creating."""
    assert creates_content("POST", "/repos/o/r/issues")
    assert creates_content("POST", "/api/v3/repos/o/r/issues/7/comments")
    assert creates_content("POST", "/repos/o/r/pulls")
    assert not creates_content("POST", "/repos/o/r/labels")
    assert not creates_content("POST", "/repos/o/r/check-runs")
    assert not creates_content("PATCH", "/repos/o/r/issues/7")

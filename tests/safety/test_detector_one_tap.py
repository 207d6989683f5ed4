"""The change detector sees an owner's 👍 on a tier-2 PR's one-tap (the issue lives in the
tiers' store, not among the PR's decision issues), and its targeted tick merges the PR."""

from __future__ import annotations

import itertools

import pytest

from capdaemon.daemon.polling.detector import ChangeDetector

from .conftest import SafetyHarness

pytestmark = pytest.mark.slow


def test_a_thumbs_up_on_a_one_tap_is_flagged_and_merged(safe: SafetyHarness) -> None:
    safe.configure()
    safe.task("t-2", level=2)
    number = safe.open_pr(
        {"examples/old.py": "print('v2')\n"},
        title="task work",
        trailers="Agent-Session: claude-code/claude-opus-4/sess-00000001\nTask-Id: t-2",
    )
    safe.tick()
    ticker = safe.ticker
    assert ticker is not None
    tap = next(i for i in safe.issues("one-tap") if f"#{number}@" in i.body)
    minutes = itertools.count(0, 60)
    det = ChangeDetector(ticker, clock=lambda: float(next(minutes)))
    det.run(safe.sb.now())  # the marks
    assert det.run(safe.sb.now()) is None  # quiet
    safe.gh("alice").get_repo(safe.sb.bot_repo).get_issue(tap.number).create_reaction("+1")
    report = det.run(safe.sb.now())
    assert report is not None and report.merged == [f"{safe.sb.repo}#{number}"]
    assert safe.pull(number).merged

"""Post-merge probe (SPEC 6.2): pending, healthy, failed; revert or incident only; daily cap."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from capdaemon.config import PostMergeConfig
from capdaemon.decide.probe import (
    ProbeStatus,
    ProbeWatch,
    RevertAction,
    evaluate_probe,
    revert_decision,
    reverts_on_day,
)
from capdaemon.model import CheckRun

from .factories import at

CFG = PostMergeConfig(window_minutes=30)
WATCH = ProbeWatch("o/r", 5, "m" * 40, 1, at(0))


def run(
    name: str, conclusion: str | None, status: str = "completed", minute: float = 5, id_: int = 1
) -> CheckRun:
    """A check run on the merge commit, published by the CI App (id 7)."""
    return CheckRun(name, status, conclusion, completed_at=at(minute), id=id_, app_id=7)


def status(name: str, state: str, minute: float = 5, id_: int = 1) -> CheckRun:
    """A commit status on the merge commit (no App: anyone with write access can post one)."""
    return CheckRun(name, "completed", state, completed_at=at(minute), id=id_)


PROBE_CASES = [
    ("no-checks-in-window", [], 10, ProbeStatus.PENDING),
    ("no-checks-after-window", [], 31, ProbeStatus.HEALTHY),
    ("green-in-window", [run("ci", "success")], 10, ProbeStatus.PENDING),
    ("green-after-window", [run("ci", "success")], 30, ProbeStatus.HEALTHY),
    ("failure-in-window", [run("ci", "failure")], 10, ProbeStatus.FAILED),
    ("failure-after-window", [run("ci", "failure")], 45, ProbeStatus.FAILED),
    ("timed-out", [run("ci", "timed_out")], 10, ProbeStatus.FAILED),
    ("cancelled-is-not-failure", [run("ci", "cancelled")], 31, ProbeStatus.HEALTHY),
    (
        "neutral-skipped-ok",
        [run("a", "neutral"), run("b", "skipped", id_=2)],
        31,
        ProbeStatus.HEALTHY,
    ),
    ("running-after-window", [run("ci", None, "in_progress")], 40, ProbeStatus.PENDING),
    ("running-too-long", [run("ci", None, "in_progress")], 60, ProbeStatus.FAILED),
    (
        "rerun-green-replaces-failure",
        [run("ci", "failure", minute=5, id_=1), run("ci", "success", minute=9, id_=2)],
        31,
        ProbeStatus.HEALTHY,
    ),
    (
        "green-status-never-hides-a-red-status",
        [status("ci", "failure", minute=5, id_=1), status("ci", "success", minute=9, id_=2)],
        31,
        ProbeStatus.FAILED,
    ),
    (
        "rerun-failure-replaces-green",
        [run("ci", "success", minute=5, id_=1), run("ci", "failure", minute=9, id_=2)],
        31,
        ProbeStatus.FAILED,
    ),
]


@pytest.mark.parametrize(
    ("checks", "minute", "status"), [c[1:] for c in PROBE_CASES], ids=[c[0] for c in PROBE_CASES]
)
def test_evaluate_probe(checks, minute: float, status: ProbeStatus) -> None:
    """The merge commit's checks give the expected probe status."""
    res = evaluate_probe(WATCH, checks, at(minute), CFG)
    assert res.status is status and res.reason
    assert res.done is (status is not ProbeStatus.PENDING)


def test_failed_checks_named() -> None:
    """A failed probe names the failed checks."""
    res = evaluate_probe(WATCH, [run("ci", "failure"), run("lint", "success", id_=2)], at(10), CFG)
    assert res.failed_checks == ("ci",)


REVERT_CASES = [
    ("not-failed", dict(failed=False), RevertAction.NONE),
    ("auto-revert-off", dict(auto_revert_pr=False), RevertAction.INCIDENT_ONLY),
    ("merge-commit-two-parents", dict(parents=2), RevertAction.INCIDENT_ONLY),
    ("cap-reached", dict(reverts_today=3), RevertAction.INCIDENT_ONLY),
    ("does-not-apply", dict(applies_cleanly=False), RevertAction.INCIDENT_ONLY),
    ("open-revert", {}, RevertAction.OPEN_REVERT),
    ("under-cap", dict(reverts_today=2), RevertAction.OPEN_REVERT),
]


@pytest.mark.parametrize(
    ("change", "action"), [c[1:] for c in REVERT_CASES], ids=[c[0] for c in REVERT_CASES]
)
def test_revert_decision(change: dict, action: RevertAction) -> None:
    """A revert PR opens only when enabled, single-parent, under the cap and clean."""
    args = dict(failed=True, auto_revert_pr=True, reverts_today=0, applies_cleanly=True, parents=1)
    args.update(change)
    watch = ProbeWatch("o/r", 5, "m" * 40, args.pop("parents"), at(0))
    d = revert_decision(watch, args.pop("failed"), cap=3, **args)
    assert d.action is action and d.reason


def test_daily_cap_counts_utc_day() -> None:
    """Reverts are counted per UTC calendar day."""
    times = [
        datetime(2026, 5, 24, 23, 59, tzinfo=UTC),
        datetime(2026, 5, 25, 0, 0, tzinfo=UTC),
        datetime(2026, 5, 25, 8, 0, tzinfo=UTC),
    ]
    assert reverts_on_day(times, datetime(2026, 5, 25, 23, 0, tzinfo=UTC)) == 2
    assert reverts_on_day(times, datetime(2026, 5, 26, 0, 1, tzinfo=UTC)) == 0


def test_watch_needs_a_parent() -> None:
    """A watch with zero parents is invalid."""
    with pytest.raises(ValueError, match="parents_count"):
        ProbeWatch("o/r", 5, "m", 0, at(0))

"""Closing a rejected PR is recorded before it is made, like a merge: a lost reply or a rate
limit keeps the intent for the next tick, which reconciles it without closing twice."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from capdaemon.daemon.service.digest_job import pr_records
from capdaemon.stores.prrecord import Pending

from .conftest import Harness

pytestmark = pytest.mark.slow

WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}
CLOSE = "PATCH /repos/{owner}/{repo}/pulls/{number}"


def _rejected(daemon: Harness, *, wait_budget: bool = True) -> int:
    """A D PR with its ballot open, then an owner's `/reject` on it (not read yet)."""
    if not wait_budget:  # a fault is answered at once, never waited out
        sb = daemon.sb
        gh = {
            "base_url": sb.base_url,
            "app_id": sb.app_id,
            "private_key_file": str(sb.app_key_path),
            "installation_id": sb.installation_id,
            "per_tick_wait_seconds": 0,
        }
        daemon.configure(github=gh)
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/reject")
    return n


def _statuses(daemon: Harness, n: int) -> list[str]:
    return [str(r["status"]) for r in daemon.actions("close", n)]


def _pending(daemon: Harness, n: int) -> Pending | None:
    return pr_records(daemon.state_dir)[f"{daemon.sb.repo}#{n}"].pending


def _pending_op(daemon: Harness, n: int) -> object:
    found = _pending(daemon, n)
    return found.op.value if found is not None else None


def _close_comments(daemon: Harness, n: int) -> int:
    return sum(1 for c in daemon.pull(n).get_issue_comments() if "rejected" in c.body)


def test_a_lost_close_reply_is_unknown_and_reconciled_not_failed(daemon: Harness) -> None:
    """502 on the close although the close is what GitHub did: recorded "unknown" (not
    "failed"), the intent kept; the next tick reads the PR and records it done, once."""
    n = _rejected(daemon, wait_budget=False)
    daemon.sb.faults("PATCH", rf"/pulls/{n}$", status=502, count=4)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert report.closed == [] and daemon.pull(n).state == "open"
    assert _statuses(daemon, n) == ["attempted", "unknown"]
    assert _pending_op(daemon, n) == "close"
    daemon.pull(n).edit(state="closed")  # what GitHub did behind the lost reply
    daemon.sb.reset_counters()
    report = daemon.tick()
    assert report.reconciled == [f"{daemon.sb.repo}#{n}:close"]
    assert _statuses(daemon, n) == ["attempted", "unknown", "done"]
    assert daemon.actions("close", n)[-1]["reconciled"] is True
    assert _pending(daemon, n) is None
    daemon.tick()
    assert _statuses(daemon, n) == ["attempted", "unknown", "done"]
    assert CLOSE not in daemon.writes()


def test_a_close_that_did_not_happen_is_retried_once_after_reconciling(daemon: Harness) -> None:
    """502 on the close and GitHub did not close: next tick records not_done, closes once."""
    n = _rejected(daemon, wait_budget=False)
    daemon.sb.faults("PATCH", rf"/pulls/{n}$", status=502, count=4)
    daemon.tick()
    daemon.sb.clear_faults()
    assert daemon.pull(n).state == "open"
    daemon.tick()
    daemon.tick()
    assert daemon.pull(n).state == "closed"
    assert _statuses(daemon, n) == ["attempted", "unknown", "not_done", "attempted", "done"]
    assert _close_comments(daemon, n) == 1
    assert daemon.issue_for(n, "ballot").state == "closed"


def test_a_rate_limit_on_the_close_ends_the_tick_and_keeps_the_intent(daemon: Harness) -> None:
    """A secondary rate limit on the close is not one more failed PR: the tick ends there
    (nothing after it runs), the intent stays, and the next tick reconciles and closes once."""
    n = _rejected(daemon, wait_budget=False)
    a = daemon.open_pr({"README.md": "# widgets, merged after the limit\n"})
    daemon.sb.faults("PATCH", rf"/pulls/{n}$", kind="secondary", retry_after=600)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert any("rate limited" in e for e in report.errors), report.errors
    assert report.merged == [] and not daemon.pull(a).merged  # step 4 never ran
    assert _statuses(daemon, n) == ["attempted", "unknown"]
    assert _pending_op(daemon, n) == "close"
    daemon.stop()  # a restart reads the state the ended tick left
    report = daemon.tick()
    assert report.reconciled == [f"{daemon.sb.repo}#{n}:close"]
    assert daemon.pull(n).state == "closed" and daemon.pull(a).merged
    assert _statuses(daemon, n) == ["attempted", "unknown", "not_done", "attempted", "done"]
    assert _close_comments(daemon, n) == 1


def _tick_killed_at(daemon: Harness, point: str) -> subprocess.CompletedProcess[str]:
    """`capdaemon tick --once` in a child process that dies like kill -9 at `point`."""
    daemon.stop()  # the child takes the state lock
    return subprocess.run(
        [
            *(sys.executable, "-m", "capdaemon.cli", "tick", "--once"),
            *("--config", str(daemon.config_dir), "--state", str(daemon.state_dir)),
            *("--log-format", "json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CAPDAEMON_CRASH_AFTER": point},
    )


@pytest.mark.parametrize(
    ("point", "closed_by_crashed_tick", "after"),
    [
        ("audit:close", False, ["attempted", "not_done", "attempted", "done"]),
        ("act:close", True, ["attempted", "done"]),
        ("done:close", True, ["attempted", "done"]),
    ],
)
def test_kill_9_around_the_close_is_reconciled_without_closing_twice(
    daemon: Harness, point: str, closed_by_crashed_tick: bool, after: list[str]
) -> None:
    """Killed between recording the close and making it, after GitHub closed, or after the
    "done" record: the next ticks finish it with one close, one comment, one "done"."""
    n = _rejected(daemon)
    proc = _tick_killed_at(daemon, point)
    assert proc.returncode == 137, proc.stderr[-2000:]
    assert (daemon.pull(n).state == "closed") is closed_by_crashed_tick
    assert _pending_op(daemon, n) == "close"
    daemon.sb.reset_counters()
    report = daemon.tick()
    daemon.tick()
    assert report.reconciled == [f"{daemon.sb.repo}#{n}:close"]
    assert daemon.pull(n).state == "closed"
    assert _statuses(daemon, n) == after
    assert _pending(daemon, n) is None
    assert daemon.writes().get(CLOSE, 0) == (0 if closed_by_crashed_tick else 1)
    assert _close_comments(daemon, n) == 1

"""kill -9 at named points (CAPDAEMON_CRASH_AFTER test hook): the log says each outcome once."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from capdaemon.daemon.service.digest_job import pr_records
from capdaemon.stores.prrecord import PendingOp

from .conftest import Harness

pytestmark = pytest.mark.slow


def _tick_killed_at(daemon: Harness, point: str) -> subprocess.CompletedProcess[str]:
    """`capdaemon tick --once` in a child process that dies like kill -9 at `point`."""
    if not (daemon.config_dir / "capdaemon.yml").exists():
        daemon.configure()
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


def test_kill_9_between_done_record_and_state_save_records_the_merge_once(
    daemon: Harness,
) -> None:
    """Killed after the fsynced "done" record, before prs.json lost its pending merge: the
    next tick sees the outcome in the log and writes no second `merge … done`."""
    n = daemon.open_pr({"README.md": "# widgets (crash after done)\n"})
    proc = _tick_killed_at(daemon, "done:merge")
    assert proc.returncode == 137, proc.stderr[-2000:]
    assert daemon.pull(n).merged
    assert [r["status"] for r in daemon.actions("merge", n)] == ["attempted", "done"]
    prs = pr_records(daemon.state_dir)  # prs.json plus its journal, as the daemon reads it
    pending = prs[f"{daemon.sb.repo}#{n}"].pending  # the crash left it pending
    assert pending is not None and pending.op is PendingOp.MERGE
    daemon.sb.reset_counters()
    report = daemon.tick()
    daemon.tick()
    assert report.reconciled == [f"{daemon.sb.repo}#{n}:merge"] and report.merged == []
    merges = daemon.actions("merge", n)
    assert [r["status"] for r in merges] == ["attempted", "done"], merges
    assert "PUT /repos/{owner}/{repo}/pulls/{number}/merge" not in daemon.writes()
    assert len(daemon.actions("probe.watch", n)) == 1  # one merge, watched once

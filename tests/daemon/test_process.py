"""The daemon as a process: tick --once, lock, corrupt state, SIGTERM + sd_notify, kill -9."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from capdaemon.state import StateLock

from .conftest import Harness

pytestmark = pytest.mark.slow


def _capdaemon(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def _dirs(daemon: Harness) -> list[str]:
    if not (daemon.config_dir / "capdaemon.yml").exists():
        daemon.configure()
    return [
        "--config",
        str(daemon.config_dir),
        "--state",
        str(daemon.state_dir),
        "--log-format",
        "json",
    ]


def test_tick_once_runs_one_tick_and_prints_a_summary(daemon: Harness) -> None:
    """`capdaemon tick --once` classifies and merges an A PR, prints a JSON summary, exits 0."""
    n = daemon.open_pr({"README.md": "# widgets (typo)\n"})
    proc = _capdaemon("tick", "--once", *_dirs(daemon))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["merged"] == [f"acme/widgets#{n}"]
    events = [
        json.loads(line)["event"] for line in proc.stderr.splitlines() if line.startswith("{")
    ]
    assert "tick.start" in events and "merge.done" in events and "tick.done" in events
    assert "ghp_" not in proc.stderr and "BEGIN" not in proc.stderr


def test_locked_state_directory_refuses_a_second_daemon(daemon: Harness) -> None:
    """While a daemon holds the state lock, `tick` and `run` on the same dir exit 1 and say why."""
    args = _dirs(daemon)
    with StateLock(daemon.state_dir):
        for cmd in (["tick", "--once"], ["run", "--tick-seconds", "1"]):
            proc = _capdaemon(*cmd, *args, timeout=30)
            assert proc.returncode == 1
            assert "locked by another capdaemon" in proc.stderr


def test_corrupt_state_file_refuses_to_start_and_is_kept(daemon: Harness) -> None:
    """A corrupt prs.json stops start-up with a message naming it; the file is not overwritten."""
    args = _dirs(daemon)
    daemon.state_dir.mkdir(parents=True, exist_ok=True)
    bad = daemon.state_dir / "prs.json"
    bad.write_text('{"version": 1, "prs": {', encoding="utf-8")
    proc = _capdaemon("tick", "--once", *args)
    assert proc.returncode == 3
    assert str(bad) in proc.stderr and "corrupt" in proc.stderr
    assert bad.read_text(encoding="utf-8") == '{"version": 1, "prs": {'


def test_run_ticks_notifies_systemd_and_stops_cleanly_on_sigterm(
    daemon: Harness, tmp_path: Path
) -> None:
    """`capdaemon run` sends READY and WATCHDOG per tick, and on SIGTERM STOPPING, then exits 0."""
    n = daemon.open_pr({"README.md": "# widgets (run)\n"})
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(30)
        proc = subprocess.Popen(
            [sys.executable, "-m", "capdaemon.cli", "run", "--tick-seconds", "0.5", *_dirs(daemon)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "NOTIFY_SOCKET": str(path)},
        )
        try:
            got = [sock.recv(256).decode() for _ in range(3)]  # READY, then a watchdog per tick
            assert got[0].startswith("READY=1")
            assert got[1:] == ["WATCHDOG=1", "WATCHDOG=1"]
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
            rest = []
            sock.settimeout(0.5)
            while True:
                try:
                    rest.append(sock.recv(256).decode())
                except TimeoutError:
                    break
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    assert "STOPPING=1" in rest
    events = [json.loads(line)["event"] for line in err.splitlines() if line.startswith("{")]
    assert events[-2:] == ["daemon.signal", "daemon.stop"] or "daemon.stop" in events
    assert daemon.pull(n).merged


def test_kill_9_between_audit_and_merge_is_reconciled_without_duplicates(daemon: Harness) -> None:
    """Killed right after the "attempted" merge record: the next tick merges once, no duplicates."""
    a = daemon.open_pr({"README.md": "# widgets (crash)\n"})
    d = daemon.open_pr({".github/workflows/ci.yml": "name: crash\n"})
    proc = _capdaemon(
        "tick", "--once", *_dirs(daemon), env={"CAPDAEMON_CRASH_AFTER": "audit:merge"}
    )
    assert proc.returncode == 137
    assert [r["status"] for r in daemon.actions("merge", a)] == ["attempted"]
    assert not daemon.pull(a).merged
    daemon.sb.reset_counters()
    report = daemon.tick()
    assert report.reconciled == [f"acme/widgets#{a}:merge"]
    assert report.merged == [f"acme/widgets#{a}"]
    assert daemon.pull(a).merged
    assert [r["status"] for r in daemon.actions("merge", a)] == [
        "attempted",
        "not_done",
        "attempted",
        "done",
    ]
    assert len(daemon.issues("ballot")) == 1  # the D ballot was not opened twice
    assert len(daemon.classifications(a)) == 1 and len(daemon.classifications(d)) == 1
    assert daemon.writes().get("PUT /repos/{owner}/{repo}/pulls/{number}/merge") == 1


def test_kill_9_after_the_merge_call_records_the_outcome_once(daemon: Harness) -> None:
    """Killed after GitHub merged, before the outcome record: next tick records it, no re-merge."""
    a = daemon.open_pr({"README.md": "# widgets (crash 2)\n"})
    proc = _capdaemon("tick", "--once", *_dirs(daemon), env={"CAPDAEMON_CRASH_AFTER": "act:merge"})
    assert proc.returncode == 137
    assert daemon.pull(a).merged
    daemon.sb.reset_counters()
    report = daemon.tick()
    assert report.reconciled == [f"acme/widgets#{a}:merge"] and report.merged == []
    done = daemon.actions("merge", a)[-1]
    assert done["status"] == "done" and done["reconciled"] is True and done["merge_sha"]
    assert "PUT /repos/{owner}/{repo}/pulls/{number}/merge" not in daemon.writes()


def test_crash_then_a_human_merges_another_head_is_not_recorded_as_ours(daemon: Harness) -> None:
    """Killed after "attempted"; a human pushes and merges: recorded as merged by someone else."""
    a = daemon.open_pr({"README.md": "# widgets (crash 3)\n"})
    proc = _capdaemon(
        "tick", "--once", *_dirs(daemon), env={"CAPDAEMON_CRASH_AFTER": "audit:merge"}
    )
    assert proc.returncode == 137
    attempted = daemon.actions("merge", a)[-1]
    new_head = daemon.push(a, {"README.md": "# widgets (human)\n"}, user="alice")
    daemon.pull(a).merge(merge_method="squash")
    report = daemon.tick()
    assert report.reconciled == [f"acme/widgets#{a}:merge"] and report.merged == []
    last = daemon.actions("merge", a)[-1]
    assert last["status"] == "merged_by_other" and last["merged_head"] == new_head
    assert last["head_sha"] == attempted["head_sha"] != new_head
    assert not [r for r in daemon.actions("merge", a) if r["status"] == "done"]

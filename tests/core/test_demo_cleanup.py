"""`capdaemon demo` removes its temporary folder — which holds the sandbox App's private key —
on every way out: a failure (git missing from PATH) and SIGTERM while --keep-running."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

DEMO = [sys.executable, "-m", "capdaemon.cli", "demo"]


def test_demo_without_git_fails_in_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """No git on PATH: exit 1, one line naming git (no traceback), and the temporary folder
    with its private key is gone (it was left behind)."""
    bindir, scratch = tmp_path / "bin", tmp_path / "tmp"
    bindir.mkdir()
    scratch.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bindir), "TMPDIR": str(scratch)}
    proc = subprocess.run(DEMO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("capdaemon demo: error: ") and "git" in line
    assert "temporary folder is removed" in line
    assert list(scratch.iterdir()) == [], "the demo left its folder (and its key) behind"


def test_demo_kept_running_then_terminated_removes_its_folder(tmp_path: Path) -> None:
    """`demo --keep-running` (no --dir) prints the sandbox's tokens and a curl line; then
    SIGTERM (systemd, `kill`): exit 143 and no folder left (it was kept, private key and all)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen(
        [*DEMO, "--keep-running"],
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout or ()])
    reader.daemon = True
    reader.start()
    try:
        said: list[str] = []
        while not said or "the sandbox keeps running" not in said[-1]:
            said.append(lines.get(timeout=300))
        out = "".join(said)
        # the sandbox is up: how to reach it is printed, and nobody is told to keep it running
        assert "tokens: alice=" in out and "curl -s -H 'Authorization: token" in out, out
        assert "`--keep-running` keeps" not in out and "demo --keep-running" not in out, out
        [folder] = scratch.iterdir()
        assert folder.name.startswith("capdaemon-demo-") and (folder / "keys").is_dir()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    assert list(scratch.iterdir()) == [], "the demo left its folder (and its key) behind"

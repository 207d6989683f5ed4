"""`capdaemon demo` as a user runs it: a subprocess that must finish green, key lines printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_demo_runs_to_completion(tmp_path: Path) -> None:
    """The demo exits 0, prints the table, the story of the D PR and where the sandbox folder is."""
    proc = subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "demo", "--dir", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    for line in (
        "agents push their work with git over HTTP",
        "owner alice answers ballot",
        "alice taps Approve → counted",
        "PR  Q  files",
        "ballot approved by alice → merged",
        "blocked: L1.C3 failed (scope violation)",
        "record(s)",
        f"sandbox folder: {tmp_path / 'demo'}",
        "--keep-running",
        "demo ok: every expected outcome happened",
    ):
        assert line in out, line
    assert (tmp_path / "demo" / "bot-state" / "classifier_audit.jsonl").exists()
    # 100 columns at most, unless one path alone is longer (a path is never cut)
    assert all(len(ln) <= 100 or "/" in max(ln.split(), key=len) for ln in out.splitlines())
    assert "{'" not in out  # no raw Python dict
    assert "tick --once" not in out  # the sandbox is gone: a suggested tick would fail

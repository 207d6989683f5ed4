"""First-deploy failures of `tick --once`: one line naming what and where, the right exit status,
no traceback, and nothing written to the state directory."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from .conftest import Harness

pytestmark = pytest.mark.slow


def _tick(daemon: Harness, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "capdaemon.cli",
            "tick",
            "--once",
            "--config",
            str(daemon.config_dir),
            "--state",
            str(daemon.state_dir),
            "--log-format",
            "console",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    assert proc.stdout == "", proc.stdout
    return proc.returncode, proc.stderr


def _one_line(stderr: str) -> str:
    """The one failure line (progress at info level may come before it)."""
    lines = [ln for ln in stderr.strip().splitlines() if "[info     ]" not in ln]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def _edit(daemon: Harness, **github: object) -> None:
    daemon.configure()
    path = daemon.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["github"].update(github)
    data["github"] = {k: v for k, v in data["github"].items() if v is not None}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_wrong_token_exits_2_in_one_line_and_writes_no_state(daemon: Harness) -> None:
    """A bad token: exit 2, the host named, no prs.json/tick_metrics.json, no tick counted."""
    _edit(daemon, app_id=None, private_key_file=None, installation_id=None, token_env="GH_T")
    code, err = _tick(daemon, env={"GH_T": "ghp_" + "x" * 36})
    line = _one_line(err)
    assert code == 2
    assert "rejected the credentials" in line and "127.0.0.1:" in line
    assert "ghp_" not in err
    assert not daemon.state_dir.exists()


def test_garbage_app_key_names_the_key_file(daemon: Harness, tmp_path: Path) -> None:
    """A key file that is not a PEM private key: exit 2, the file named, nothing written."""
    bad = tmp_path / "garbage.pem"
    bad.write_text("-----BEGIN RSA PRIVATE KEY-----\nnot a key\n-----END RSA PRIVATE KEY-----\n")
    _edit(daemon, private_key_file=str(bad))
    code, err = _tick(daemon)
    line = _one_line(err)
    assert code == 2 and str(bad) in line and "private key" in line
    assert "BEGIN" not in err
    assert not daemon.state_dir.exists()


def test_unreachable_host_names_host_and_port_quickly(daemon: Harness) -> None:
    """A closed port: exit 1 at once (no 25 s of retries), naming host:port; nothing written."""
    port = _closed_port()
    _edit(daemon, base_url=f"http://127.0.0.1:{port}/api/v3")
    code, err = _tick(daemon)
    line = _one_line(err)
    assert code == 1 and f"127.0.0.1:{port}" in line and "cannot reach GitHub" in line
    assert not daemon.state_dir.exists()


def test_unwritable_state_directory_names_the_path(daemon: Harness, tmp_path: Path) -> None:
    """A state directory that cannot be created (under a file): exit 3, the path named."""
    daemon.configure()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    daemon.state_dir = blocker / "bot-state"
    code, err = _tick(daemon)
    line = _one_line(err)
    assert code == 3 and str(blocker) in line
    assert blocker.read_text() == "x"


def test_config_error_is_printed_once(daemon: Harness) -> None:
    """A config error: exit 2 and exactly one line (it used to be printed twice)."""
    daemon.configure()
    (daemon.config_dir / "capdaemon.yml").write_text("mode: sometimes\n", encoding="utf-8")
    code, err = _tick(daemon)
    line = _one_line(err)
    assert code == 2 and "mode" in line
    assert not daemon.state_dir.exists()


def test_corrupt_state_exits_3_so_systemd_does_not_restart(daemon: Harness) -> None:
    """A corrupt state file: exit 3 (RestartPreventExitStatus), the file named and kept."""
    daemon.configure()
    daemon.state_dir.mkdir(parents=True)
    metrics = daemon.state_dir / "tick_metrics.json"
    metrics.write_text("[1, 2]", encoding="utf-8")
    code, err = _tick(daemon)
    line = _one_line(err)
    assert code == 3 and str(metrics) in line and "corrupt" in line
    assert metrics.read_text(encoding="utf-8") == "[1, 2]"
    unit = (Path(__file__).parents[2] / "systemd" / "capdaemon.service").read_text()
    assert "RestartPreventExitStatus=2 3" in unit


def test_a_scheduled_tick_that_cannot_authenticate_writes_nothing(
    daemon: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's token is revoked after a good tick: the next scheduled tick is skipped with
    one `tick.skipped` event; prs.json and tick_metrics.json are untouched, no tick counted."""
    from structlog.testing import capture_logs

    from capdaemon.daemon.service.runner import tick_job

    token = daemon.sb.tokens[daemon.sb.owner]
    _edit(daemon, app_id=None, private_key_file=None, installation_id=None, token_env="GH_T")
    monkeypatch.setenv("GH_T", token)
    daemon.open_pr({"README.md": "# widgets (typo)\n"})
    ticker = daemon.start()
    assert tick_job(ticker) is None
    metrics = daemon.state_dir / "tick_metrics.json"
    before = {p.name: p.read_bytes() for p in daemon.state_dir.glob("*.json")}
    assert b'"ticks": 1' in metrics.read_bytes()
    with daemon.sb.backend.lock:  # the owner revokes the token
        del daemon.sb.backend.data["tokens"][token]
    with capture_logs() as logs:
        assert tick_job(ticker) is None
    assert [e["event"] for e in logs] == ["tick.skipped"]
    assert "rejected the credentials" in logs[0]["error"]
    assert {p.name: p.read_bytes() for p in daemon.state_dir.glob("*.json")} == before


def test_the_daemon_waits_for_an_unreachable_github(daemon: Harness) -> None:
    """`run` at boot with GitHub down: it does not exit (no crash loop against systemd's start
    limit); each scheduled tick is one `tick.skipped` event naming host:port; SIGTERM → 0."""
    port = _closed_port()
    _edit(daemon, base_url=f"http://127.0.0.1:{port}/api/v3")
    code, err = _run_then_stop(daemon, after=1.5)  # a few scheduled ticks
    assert code == 0, err
    events = [json.loads(ln) for ln in err.splitlines() if ln.startswith("{")]
    names = [e["event"] for e in events]
    assert "daemon.unreachable" in names and names.count("tick.skipped") >= 1
    skipped = next(e for e in events if e["event"] == "tick.skipped")
    assert f"127.0.0.1:{port}" in skipped["error"]
    assert not (daemon.state_dir / "tick_metrics.json").exists()  # no tick counted


def test_a_stop_asked_for_while_the_daemon_starts_exits_cleanly(daemon: Harness) -> None:
    """systemd may send SIGTERM while `run` is still starting (the state lock taken, the
    scheduler not yet running): the daemon stops with exit 0 and says why, instead of dying
    by the signal; it runs no tick."""
    _edit(daemon, base_url=f"http://127.0.0.1:{_closed_port()}/api/v3")
    code, err = _run_then_stop(daemon, after=0)  # at once: start-up is not over yet
    assert code == 0, err
    events = [json.loads(ln) for ln in err.splitlines() if ln.startswith("{")]
    names = [e["event"] for e in events]
    assert "daemon.signal" in names and "daemon.stop" in names
    assert "tick.skipped" not in names and "daemon.start" not in names


def _run_then_stop(daemon: Harness, *, after: float) -> tuple[int, str]:
    """`capdaemon run` on the harness's config (JSON logs), sent SIGTERM `after` seconds once
    its state lock exists (still running then, unless `after` is 0); its exit code and
    stderr."""
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "capdaemon.cli", "run", "--tick-seconds", "0.3"),
            *("--config", str(daemon.config_dir), "--state", str(daemon.state_dir)),
            *("--log-format", "json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        lock = daemon.state_dir / "capdaemon.lock"
        while not lock.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        if after:
            time.sleep(after)
            assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err

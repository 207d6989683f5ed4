"""Operator mistakes named for what they are: a wrong installation_id, an unknown repo, an App
not installed on a repo's account, missing App permissions — one line each, exit 2 (systemd
does not restart), never a library exception's text; doctor always ends with its summary; no
config directory, no run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ghsandbox import testing as std

from .conftest import Harness

pytestmark = pytest.mark.slow


def _capdaemon(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", *args],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def _edit(daemon: Harness, change: Any) -> None:
    path = daemon.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _dirs(daemon: Harness) -> list[str]:
    return ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]


def _refused(daemon: Harness, *words: str) -> None:
    """tick --once and run both exit 2 with one `daemon.config_invalid` event (the journal's
    line) naming `words`, no library text, nothing written to the state directory; doctor
    names it too and ends with its summary."""
    for cmd in (["tick", "--once"], ["run", "--tick-seconds", "1"]):
        proc = _capdaemon(*cmd, *_dirs(daemon), "--log-format", "json")
        assert proc.returncode == 2, proc.stderr
        events = [json.loads(ln) for ln in proc.stderr.splitlines()]
        failures = [e for e in events if e["level"] == "error"]
        assert [e["event"] for e in failures] == ["daemon.config_invalid"], proc.stderr
        for w in words:
            assert w in failures[0]["error"]
        assert "Exception" not in proc.stderr and "Traceback" not in proc.stderr
        assert not daemon.state_dir.exists()
    doctor = _capdaemon("doctor", *_dirs(daemon))
    assert doctor.returncode == 2, doctor.stdout
    assert "Exception" not in doctor.stdout + doctor.stderr
    assert doctor.stdout.splitlines()[-1].startswith("doctor: ")
    assert " failed," in doctor.stdout.splitlines()[-1]


def test_a_wrong_installation_id_is_named(daemon: Harness) -> None:
    daemon.configure()
    _edit(daemon, lambda d: d["github"].update(installation_id=9999))
    _refused(daemon, "github.installation_id 9999")
    doctor = _capdaemon("doctor", *_dirs(daemon))
    assert doctor.returncode == 2
    assert any("installation_id 9999" in ln for ln in doctor.stdout.splitlines())


def test_an_unknown_repo_is_a_config_error_never_a_protection_issue(daemon: Harness) -> None:
    daemon.configure()
    _edit(daemon, lambda d: d["repos"][0].update(name="acme/widgetz"))
    _refused(daemon, "repos[0] acme/widgetz", "capdaemon.yml", "no such repository")
    assert daemon.issues() == []  # no "Branch protection missing" or any other issue


def test_an_account_without_the_app_is_named(daemon: Harness) -> None:
    daemon.sb.create_repo(std.OUTSIDER, "tools", files={"README.md": "# tools\n"})
    daemon.configure()

    def change(d: dict[str, Any]) -> None:
        d["github"].pop("installation_id")
        d["repos"].append({"name": f"{std.OUTSIDER}/tools", "base": "main"})

    _edit(daemon, change)
    _refused(daemon, f"repos[1] {std.OUTSIDER}/tools", f"not installed on '{std.OUTSIDER}'")


def test_missing_app_permissions_are_named(daemon: Harness) -> None:
    app = daemon.sb.backend.data["apps"][str(daemon.sb.app_id)]
    app["permissions"].pop("checks")
    app["permissions"]["issues"] = "read"
    daemon.configure()
    _refused(daemon, "lacks permissions checks: write, issues: write")


def test_a_repo_gone_while_running_is_a_named_tick_error_not_an_incident(daemon: Harness) -> None:
    """A repo that disappears under a running daemon (here: never there; the in-process
    Ticker skips the start-up check) is a config error of each tick naming it: no protection
    issue, no API-failure streak toward the breaker however many ticks."""
    daemon.configure(repo={"name": "acme/widgetz"})
    for _ in range(4):
        report = daemon.tick()
        assert any("acme/widgetz" in e for e in report.config_errors)
        assert not any("widgetz" in e for e in report.errors)
        assert report.unknown_repos == ["acme/widgetz"]
    assert [i.title for i in daemon.issues()] == []
    safety = json.loads((daemon.state_dir / "safety.json").read_text(encoding="utf-8"))
    assert safety.get("api_fail_streak", 0) == 0
    assert daemon.actions("breaker.incident") == []


def test_no_config_directory_no_run(daemon: Harness, tmp_path: Path) -> None:
    """Started where there is no ./config and with no --config or $CAPDAEMON_CONFIG: commands
    acting on GitHub refuse with one line saying how to name or make one; nothing is created."""
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    env = {"GITHUB_TOKEN": daemon.sb.tokens[daemon.sb.owner], "CAPDAEMON_CONFIG": ""}
    for cmd in (["tick", "--once"], ["run"], ["protect", daemon.sb.repo, "--check"]):
        proc = _capdaemon(*cmd, cwd=empty, env=env)
        assert proc.returncode == 2, (cmd, proc.stderr)
        line = proc.stderr.strip().splitlines()[-1]
        assert "--config DIR" in line and "$CAPDAEMON_CONFIG" in line and "capdaemon init" in line
    doctor = _capdaemon("doctor", cwd=empty, env=env)
    assert doctor.returncode == 2 and "ready" not in doctor.stdout
    assert "capdaemon init" in doctor.stdout
    assert doctor.stdout.splitlines()[-1].startswith("doctor: 1 failed")
    assert list(empty.iterdir()) == []  # no ./bot-state


def test_the_built_in_mode_is_shadow(tmp_path: Path) -> None:
    """A config without `mode:` only watches."""
    from capdaemon.config import load_config

    (tmp_path / "capdaemon.yml").write_text("owners: [alice]\n", encoding="utf-8")
    assert load_config(tmp_path).mode == "shadow"

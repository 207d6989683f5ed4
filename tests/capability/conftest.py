"""Fixtures for the capability tests: real temp git repos, a state dir, task files, CLI runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from capdaemon.cli import main

from .helpers import Git, Result


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """An empty state directory path (not created: commands create what they need)."""
    return tmp_path / "bot-state"


@pytest.fixture
def repo(tmp_path: Path) -> Git:
    """A repo (on branch `task`) whose main has scripts/, cron_settings.json, .github/, docs/."""
    g = Git(tmp_path / "repo")
    g.write(
        {
            "scripts/finish-task.sh": "#!/bin/sh\necho done\n",
            "cron_settings.json": '{"jobs": ["CC712188"]}\n',
            ".github/workflows/ci.yml": "on: push\n",
            "README.md": "hello\n",
            "docs/index.md": "# docs\n",
        }
    )
    g.commit("initial")
    g("checkout", "-q", "-b", "task")
    return g


@pytest.fixture
def taskfile(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a task file (dedented YAML) and return its path."""

    def make(text: str, name: str = "task.yml") -> Path:
        p = tmp_path / "tasks" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
        return p

    return make


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run `capdaemon.cli.main(argv)` in-process and capture its output."""

    def run(*argv: str | Path) -> Result:
        capsys.readouterr()
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run


@pytest.fixture
def sub() -> Callable[..., Result]:
    """Run `python -m capdaemon.cli ...` as a real subprocess."""

    def run(*argv: str | Path, cwd: Path | None = None) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "capdaemon.cli", *[str(a) for a in argv]],
            capture_output=True,
            text=True,
            cwd=cwd,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return run

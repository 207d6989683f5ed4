"""Helpers for the capability tests: a real git repo driver, CLI results, the incident task."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

INCIDENT_TASK = """\
task_id: task-2360
title: fix the finish-task script
level: 1
allowed_resources:
  paths:
    - "scripts/finish-task.sh"
  forbidden_paths:
    - ".github/**"
    - "memory/events/*.cron-*"
    - "cron_settings.json"
  commands:
    - "pytest"
    - "python3 -m py_compile"
  merge_policy: tiered
  ttl_hours: 48
"""


@dataclass
class Result:
    """Exit code and captured output of one CLI run."""

    code: int
    out: str
    err: str


class Git:
    """A throw-away git repository driven with real git commands."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self("init", "-q", "-b", "main")
        self("config", "user.email", "bot@example.invalid")
        self("config", "user.name", "bot")
        self("config", "commit.gpgsign", "false")

    def __call__(self, *args: str) -> str:
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
        proc = subprocess.run(
            ["git", "-C", str(self.root), *args], capture_output=True, text=True, env=env
        )
        if proc.returncode:
            raise AssertionError(f"git {args}: {proc.stderr}")
        return proc.stdout

    def write(self, files: dict[str, str | None]) -> None:
        """Write (or delete, for None) files in the work tree."""
        for rel, text in files.items():
            p = self.root / rel
            if text is None:
                p.unlink()
            else:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text, encoding="utf-8")

    def commit(self, message: str = "change") -> str:
        """Stage everything and commit; return the sha."""
        self("add", "-A")
        self("commit", "-q", "--allow-empty", "-m", message)
        return self("rev-parse", "HEAD").strip()


def escalations(state: Path) -> list[Path]:
    """The .escalate files in a state dir."""
    return sorted((state / "escalations").glob("*.escalate"))


def clone_behind(repo: Git, dispatch: Callable[[], None], clone: Path) -> tuple[Git, str]:
    """An agent's clone of main made before main moves on and the task is dispatched (by
    `dispatch`) from `repo`: the clone lacks the recorded base. Returns (the clone, on a new
    branch `task`; the recorded base sha)."""
    subprocess.run(["git", "clone", "-q", "-b", "main", str(repo.root), str(clone)], check=True)
    repo("checkout", "-q", "main")
    repo.write({"docs/new.md": "later\n"})
    later = repo.commit("main moves on")
    dispatch()
    agent = Git.__new__(Git)
    agent.root = clone
    agent("config", "user.email", "a@example.invalid")
    agent("config", "user.name", "a")
    agent("checkout", "-q", "-b", "task")
    return agent, later


def dispatch(cli: Callable[..., Result], taskfile: Callable[[str], Path], state: Path,
             repo: Git) -> None:  # fmt: skip
    """Dispatch the incident task from `repo` (its main recorded as the base)."""
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", repo.root).code == 0

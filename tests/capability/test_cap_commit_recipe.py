"""The documented way to commit after `scope-guard run` runs no program the agent could have
written: every hook (from the hooks path, `.husky/`, `.git/hooks`) and the fsmonitor hook are
set up to leave a mark, and real git is the oracle."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .helpers import Git

RECIPE_CONFIG = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
HOOKS = ["pre-commit", "prepare-commit-msg", "commit-msg", "post-commit",
         "reference-transaction", "post-index-change"]  # fmt: skip


def _armed(tmp_path: Path) -> tuple[Git, Path]:
    g = Git(tmp_path / "repo")
    g.write({"src/app.py": "VALUE = 1\n"})
    g.commit("initial")
    marks = tmp_path / "marks"
    marks.mkdir()
    for folder in (g.root / ".husky", g.root / ".git" / "hooks"):
        folder.mkdir(exist_ok=True)
        for hook in HOOKS:
            script = folder / hook
            script.write_text(f"#!/bin/sh\ntouch {marks}/{folder.name}-{hook}\n")
            script.chmod(0o755)
    monitor = g.root / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {marks}/fsmonitor\n")
    monitor.chmod(0o755)
    g("config", "core.hooksPath", ".husky")
    g("config", "core.fsmonitor", str(monitor))
    return g, marks


def _git(g: Git, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "-C", str(g.root), *args], check=True, capture_output=True, env=env)


def test_the_recipe_commits_without_running_any_hook(tmp_path: Path) -> None:
    """`git -c core.hooksPath=/dev/null -c core.fsmonitor=false add/commit --no-verify`
    commits, and no hook or monitor left a mark."""
    g, marks = _armed(tmp_path)
    (g.root / "src" / "app.py").write_text("VALUE = 2\n")
    _git(g, *RECIPE_CONFIG, "add", "src/app.py")
    _git(g, *RECIPE_CONFIG, "commit", "--no-verify", "-q", "-m", "change")
    assert g("log", "-1", "--format=%s").strip() == "change"
    assert sorted(p.name for p in marks.iterdir()) == []


def test_a_plain_commit_would_have_run_them(tmp_path: Path) -> None:
    """The same repository with a plain `git add` and `git commit`: the hooks and the
    monitor run (so the test above has something to prove)."""
    g, marks = _armed(tmp_path)
    (g.root / "src" / "app.py").write_text("VALUE = 2\n")
    _git(g, "add", "src/app.py")
    _git(g, "commit", "-q", "-m", "change")
    ran = {p.name for p in marks.iterdir()}
    assert {"fsmonitor", ".husky-pre-commit", ".husky-commit-msg", ".husky-post-commit"} <= ran

"""`finish-task --open-pr` end to end against the sandbox: an agent's clone, real git pushes over
HTTP, the PR opened through the forge adapter as the agent, audited; a blocked task pushes
nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

from tests.sandbox.helpers import gh, git

TASK = """\
task_id: task-pr
title: a feature
level: 1
allowed_resources:
  paths: ["src/**"]
  forbidden_paths: [".github/**", "README.md"]
  commands: ["pytest"]
  merge_policy: tiered
  ttl_hours: 48
"""


def _setup(sb: Any, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the agent's clone on a task branch, the state dir, a config dir for the agent)."""
    work = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", sb.git_url(sb.repo, sb.tokens["agent-1"]), str(work))
    git(work, "checkout", "-q", "-b", "agent-1/task-pr")
    state, conf = tmp_path / "bot-state", tmp_path / "config"
    conf.mkdir()
    data = {
        "github": {"base_url": sb.base_url, "token_env": "AGENT_TOKEN"},
        "owners": [sb.owner],
        "repos": [{"name": sb.repo, "base": "main"}],
    }
    (conf / "capdaemon.yml").write_text(yaml.safe_dump(data), encoding="utf-8")
    task = tmp_path / "task.yml"
    task.write_text(textwrap.dedent(TASK), encoding="utf-8")
    assert run(sb, "dispatch", task, "--state", state, "--repo", work).returncode == 0
    return work, state, conf


def run(sb: Any, *argv: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENT_TOKEN": sb.tokens["agent-1"]}
    return subprocess.run([sys.executable, "-m", "capdaemon.cli", *map(str, argv)],
                          capture_output=True, text=True, env=env, check=False)  # fmt: skip


def finish(sb: Any, work: Path, state: Path, conf: Path) -> subprocess.CompletedProcess[str]:
    return run(sb, "finish-task", "--task", "task-pr", "--repo", work, "--state", state,
               "--config", conf, "--open-pr")  # fmt: skip


def records(state: Path, action: str) -> list[dict[str, Any]]:
    lines = (state / "actions.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r.get("action") == action]


def test_passing_task_pushes_and_opens_its_pr_once(sandbox: Any, tmp_path: Path) -> None:
    """A pass pushes the checked commit and opens the PR as the agent; again: the same PR."""
    work, state, conf = _setup(sandbox, tmp_path)
    (work / "src" / "feature.py").write_text("def f():\n    return 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Add feature\n\nTask-Id: task-pr")
    head = git(work, "rev-parse", "HEAD").stdout.strip()
    res = finish(sandbox, work, state, conf)
    assert res.returncode == 0, res.stderr
    assert "opened" in res.stdout and "the daemon merges it" in res.stdout
    assert sandbox.branch_sha(sandbox.repo, "agent-1/task-pr") == head
    (pr,) = [p for p in gh(sandbox, "agent-1").get_repo(sandbox.repo).get_pulls(state="open")
             if p.head.ref == "agent-1/task-pr"]  # fmt: skip
    assert pr.user.login == "agent-1" and pr.head.sha == head and pr.base.ref == "main"
    assert not pr.merged  # merging stays with the daemon
    (rec,) = records(state, "finish_task_pr")
    assert rec["result"] == "opened" and rec["number"] == pr.number and rec["head_sha"] == head
    again = finish(sandbox, work, state, conf)
    assert again.returncode == 0 and "already open" in again.stdout
    assert [r["number"] for r in records(state, "finish_task_pr")] == [pr.number, pr.number]


def test_blocked_task_pushes_nothing(sandbox: Any, tmp_path: Path) -> None:
    """A task branch that touches a forbidden file is blocked: no push, no PR."""
    work, state, conf = _setup(sandbox, tmp_path)
    (work / "README.md").write_text("# hijacked\n")
    git(work, "commit", "-q", "-am", "edit readme")
    res = finish(sandbox, work, state, conf)
    assert res.returncode == 1 and "BLOCKED" in res.stderr
    assert sandbox.branch_sha(sandbox.repo, "agent-1/task-pr") is None
    assert records(state, "finish_task_pr") == []


def test_push_refused_is_one_line_and_audited(sandbox: Any, tmp_path: Path) -> None:
    """A remote that refuses the push: exit 1, one line, the failure audited."""
    work, state, conf = _setup(sandbox, tmp_path)
    git(work, "remote", "set-url", "origin", sandbox.git_url(sandbox.repo, "wrong-token"))
    (work / "src" / "feature.py").write_text("def f():\n    return 2\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Add feature")
    res = finish(sandbox, work, state, conf)
    assert res.returncode == 1
    (line,) = [ln for ln in res.stderr.splitlines() if "the PR was not opened" in ln]
    assert "git push failed" in line
    (rec,) = records(state, "finish_task_pr")
    assert rec["result"] == "failed"

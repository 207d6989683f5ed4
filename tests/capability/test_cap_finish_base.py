"""finish-task reads the branch as it is, whatever the agent did to its local git: `git replace`,
grafts, a moved local base, a forged commit-graph setting; the base is the dispatch record's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .helpers import INCIDENT_TASK, Git, clone_behind, dispatch, escalations


@pytest.fixture
def attacked(repo: Git, cli, taskfile, state: Path) -> tuple[Git, str, str]:
    """The task dispatched (base main recorded), then a branch that deletes a forbidden file.
    Returns (repo, base sha, head sha)."""
    res = cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", repo.root)
    assert res.code == 0 and "base main at" in res.out
    base = repo("rev-parse", "main").strip()
    repo.write({"cron_settings.json": None, "scripts/finish-task.sh": "#!/bin/sh\necho v2\n"})
    head = repo.commit("tidy up")
    return repo, base, head


def finish(cli, state: Path, repo: Git, *extra: str):
    return cli("finish-task", "--task", "task-2360", "--repo", repo.root, "--state", state, *extra)


def plain_git_sees(repo: Git, rng: str) -> str:
    """What plain git (the user's settings) lists as changed in `rng`."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo.root), "diff", "--name-only", rng],
                          capture_output=True, text=True, env=env, check=True).stdout  # fmt: skip


def blocked(res) -> bool:
    return res.code == 1 and "cron_settings.json" in res.err and "BLOCKED" in res.err


def test_git_replace_does_not_hide_a_deletion(attacked, cli, state: Path) -> None:
    """`git replace HEAD main`: plain git sees no change; finish-task still sees the deletion."""
    repo, base, head = attacked
    repo("replace", head, base)
    assert plain_git_sees(repo, f"{base}..{head}") == ""  # the attack works on plain git
    res = finish(cli, state, repo)
    assert blocked(res), res.err
    rec = json.loads(escalations(state)[0].read_text())
    assert rec["what"] == ["cron_settings.json"] and rec["head_sha"] == head


def test_grafts_do_not_hide_a_deletion(attacked, cli, state: Path) -> None:
    """A grafts file that makes the base a child of the head: the merge base would be the head
    itself; finish-task ignores grafts."""
    repo, base, head = attacked
    (repo.root / ".git" / "info").mkdir(exist_ok=True)
    (repo.root / ".git" / "info" / "grafts").write_text(f"{base} {head}\n")
    # the graft makes a cycle (base <-> head): plain git lists nothing, or gives up on the
    # merge base (exit 128) depending on its walk; either way it does not show the deletion
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    plain = subprocess.run(["git", "-C", str(repo.root), "diff", "--name-only", f"{base}...{head}"],
                           capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert "cron_settings.json" not in plain.stdout
    assert blocked(finish(cli, state, repo))


def test_moved_local_main_does_not_hide_a_deletion(attacked, cli, state: Path) -> None:
    """The agent moves its local main to its own head; the base recorded at dispatch stands,
    and an explicit --base is ignored (said so)."""
    repo, base, head = attacked
    repo("branch", "-f", "main", head)
    assert plain_git_sees(repo, "main...HEAD") == ""
    assert blocked(finish(cli, state, repo))
    assert blocked(finish(cli, state, repo, "--base", "main"))
    res = finish(cli, state, repo, "--base", head)
    assert blocked(res) and f"the task's base is main at {base[:12]}" in res.err


def test_replace_refs_config_and_commit_graph_setting_ignored(attacked, cli, state: Path) -> None:
    """Repository settings cannot switch the protections back off."""
    repo, base, head = attacked
    repo("replace", head, base)
    repo("config", "core.useReplaceRefs", "true")
    repo("config", "core.commitGraph", "true")
    repo("commit-graph", "write", "--reachable")
    assert blocked(finish(cli, state, repo))


def test_no_recorded_base_is_refused(repo: Git, cli, taskfile, state: Path) -> None:
    """A scoped task dispatched without --repo has no trusted base: one line, exit 2."""
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state).code == 0
    repo.write({"cron_settings.json": None})
    repo.commit("delete")
    repo("branch", "-f", "main", "HEAD")
    res = finish(cli, state, repo)
    assert res.code == 2
    (line,) = res.err.strip().splitlines()
    assert "no base recorded at dispatch" in line and "--repo" in line


def test_clean_branch_passes_against_the_recorded_base(repo: Git, cli, taskfile, state: Path):
    """main moving on after dispatch (another merge) is not the task's change."""
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", repo.root).code == 0
    repo.write({"scripts/finish-task.sh": "#!/bin/sh\necho v3\n"})
    repo.commit("fix")
    res = finish(cli, state, repo)
    assert res.code == 0, res.err
    assert "main@" in res.out


def test_dispatch_base_needs_a_checkout(cli, taskfile, state: Path, tmp_path: Path) -> None:
    """dispatch --repo on a folder that is no checkout: exit 2, one line, nothing written."""
    res = cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", tmp_path)
    assert res.code == 2 and "cannot record the base" in res.err
    assert not (state / "capabilities").exists()


def test_recorded_base_missing_from_the_clone_is_read_where_it_was_recorded(
    repo: Git, cli, taskfile, state: Path, tmp_path: Path
) -> None:
    """The base recorded from the owner's checkout is not in the agent's clone yet: its
    objects are read from the owner's checkout (nothing fetched), then the branch is judged."""
    clone = tmp_path / "agent"
    agent, later = clone_behind(repo, lambda: dispatch(cli, taskfile, state, repo), clone)
    agent.write({"scripts/finish-task.sh": "#!/bin/sh\necho v4\n"})
    agent.commit("fix")
    res = cli("finish-task", "--task", "task-2360", "--repo", clone, "--state", state)
    assert res.code == 0, res.err
    assert f"main@{later[:12]}" in res.out

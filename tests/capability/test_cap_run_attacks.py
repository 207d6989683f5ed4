"""The option-word attacks on an allowed program, end to end through `scope-guard run`.

Each hostile line is listed verbatim in the capability, so the static check lets it
through (as a too-trusting check would); the kernel must still stop the write, with the
program's own EACCES, while the same options aimed inside the scope keep working. Real
pytest and real git; the CLI runs as a child process.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from capdaemon.cli import main

from .confined import actions, confined, venv_env
from .helpers import Git

HOSTILE = {
    # a debug/trace file option aimed at the forbidden cron file (the founding incident)
    "debug": "pytest -q -p no:cacheprovider --debug=memory/events/job.cron-1 tests",
    # a report-file option overwriting a workflow
    "report": "pytest -q -p no:cacheprovider --junitxml=.github/workflows/ci.yml tests",
    # a temp-dir option whose folder pytest deletes first
    "basetemp": "pytest -q -p no:cacheprovider --basetemp=src/secret tests",
    # an ini override moving pytest's cache into .github/
    "cache": "pytest -q -o cache_dir=.github/cache tests",
    # git's output option overwriting a workflow
    "git-output": "git diff --output=.github/workflows/ci.yml HEAD",
}
INSIDE = {
    "report": "pytest -q -p no:cacheprovider --junitxml=tests/report.xml tests",
    "basetemp": "pytest -q -p no:cacheprovider --basetemp=tests/scratch tests",
    "git-output": "git diff --output=tests/out.diff HEAD",
}
TASK = """\
task_id: opt-1
allowed_resources:
  paths: ["src/**", "tests/**"]
  forbidden_paths: [".github/**", "memory/events/*.cron-*", "src/secret/**"]
  commands:
{commands}
"""
UNCHANGED = {
    ".github/workflows/ci.yml": "on: push\n",
    "memory/events/job.cron-1": "0 * * * *\n",
    "src/secret/key.txt": "secret\n",
}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Git, Path]:
    """A checkout with a passing test that uses tmp_path, and the task dispatched."""
    g = Git(tmp_path / "repo")
    g.write(
        {
            **UNCHANGED,
            "src/app.py": "VALUE = 1\n",
            "tests/test_app.py": "def test_app(tmp_path):\n    assert tmp_path.is_dir()\n",
        }
    )
    g.commit("initial")
    g.write({"src/app.py": "VALUE = 2\n"})  # something for git diff to write
    lines = [*HOSTILE.values(), *INSIDE.values()]
    commands = "\n".join(f"    - {line!r}" for line in lines)
    task = tmp_path / "task.yml"
    task.write_text(TASK.format(commands=commands), encoding="utf-8")
    state = tmp_path / "state"
    assert main(["dispatch", str(task), "--state", str(state)]) == 0
    return g, state


def _unchanged(root: Path) -> None:
    for rel, text in UNCHANGED.items():
        assert (root / rel).read_text(encoding="utf-8") == text, rel
    assert not (root / ".github/cache").exists()


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_hostile_option_is_stopped_by_the_kernel(setup: tuple[Git, Path], attack: str) -> None:
    g, state = setup
    run = confined(state, g.root, "opt-1", *HOSTILE[attack].split())
    _unchanged(g.root)
    assert actions(state)[-1]["action"] == "scope_run_exit"
    if attack == "cache":  # pytest only warns when its cache cannot be written
        assert run.code == 0, run.err
        assert "Permission denied" in run.out + run.err
        return
    assert run.code != 0
    assert "Permission denied" in run.out + run.err, (run.out, run.err)
    assert "enforced by the kernel" in run.err


@pytest.mark.parametrize("attack", sorted(INSIDE))
def test_the_same_option_inside_the_scope_works(setup: tuple[Git, Path], attack: str) -> None:
    g, state = setup
    run = confined(state, g.root, "opt-1", *INSIDE[attack].split())
    assert run.code == 0, (run.out, run.err)
    target = INSIDE[attack].split("=", 1)[1].split()[0]
    assert (g.root / target).exists()
    _unchanged(g.root)


def test_options_smuggled_through_the_environment_are_stopped(
    tmp_path: Path, setup: tuple[Git, Path]
) -> None:
    """`PYTEST_ADDOPTS` is invisible to any command-line check; the kernel still refuses."""
    g, state = setup
    task = tmp_path / "plain.yml"
    task.write_text(
        textwrap.dedent(
            """\
            task_id: env-1
            allowed_resources:
              paths: ["src/**", "tests/**"]
              forbidden_paths: [".github/**", "memory/events/*.cron-*", "src/secret/**"]
              commands: ["pytest -q"]
            """
        ),
        encoding="utf-8",
    )
    assert main(["dispatch", str(task), "--state", str(state)]) == 0
    env = venv_env(PYTEST_ADDOPTS="-p no:cacheprovider --debug=memory/events/job.cron-1")
    run = confined(state, g.root, "env-1", "pytest", "-q", env=env)
    assert run.code != 0 and "Permission denied" in run.err
    _unchanged(g.root)
    assert os.path.exists(g.root / "src/secret")

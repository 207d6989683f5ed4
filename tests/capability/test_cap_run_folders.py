"""`scope-guard run` with a forbidden glob at any depth: folders granted for their existing files.

With `*.pem` forbidden, no folder of the checkout can be granted whole (a new name there
might be `key.pem`), but a folder whose existing files are all in scope, regular and
singly linked gets one rule for those files (write, truncate, remove) and none to add a
name. These tests try, under the real kernel, every way to add or re-point a name there,
and show that a folder holding a second hard link or a fifo falls back to a rule per file.
"""

from __future__ import annotations

import errno
import os
import textwrap
from pathlib import Path

import pytest

from capdaemon.cli import main

from .confined import actions, checkout, confined
from .helpers import Git

OK, EACCES, EXDEV = 0, errno.EACCES, errno.EXDEV
PROBE = ("scope-probe",)
PEM_TASK = """\
task_id: pem-2
allowed_resources:
  paths: ["src/**"]
  forbidden_paths: ["*.pem", "/keys/**"]
  commands: ["scope-probe"]
"""


@pytest.fixture
def co(tmp_path: Path, state: Path) -> Git:
    """The checkout of `confined.checkout`, plus src/other/ and a forbidden keys/k.pem,
    with the `*.pem` task dispatched."""
    g = checkout(tmp_path / "repo")
    g.write({"src/other/b.py": "B = 1\n", "keys/k.pem": "KEY\n"})
    g.commit("more")
    task = tmp_path / "task.yml"
    task.write_text(textwrap.dedent(PEM_TASK), encoding="utf-8")
    assert main(["dispatch", str(task), "--state", str(state)]) == 0
    return g


def start_entry(state: Path) -> dict[str, object]:
    return [a for a in actions(state) if a["action"] == "scope_run"][-1]


def test_existing_files_stay_writable_and_no_name_can_be_added(co: Git, state: Path) -> None:
    """Write, truncate and remove existing files work; creating, renaming within or between
    such folders, linking, symlinking and making a folder are refused (a new name could be
    forbidden: `mod.pem`)."""
    ops = [
        ["append", "src/pkg/mod.py"],
        ["truncate", "src/app.py"],
        ["create", "src/pkg/key.pem"],
        ["create", "src/pkg/new.py"],
        ["rename", "src/pkg/mod.py", "src/pkg/mod.pem"],
        ["rename", "src/other/b.py", "src/pkg/b.pem"],
        ["link", "src/pkg/mod.py", "src/pkg/mod-link.pem"],
        ["link", "keys/k.pem", "src/pkg/k.py"],
        ["rename", "keys/k.pem", "src/pkg/k.py"],
        ["symlink", "../../keys/k.pem", "src/pkg/k.py"],
        ["mkdir", "src/pkg/sub.pem"],
        ["append", "keys/k.pem"],
        ["unlink", "src/other/b.py"],
    ]
    run = confined(state, co.root, "pem-2", *PROBE, ops=ops)
    assert run.code == 0, run.err
    got = run.errnos()
    assert got[:2] == [OK, OK], run.probe
    assert all(e in (EACCES, EXDEV) for e in got[2:12]), run.probe
    assert got[12] == OK, run.probe
    assert sorted(p.name for p in (co.root / "src/pkg").iterdir()) == ["mod.py"]
    assert (co.root / "keys/k.pem").read_text(encoding="utf-8") == "KEY\n"
    assert start_entry(state)["writable"] == ["src/ (existing files only)"]  # one rule


def test_a_hard_link_in_the_folder_keeps_it_file_by_file(co: Git, state: Path) -> None:
    """A second name of the forbidden keys/k.pem inside src/pkg is held back and stays
    unwritable; the folder's other files are granted one by one."""
    os.link(co.root / "keys/k.pem", co.root / "src/pkg/k.py")
    ops = [["append", "src/pkg/k.py"], ["truncate", "src/pkg/k.py"], ["append", "src/pkg/mod.py"]]
    run = confined(state, co.root, "pem-2", *PROBE, ops=ops)
    assert run.errnos() == [EACCES, EACCES, OK], run.probe
    assert (co.root / "keys/k.pem").read_text(encoding="utf-8") == "KEY\n"
    start = start_entry(state)
    assert start["held_back"] == ["src/pkg/k.py"]
    assert "src/pkg/mod.py" in start["writable"]  # type: ignore[operator]
    assert "src/pkg/ (remove only)" in start["writable"]  # type: ignore[operator]
    assert "src/ (remove only)" in start["writable"]  # type: ignore[operator]
    assert "src/other/ (existing files only)" in start["writable"]  # type: ignore[operator]


def test_a_fifo_in_the_folder_keeps_it_file_by_file(co: Git, state: Path) -> None:
    """A fifo is never granted: its folder gets per-file rules, not a folder rule that
    would let the program open the fifo for writing."""
    os.mkfifo(co.root / "src/pkg/pipe")
    run = confined(state, co.root, "pem-2", *PROBE, ops=[["append", "src/pkg/mod.py"]])
    assert run.errnos() == [OK], run.probe
    writable = start_entry(state)["writable"]
    assert "src/pkg/mod.py" in writable  # type: ignore[operator]
    assert "src/pkg/ (remove only)" in writable  # type: ignore[operator]

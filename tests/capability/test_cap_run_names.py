"""`scope-guard run` judges each existing file of a folder once per folder: the attacks.

The walk matches a folder's files against only the globs that may reach that folder, and
skips the allow-list where an allowed glob covers the folder. These tests plant, in folders
the task otherwise may write, files that the shortcut must still see as out of scope (a
forbidden glob's match in another case, deep down, behind a look-alike letter; `.git` in
another case; a name an allowed pattern leaves out) and try to write them under the real
kernel: each write fails with EACCES, and the in-scope files beside them stay writable.
"""

from __future__ import annotations

import errno
import os
import textwrap
from pathlib import Path

from capdaemon.cli import main

from .confined import actions, checkout, confined

OK, EACCES = 0, errno.EACCES
PROBE = ("scope-probe",)
TASK = """\
task_id: {id}
allowed_resources:
  paths: [{paths}]
  forbidden_paths: ["*.pem", "/keys/**"]
  commands: ["scope-probe"]
"""


def _dispatch(tmp_path: Path, state: Path, task_id: str, paths: str) -> None:
    task = tmp_path / f"{task_id}.yml"
    task.write_text(textwrap.dedent(TASK.format(id=task_id, paths=paths)), encoding="utf-8")
    assert main(["dispatch", str(task), "--state", str(state)]) == 0


def test_out_of_scope_names_in_granted_folders_stay_unwritable(tmp_path: Path, state: Path) -> None:
    g = checkout(tmp_path / "repo")
    planted = ["src/pkg/OLD.PEM", "src/a/b/c/k.Pem", "src/pkg/.GIT", "src/pkg/x.\u0440em"]
    for p in [*planted, "src/a/b/c/ok.py"]:  # on disk, untracked (git refuses `.GIT`)
        (g.root / p).parent.mkdir(parents=True, exist_ok=True)
        (g.root / p).write_text("KEEP\n", encoding="utf-8")
    _dispatch(tmp_path, state, "names-1", '"src/**"')
    ops = [["append", p] for p in planted]
    ops += [["truncate", p] for p in planted]
    ops += [["append", "src/pkg/mod.py"], ["append", "src/a/b/c/ok.py"]]
    run = confined(state, g.root, "names-1", *PROBE, ops=ops)
    assert run.code == 0, run.err
    assert run.errnos() == [EACCES] * 8 + [OK, OK], run.probe
    for p in planted:
        assert (g.root / p).read_text(encoding="utf-8") == "KEEP\n", p
    writable = [a for a in actions(state) if a["action"] == "scope_run"][-1]["writable"]
    assert {"src/a/b/c/ok.py", "src/pkg/mod.py"} <= set(writable)  # type: ignore[arg-type]
    assert not {w.split(" ")[0].rstrip("/") for w in writable} & {  # type: ignore[union-attr]
        "src/pkg",
        "src/a",
        "src/a/b",
        "src/a/b/c",
        *planted,
    }  # no folder rule where a planted file lives, no rule naming one


def test_a_name_the_allowed_pattern_leaves_out_stays_unwritable(
    tmp_path: Path, state: Path
) -> None:
    g = checkout(tmp_path / "repo")
    g.write({"src/pkg/notes.txt": "KEEP\n", "src/pkg/Mod.PY": "KEEP\n"})
    g.commit("planted")
    _dispatch(tmp_path, state, "names-2", '"src/pkg/*.py"')
    ops = [["append", "src/pkg/notes.txt"], ["append", "src/pkg/Mod.PY"]]
    ops += [["append", "src/pkg/mod.py"], ["create", "src/pkg/new.py"]]
    run = confined(state, g.root, "names-2", *PROBE, ops=ops)
    assert run.errnos() == [EACCES, EACCES, OK, EACCES], run.probe
    assert (g.root / "src/pkg/notes.txt").read_text(encoding="utf-8") == "KEEP\n"
    assert (g.root / "src/pkg/Mod.PY").read_text(encoding="utf-8") == "KEEP\n"


def test_a_second_name_of_a_file_outside_the_checkout_is_never_writable(
    tmp_path: Path, state: Path
) -> None:
    """A hard link made before the run, from a folder the task may write whole (`src/**`,
    anchored globs) or for its existing files (`*.pem`), to a file outside the checkout (a
    shell's start-up file): looking only at the checkout's forbidden files would not find
    it; the per-file proof holds it back and the kernel refuses the write. Linking that
    file in during the run is refused too (the folder would grant it more)."""
    g = checkout(tmp_path / "repo")
    outside = tmp_path / "home" / ".bashrc"
    outside.parent.mkdir()
    outside.write_text("KEEP\n", encoding="utf-8")
    (g.root / "src/pkg/deep").mkdir()
    os.link(outside, g.root / "src/pkg/deep/rc.py")
    (tmp_path / "any.yml").write_text(
        textwrap.dedent(TASK.format(id="names-3", paths='"src/**"')), encoding="utf-8"
    )
    assert main(["dispatch", str(tmp_path / "any.yml"), "--state", str(state)]) == 0
    anchored = TASK.format(id="names-4", paths='"src/**"').replace('"*.pem", ', "")
    (tmp_path / "anchored.yml").write_text(textwrap.dedent(anchored), encoding="utf-8")
    assert main(["dispatch", str(tmp_path / "anchored.yml"), "--state", str(state)]) == 0
    ops = [
        ["append", "src/pkg/deep/rc.py"],
        ["truncate", "src/pkg/deep/rc.py"],
        ["link", str(outside), "src/pkg/rc2.py"],
        ["append", "src/pkg/mod.py"],
    ]
    for task_id in ("names-3", "names-4"):
        run = confined(state, g.root, task_id, *PROBE, ops=ops)
        assert run.errnos()[:2] == [EACCES, EACCES], (task_id, run.probe)
        assert run.errnos()[2] in (EACCES, errno.EXDEV), (task_id, run.probe)
        assert run.errnos()[3] == OK, (task_id, run.probe)
        assert outside.read_text(encoding="utf-8") == "KEEP\n"
        assert not (g.root / "src/pkg/rc2.py").exists()
        start = [a for a in actions(state) if a["action"] == "scope_run"][-1]
        assert start["held_back"] == ["src/pkg/deep/rc.py"], task_id

"""`scope-guard run`'s audit: the program starts only once its `scope_run` entry is on disk.

The program here reads the audit log and its head pointer the moment it starts (reading is
never restricted) and prints what it saw.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from capdaemon.audit import verify
from capdaemon.cli import main

from .confined import TASK, actions, checkout, confined, venv_env

LOOK = """\
import json, os, sys
log = os.environ["LOOK_LOG"]
with open(log, encoding="utf-8") as fh:
    last = fh.read().splitlines()[-1]
with open(log + ".head", encoding="utf-8") as fh:
    head = json.load(fh)
print(json.dumps({"last": json.loads(last), "head": head}))
"""


def test_the_program_starts_after_its_entry_is_written(tmp_path: Path, state: Path) -> None:
    """Record before act: the log's last line, when the program starts, is this run's
    `scope_run` entry; the head names it or the entry before (it moves meanwhile); after
    the run the chain is whole and the head names the exit entry."""
    co = checkout(tmp_path / "repo")
    probe = tmp_path / "bin" / "scope-probe"
    probe.write_text(f"#!{sys.executable}\n{LOOK}", encoding="utf-8")
    task = tmp_path / "task.yml"
    task.write_text(textwrap.dedent(TASK), encoding="utf-8")
    assert main(["dispatch", str(task), "--state", str(state)]) == 0
    log = state / "actions.jsonl"
    for _ in range(2):
        run = confined(state, co.root, "run-1", "scope-probe", env=venv_env(LOOK_LOG=str(log)))
        assert run.code == 0, run.err
        seen = json.loads(run.out.splitlines()[-1])
        assert seen["last"]["action"] == "scope_run"
        assert seen["last"]["command"] == ["scope-probe"]
        assert seen["head"]["seq"] in (seen["last"]["seq"], seen["last"]["seq"] - 1)
        entries = actions(state)
        assert entries[-1]["action"] == "scope_run_exit"
        assert entries[-1]["seq"] == seen["last"]["seq"] + 1
        head = json.loads((state / "actions.jsonl.head").read_text(encoding="utf-8"))
        assert head == {"seq": entries[-1]["seq"], "hash": entries[-1]["hash"]}
        assert verify(log).ok

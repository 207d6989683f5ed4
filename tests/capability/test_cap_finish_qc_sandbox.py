"""finish-task's QC runs the agent's code: a test file the task may write tries to rewrite the
forbidden cron file. The kernel refuses the write; where the task opted out of the sandbox
(`check-only`), the change is found after QC and blocks finish-task with a violation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capdaemon.audit import AuditLog
from capdaemon.filenames import ACTIONS_LOG

from .helpers import escalations

CRON = '{"jobs": ["CC712188"]}\n'
TASK = """\
task_id: task-qc
allowed_resources:
  paths: ["tests/**", "scripts/**"]
  forbidden_paths: ["/cron_settings.json", ".github/**"]
  commands: ["bash tests/check.sh", "python3 tests/test_cron.py"]
  qc: ["{qc}"]
  enforcement: {enforcement}
"""
SCRIPTS = {
    # a shell test that "fixes" the cron file on the way
    "bash tests/check.sh": {
        "tests/check.sh": "set -e\nprintf '{\"jobs\": []}\\n' > cron_settings.json\necho ok\n"
    },
    # a Python test file doing the same, then reporting success whatever happened
    "python3 tests/test_cron.py": {
        "tests/test_cron.py": (
            "import pathlib, sys\n"
            "try:\n"
            "    pathlib.Path('cron_settings.json').write_text('{\"jobs\": []}\\n')\n"
            "except OSError as exc:\n"
            "    print('refused:', exc)\n"
            "    sys.exit(1)\n"
            "print('1 passed')\n"
        )
    },
}


def _finish(cli, repo, state: Path, conf: Path, qc: str, enforcement: str, files=None):
    conf.mkdir(exist_ok=True)
    text = TASK.format(qc=qc, enforcement=enforcement)
    task = repo.root.parent / "task.yml"
    task.write_text(text, encoding="utf-8")
    assert cli("dispatch", task, "--state", state, "--repo", repo.root).code == 0
    repo.write(files or SCRIPTS[qc])
    repo.commit()
    return cli(
        "finish-task", "--task", "task-qc", "--repo", repo.root, "--state", state,
        "--config", conf,
    )  # fmt: skip


@pytest.mark.parametrize("qc", sorted(SCRIPTS))
def test_qc_cannot_rewrite_the_forbidden_cron_file(repo, cli, state: Path, tmp_path, qc) -> None:
    """Under the default enforcement the QC command's write to cron_settings.json is refused
    by the kernel: the file is unchanged and finish-task fails (QC failed), escalated."""
    res = _finish(cli, repo, state, tmp_path / "conf", qc, "kernel")
    assert (repo.root / "cron_settings.json").read_text() == CRON
    assert res.code == 1, res.out
    assert f"QC FAILED: {qc}" in res.err
    assert "ermission denied" in res.err or "refused:" in res.err
    assert len(escalations(state)) == 1


def test_a_change_made_by_qc_is_found_and_blocks(repo, cli, state: Path, tmp_path) -> None:
    """A task that opted out of the sandbox (check-only) runs QC unconfined: the rewrite
    happens, and the check after QC names the file, fails finish-task and opens the same
    violation a scope-guard refusal does (an escalation and a `scope_violation` entry)."""
    res = _finish(cli, repo, state, tmp_path / "conf", "bash tests/check.sh", "check-only")
    assert res.code == 1, res.out
    assert "QC PASSED: bash tests/check.sh" in res.out
    assert "QC CHANGED: cron_settings.json: changed by the QC run: forbidden" in res.err
    (esc,) = escalations(state)
    assert "cron_settings.json" in json.loads(esc.read_text())["what"]
    last = list(AuditLog(state / ACTIONS_LOG))[-1]
    assert last["action"] == "scope_violation"
    assert last["qc_changed"] == ["cron_settings.json"]


def test_qc_within_scope_still_passes(repo, cli, state: Path, tmp_path) -> None:
    """A QC command that writes only where the task may (its own tests folder) passes."""
    files = {"tests/check.sh": "set -e\necho ok > tests/out.txt\n"}
    res = _finish(cli, repo, state, tmp_path / "conf", "bash tests/check.sh", "kernel", files)
    assert res.code == 0, res.err
    assert (repo.root / "tests/out.txt").read_text() == "ok\n"

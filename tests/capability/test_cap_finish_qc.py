"""finish-task as the seed has it: QC (within the capability's commands) → scope → block,
`.escalate`, owners alerted at once; the output says what passed, what failed, who was told."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from capdaemon.audit import AuditLog
from capdaemon.channels.notify import Notice, Outbox
from capdaemon.filenames import ACTIONS_LOG
from tests.channels.receiver import Receiver

from .helpers import escalations

QC_TASK = """\
task_id: task-qc
title: fix the finish-task script
level: 1
allowed_resources:
  paths: ["scripts/**"]
  commands: ["python3 -m py_compile", "true"]
  qc: ["true", "python3 -m py_compile scripts/tool.py"]
  merge_policy: tiered
  ttl_hours: 48
"""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    """An empty config dir (built-in defaults: no notification channels)."""
    d = tmp_path / "config"
    d.mkdir()
    return d


def _finish(cli, repo, state: Path, conf: Path, *extra: str):
    return cli(
        "finish-task", "--task", "task-qc", "--repo", repo.root, "--state", state,
        "--config", conf, *extra,
    )  # fmt: skip


def _dispatch(cli, taskfile, state: Path, repo, text: str = QC_TASK) -> None:
    """Dispatch the task, recording its base (main) in `repo`."""
    assert cli("dispatch", taskfile(text), "--state", state, "--repo", repo.root).code == 0


def test_qc_passes_then_scope_passes(repo, taskfile, cli, state: Path, conf: Path) -> None:
    """Both QC commands run in the work tree and pass; the scope check passes; exit 0."""
    _dispatch(cli, taskfile, state, repo)
    repo.write({"scripts/tool.py": "print('ok')\n"})
    repo.commit()
    res = _finish(cli, repo, state, conf)
    assert res.code == 0, res.err
    assert "QC PASSED: true" in res.out
    assert "QC PASSED: python3 -m py_compile scripts/tool.py" in res.out
    assert "scope passed: 1 changed path(s)" in res.out
    assert "2 QC command(s) passed" in res.out
    rec = list(AuditLog(state / ACTIONS_LOG))[-1]
    assert rec["action"] == "finish_task" and [q["status"] for q in rec["qc"]] == ["passed"] * 2


def test_failing_qc_blocks_escalates_and_says_nobody_was_told(
    repo, taskfile, cli, state: Path, conf: Path
) -> None:
    """A syntax error: py_compile exits 1 → BLOCKED, exit 1, an .escalate record naming the
    QC command, and the output says nobody was told yet (no channels)."""
    _dispatch(cli, taskfile, state, repo)
    repo.write({"scripts/tool.py": "def broken(:\n"})
    repo.commit()
    res = _finish(cli, repo, state, conf)
    assert res.code == 1
    assert "QC FAILED: python3 -m py_compile scripts/tool.py (exit 1" in res.err
    assert "SyntaxError" in res.err
    assert "scope passed" in res.out and "BLOCKED" in res.err
    assert "told: nobody yet" in res.err
    (esc,) = escalations(state)
    body = json.loads(esc.read_text())
    assert body["what"] == ["python3 -m py_compile scripts/tool.py"]


def test_qc_command_outside_the_allow_list_is_refused_not_run(
    repo, taskfile, cli, state: Path, conf: Path
) -> None:
    """`--qc` cannot smuggle a command past the capability: it is refused before it runs."""
    _dispatch(cli, taskfile, state, repo)
    repo.write({"scripts/tool.py": "print('ok')\n"})
    repo.commit()
    pwned = repo.root / "pwned"
    res = _finish(cli, repo, state, conf, "--qc", f"touch {pwned}")
    assert res.code == 1 and not pwned.exists()
    assert "QC REFUSED: touch" in res.err and "not allowed" in res.err
    res = _finish(cli, repo, state, conf, "--qc", f"true; touch {pwned}")
    assert res.code == 1 and not pwned.exists()
    res = _finish(cli, repo, state, conf, "--qc", f"python3 -m py_compile x.py > {pwned}")
    assert res.code == 1 and not pwned.exists() and "redirect" in res.err
    assert len(escalations(state)) == 3


def test_no_command_allow_list_admits_no_qc(repo, taskfile, cli, state: Path, conf: Path) -> None:
    """A capability without `commands`: any QC command is refused (fail closed)."""
    _dispatch(cli, taskfile, state, repo, QC_TASK.replace(
        '  commands: ["python3 -m py_compile", "true"]\n  qc: ["true", "python3 -m py_compile '
        'scripts/tool.py"]\n', ""))  # fmt: skip
    repo.write({"scripts/tool.py": "print('ok')\n"})
    repo.commit()
    res = _finish(cli, repo, state, conf, "--qc", "true")
    assert res.code == 1 and "lists no commands" in res.err


def test_violation_alerts_owners_now_and_only_once(
    repo, taskfile, cli, state: Path, conf: Path, receiver: Receiver
) -> None:
    """With a channel configured the owners hear of the block at once; the daemon's later
    escalation notice has the same id and is not sent again."""
    (conf / "capdaemon.yml").write_text(yaml.safe_dump({"notifications": {"urls": [receiver.url]}}))
    _dispatch(cli, taskfile, state, repo)
    repo.write({"scripts/tool.py": "print('ok')\n", "cron_settings.json": "{}\n"})
    repo.commit()
    res = _finish(cli, repo, state, conf)
    assert res.code == 1
    assert "scope FAILED" in res.err and "cron_settings.json" in res.err
    assert "told: json://127.0.0.1" in res.err
    (msg,) = receiver.got
    assert msg["title"] == "finish-task blocked task task-qc"
    assert "cron_settings.json" in msg["message"]
    (esc,) = escalations(state)
    esc_id = esc.name.removesuffix(".escalate")
    again = Notice(f"escalation:{esc_id}", "Escalation", "issue opened")
    assert Outbox(state).enqueue([again], ["x"], datetime.now(UTC)) == 0

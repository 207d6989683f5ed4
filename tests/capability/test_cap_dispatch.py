"""Layer 1: dispatch writes an immutable hashed snapshot and audit record; tampering is caught."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from freezegun import freeze_time

from capdaemon.audit import AuditLog, verify
from capdaemon.capability.model import (
    BadTaskIdError,
    TamperedError,
    UnknownTaskError,
)
from capdaemon.capability.snapshot import content_hash
from capdaemon.filenames import ACTIONS_LOG
from capdaemon.stores.capabilities import load_snapshot
from capdaemon.stores.registry import list_tasks

from .helpers import INCIDENT_TASK


def actions(state: Path) -> list[dict]:
    return list(AuditLog(state / ACTIONS_LOG))


def snapshot_file(state: Path, task: str = "task-2360") -> Path:
    return state / "capabilities" / f"{task}.json"


def hand_edit(path: Path, edit) -> None:
    """Edit a read-only JSON file the way an operator (or agent) would: chmod, rewrite."""
    path.chmod(0o644)
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def test_dispatch_writes_read_only_snapshot_and_audit(taskfile, cli, state: Path) -> None:
    """A scoped task gives a 0444 snapshot whose sha256 is in the dispatch audit record."""
    with freeze_time("2026-05-02 09:00:00"):
        res = cli("dispatch", taskfile(INCIDENT_TASK), "--state", state)
    assert res.code == 0, res.err
    path = snapshot_file(state)
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    body = json.loads(path.read_text())
    assert body["sha256"] == content_hash(body)
    assert body["dispatched_at"] == "2026-05-02T09:00:00Z"
    assert body["expires_at"] == "2026-05-04T09:00:00Z"
    assert body["capability"]["allowed_resources"]["paths"] == ["scripts/finish-task.sh"]
    (rec,) = actions(state)
    assert rec["action"] == "dispatch" and rec["task_id"] == "task-2360"
    assert rec["sha256"] == body["sha256"] and rec["legacy"] is False
    assert verify(state / ACTIONS_LOG).ok
    snap = load_snapshot(state, "task-2360")
    assert snap.capability.level == 1 and snap.capability.merge_policy == "tiered"


def test_redispatch_same_is_noop(taskfile, cli, state: Path) -> None:
    """Dispatching the same content again writes nothing (even later, even reordered)."""
    cli("dispatch", taskfile(INCIDENT_TASK), "--state", state)
    before = snapshot_file(state).read_bytes()
    reordered = INCIDENT_TASK.replace(
        '    - ".github/**"\n    - "memory/events/*.cron-*"\n',
        '    - "memory/events/*.cron-*"\n    - ".github/**"\n',
    )
    assert reordered != INCIDENT_TASK
    res = cli("dispatch", taskfile(reordered, "again.yml"), "--state", state)
    assert res.code == 0 and "nothing written" in res.out
    assert snapshot_file(state).read_bytes() == before
    assert len(actions(state)) == 1


def test_redispatch_different_is_refused(taskfile, cli, state: Path) -> None:
    """Dispatching the same id with a wider scope is refused and changes nothing."""
    cli("dispatch", taskfile(INCIDENT_TASK), "--state", state)
    before = snapshot_file(state).read_bytes()
    wider = INCIDENT_TASK.replace('"scripts/finish-task.sh"', '"**"')
    res = cli("dispatch", taskfile(wider, "wider.yml"), "--state", state)
    assert res.code == 1 and "different capability" in res.err
    assert snapshot_file(state).read_bytes() == before
    assert len(actions(state)) == 1


def test_tampered_snapshot_refused(taskfile, cli, state: Path) -> None:
    """A hand-widened snapshot fails its own hash; with a recomputed hash it fails the audit."""
    cli("dispatch", taskfile(INCIDENT_TASK), "--state", state)
    path = snapshot_file(state)

    def widen(d: dict) -> None:
        d["capability"]["allowed_resources"]["paths"] = ["**"]

    hand_edit(path, widen)
    with pytest.raises(TamperedError, match="sha256"):
        load_snapshot(state, "task-2360")

    def rehash(d: dict) -> None:
        d["sha256"] = content_hash(d)

    hand_edit(path, rehash)
    with pytest.raises(TamperedError, match="audit"):
        load_snapshot(state, "task-2360")


def test_tampered_audit_record_refused(taskfile, cli, state: Path) -> None:
    """Editing the dispatch record to match a forged snapshot breaks the record's own hash."""
    cli("dispatch", taskfile(INCIDENT_TASK), "--state", state)
    path = snapshot_file(state)

    def forge(d: dict) -> None:
        d["capability"]["allowed_resources"]["paths"] = ["**"]
        d["sha256"] = content_hash(d)

    hand_edit(path, forge)
    forged = json.loads(path.read_text())["sha256"]
    log = state / ACTIONS_LOG
    rec = json.loads(log.read_text())
    rec["sha256"] = forged
    log.write_text(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
    with pytest.raises(TamperedError, match="edited"):
        load_snapshot(state, "task-2360")


def test_redispatch_over_tampered_snapshot_refused(taskfile, cli, state: Path) -> None:
    """dispatch never builds on a tampered snapshot."""
    cli("dispatch", taskfile(INCIDENT_TASK), "--state", state)
    hand_edit(snapshot_file(state), lambda d: d.update(title="x"))
    res = cli("dispatch", taskfile(INCIDENT_TASK), "--state", state)
    assert res.code == 1 and "REFUSED" in res.err


def test_missing_audit_record_is_repaired_on_redispatch(taskfile, cli, state: Path) -> None:
    """A crash between snapshot and audit write: guard refuses; re-dispatch records it."""
    cli("dispatch", taskfile(INCIDENT_TASK), "--state", state)
    for p in state.glob("actions.jsonl*"):
        p.unlink()
    with pytest.raises(TamperedError, match="no dispatch record"):
        load_snapshot(state, "task-2360")
    res = cli("dispatch", taskfile(INCIDENT_TASK), "--state", state)
    assert res.code == 0 and "record written" in res.out
    assert load_snapshot(state, "task-2360").task_id == "task-2360"


def test_dispatch_without_capability_refused(taskfile, cli, state: Path) -> None:
    """Scenario 4: a new task with no allowed_resources is refused with a clear error."""
    res = cli("dispatch", taskfile("task_id: task-9\ntitle: no scope\n"), "--state", state)
    assert res.code == 1
    assert "REFUSED" in res.err and "allowed_resources" in res.err
    assert "--allow-no-scope" in res.err
    assert not state.exists()


def test_legacy_dispatch_warns_and_audits(taskfile, cli, state: Path) -> None:
    """Scenario 3 (layer 1): --allow-no-scope admits a legacy task loudly and audits it."""
    res = cli(
        "dispatch",
        taskfile("task_id: old-7\ntitle: legacy\n"),
        "--allow-no-scope",
        "--state",
        state,
    )
    assert res.code == 0
    assert "WARNING" in res.err and "LEGACY" in res.err
    (rec,) = actions(state)
    assert rec["legacy"] is True and rec["action"] == "dispatch"
    snap = load_snapshot(state, "old-7")
    assert snap.legacy and snap.capability.merge_policy == "manual"


def test_allow_no_scope_does_not_weaken_a_scoped_task(taskfile, cli, state: Path) -> None:
    """A task with allowed_resources is scoped even when --allow-no-scope is passed."""
    res = cli("dispatch", taskfile(INCIDENT_TASK), "--allow-no-scope", "--state", state)
    assert res.code == 0 and "WARNING" not in res.err
    assert not load_snapshot(state, "task-2360").legacy


@pytest.mark.parametrize("bad", ["../../etc/x", "a/b", "..", ".x", "a b", "x\x00"])
def test_bad_task_ids_never_touch_the_file_system(bad: str, state: Path, cli) -> None:
    """Path-traversal task ids are rejected by load_snapshot and scope-guard (exit 2)."""
    with pytest.raises(BadTaskIdError):
        load_snapshot(state, bad)
    if "\x00" not in bad:
        res = cli("scope-guard", "--task", bad, "--state", state, "x")
        assert res.code == 2
    assert not state.exists()


def test_unknown_task(state: Path) -> None:
    """A task never dispatched has no snapshot."""
    with pytest.raises(UnknownTaskError):
        load_snapshot(state, "never")


def test_tasks_listing_states(taskfile, cli, state: Path) -> None:
    """`tasks` shows active, expired, legacy and tampered snapshots."""
    with freeze_time("2026-05-01 00:00:00"):
        cli(
            "dispatch",
            taskfile(INCIDENT_TASK.replace("task-2360", "short").replace("48", "1"), "a.yml"),
            "--state",
            state,
        )
    with freeze_time("2026-05-02 09:00:00"):
        cli("dispatch", taskfile(INCIDENT_TASK, "b.yml"), "--state", state)
        cli("dispatch", taskfile("task_id: old\n", "c.yml"), "--allow-no-scope", "--state", state)
        cli(
            "dispatch",
            taskfile(INCIDENT_TASK.replace("task-2360", "bad"), "d.yml"),
            "--state",
            state,
        )
    hand_edit(snapshot_file(state, "bad"), lambda d: d.update(title="changed"))
    now = datetime(2026, 5, 2, 10, 0, tzinfo=UTC)
    got = {t.task_id: t.state for t in list_tasks(state, now)}
    assert got == {"bad": "tampered", "old": "legacy", "short": "expired", "task-2360": "active"}
    with freeze_time("2026-05-02 10:00:00"):
        res = cli("tasks", "--state", state, "--json")
    assert {d["task_id"]: d["state"] for d in json.loads(res.out)} == got
    with freeze_time("2026-05-02 10:00:00"):
        text = cli("tasks", "--state", state).out
    assert "tampered" in text and "expired" in text and "legacy" in text

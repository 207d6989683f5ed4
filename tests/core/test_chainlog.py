"""The import-light chain writer (`scope-guard run`'s audit path) keeps AuditLog's guarantees."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from capdaemon.audit import AuditCorruptError, AuditLog, verify
from capdaemon.chainlog import append_entry, read_last

T0 = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)


def _no_repair(moved: dict[str, object]) -> None:
    raise AssertionError(f"unexpected repair: {moved}")


def test_interleaved_with_auditlog_the_chain_stays_whole(tmp_path):
    """Entries from the light writer and from AuditLog handles form one verifiable chain."""
    path = tmp_path / "actions.jsonl"
    AuditLog(path).append({"action": "merge", "n": 1}, now=T0)
    first = append_entry(path, {"action": "scope_run", "command": ["true"]}, _no_repair)
    AuditLog(path).append({"action": "merge", "n": 2}, now=T0)
    last = append_entry(path, {"action": "scope_run_exit", "exit": 0}, _no_repair)
    report = verify(path)
    assert report.ok and report.count == 4, report
    assert (first["seq"], last["seq"]) == (2, 4)
    assert json.loads((tmp_path / "actions.jsonl.head").read_text())["hash"] == last["hash"]


def test_caller_cannot_forge_the_chain_fields(tmp_path):
    """seq/prev/hash given by the caller are replaced: a forged link does not reach the log."""
    path = tmp_path / "actions.jsonl"
    append_entry(path, {"action": "a"}, _no_repair)
    rec = append_entry(
        path, {"action": "b", "seq": 99, "prev": "0" * 64, "hash": "f" * 64}, _no_repair
    )
    assert rec["seq"] == 2 and rec["hash"] != "f" * 64
    assert verify(path).ok


def test_torn_tail_is_moved_recorded_and_reported(tmp_path):
    """A crash mid-line before the run: the bytes are kept aside, the repair is a chain
    entry, the caller is told, and the run's entry follows it."""
    path = tmp_path / "actions.jsonl"
    append_entry(path, {"action": "a"}, _no_repair)
    torn = b'{"action":"merge","pr":"acme/wid'
    with open(path, "ab") as fh:
        fh.write(torn)
    told: list[dict[str, object]] = []
    rec = append_entry(path, {"action": "scope_run"}, told.append)
    assert told and told[0]["sha256"] == hashlib.sha256(torn).hexdigest()
    assert (tmp_path / "actions.jsonl.torn-1").read_bytes() == torn
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["action"] for r in recs] == ["a", "audit.torn_tail_repaired", "scope_run"]
    assert rec["seq"] == 3 and verify(path).ok


def test_unreadable_head_refuses_and_leaves_the_log_alone(tmp_path):
    """A damaged head pointer is evidence: the writer refuses rather than append past it."""
    path = tmp_path / "actions.jsonl"
    append_entry(path, {"action": "a"}, _no_repair)
    head = tmp_path / "actions.jsonl.head"
    head.write_text(head.read_text().replace('"seq"', '"seg"'))
    before = path.read_bytes()
    with pytest.raises(AuditCorruptError, match="head pointer"):
        append_entry(path, {"action": "scope_run"}, _no_repair)
    assert path.read_bytes() == before


def test_tampered_last_entry_refuses(tmp_path):
    """An edited last entry (hash no longer matches) is not chained onto."""
    path = tmp_path / "actions.jsonl"
    append_entry(path, {"action": "a", "exit": 1}, _no_repair)
    path.write_text(path.read_text().replace('"exit":1', '"exit":0'))
    with pytest.raises(AuditCorruptError, match=r"actions.jsonl:1: malformed"):
        append_entry(path, {"action": "scope_run"}, _no_repair)


def test_last_line_longer_than_one_read_step(tmp_path):
    """The last entry is found however long it is (read back in growing steps)."""
    path = tmp_path / "actions.jsonl"
    append_entry(path, {"action": "a"}, _no_repair)
    big = append_entry(path, {"action": "b", "blob": "x" * 300_000}, _no_repair)
    assert read_last(path) == big
    assert append_entry(path, {"action": "c"}, _no_repair)["prev"] == big["hash"]
    assert verify(path).ok


def test_scope_run_path_imports_no_heavy_modules():
    """`scope-guard run`'s audit writer does not pull in dataclasses, typing or tempfile."""
    code = (
        "import sys; import capdaemon.commands.scope_run; "
        "print(sorted({'dataclasses', 'typing', 'tempfile', 'capdaemon.audit'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_what_waits_for_the_entry_starts_after_it_is_on_disk(tmp_path):
    """`durable` runs once the entry is the log's last line and before the head pointer names
    it (the state a crash between the two steps leaves, which verify accepts); the head then
    names it, and interleaving with AuditLog keeps one whole chain."""
    path = tmp_path / "actions.jsonl"
    head = tmp_path / "actions.jsonl.head"
    first = append_entry(path, {"action": "a"}, _no_repair)
    seen: list[tuple[dict[str, object] | None, int, bool]] = []

    def started(rec: dict[str, object]) -> None:
        seen.append((read_last(path), json.loads(head.read_text())["seq"], verify(path).ok))

    rec = append_entry(path, {"action": "scope_run"}, _no_repair, started)
    assert seen == [(rec, first["seq"], True)]
    assert json.loads(head.read_text()) == {"seq": rec["seq"], "hash": rec["hash"]}
    AuditLog(path).append({"action": "merge"}, now=T0)
    assert verify(path).ok and verify(path).count == 3


def test_a_failing_durable_step_leaves_the_entry_and_a_head_one_behind(tmp_path):
    """When what waits for the entry fails, the entry stays written, the head one behind
    (a state verify accepts), and the next append chains on and moves the head."""
    path = tmp_path / "actions.jsonl"
    append_entry(path, {"action": "a"}, _no_repair)

    def boom(rec: dict[str, object]) -> None:
        raise OSError("cannot fork")

    with pytest.raises(OSError, match="cannot fork"):
        append_entry(path, {"action": "scope_run"}, _no_repair, boom)
    assert verify(path).ok and verify(path).count == 2
    last = append_entry(path, {"action": "scope_run_exit"}, _no_repair)
    assert last["seq"] == 3 and verify(path).ok
    assert json.loads((tmp_path / "actions.jsonl.head").read_text())["seq"] == 3


KILLED_IN_DURABLE = """
import os, signal, sys
from pathlib import Path
from capdaemon.chainlog import append_entry

def die(rec):
    os.kill(os.getpid(), signal.SIGKILL)

append_entry(Path(sys.argv[1]), {"action": "scope_run"}, print, die)
"""


def test_killed_with_the_new_head_written_but_not_in_place(tmp_path):
    """The head pointer's new file is written (and synced) while the line is: a writer killed
    once the line is on disk, before the rename, leaves the old head (one behind: verify
    accepts), a stray temporary file that names nothing, and a log the next append extends."""
    path = tmp_path / "actions.jsonl"
    append_entry(path, {"action": "a"}, _no_repair)
    proc = subprocess.run([sys.executable, "-c", KILLED_IN_DURABLE, str(path)], check=False)
    assert proc.returncode == -9
    head = tmp_path / "actions.jsonl.head"
    assert json.loads(head.read_text())["seq"] == 1
    stray = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert [json.loads(p.read_text())["seq"] for p in stray] == [2]
    report = verify(path)
    assert report.ok and report.count == 2
    last = append_entry(path, {"action": "scope_run_exit"}, _no_repair)
    assert last["seq"] == 3 and json.loads(head.read_text())["seq"] == 3 and verify(path).ok

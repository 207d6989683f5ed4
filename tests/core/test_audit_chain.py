"""The hash-chained audit logs: append, verify, tamper detection, torn-tail repair."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from capdaemon.audit import GENESIS, AuditCorruptError, AuditLog, verify

T0 = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)


def _log(tmp_path: Path, n: int = 4) -> Path:
    path = tmp_path / "actions.jsonl"
    log = AuditLog(path)
    for i in range(n):
        log.append({"action": "merge", "pr": f"acme/widgets#{i}", "n": i}, now=T0)
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def test_append_links_entries(tmp_path):
    """Entries get seq 1.., prev linking to the previous hash, and ts."""
    path = _log(tmp_path, 3)
    recs = [json.loads(line) for line in _lines(path)]
    assert [r["seq"] for r in recs] == [1, 2, 3]
    assert recs[0]["prev"] == GENESIS
    assert recs[1]["prev"] == recs[0]["hash"] and recs[2]["prev"] == recs[1]["hash"]
    assert recs[0]["ts"] == "2026-05-25T12:00:00Z"


def test_verify_whole_log(tmp_path):
    """An untouched log verifies with its entry count."""
    report = verify(_log(tmp_path, 5))
    assert report.ok and report.count == 5


def test_verify_missing_log_is_ok(tmp_path):
    """A log not yet written is whole (zero entries)."""
    assert verify(tmp_path / "absent.jsonl").ok


def test_edited_line_is_detected(tmp_path):
    """Changing a value inside an entry breaks its hash: reported at that line."""
    path = _log(tmp_path)
    lines = _lines(path)
    lines[1] = lines[1].replace('"n":1', '"n":7')
    path.write_text("".join(lines), encoding="utf-8")
    report = verify(path)
    assert (report.ok, report.line) == (False, 2)
    assert "hash" in report.reason


def test_deleted_line_is_detected(tmp_path):
    """Removing a middle entry breaks the seq order at the line after the hole."""
    path = _log(tmp_path)
    lines = _lines(path)
    del lines[1]
    path.write_text("".join(lines), encoding="utf-8")
    report = verify(path)
    assert (report.ok, report.line) == (False, 2)


def test_reordered_pair_is_detected(tmp_path):
    """Swapping two entries is detected at the first swapped line."""
    path = _log(tmp_path)
    lines = _lines(path)
    lines[1], lines[2] = lines[2], lines[1]
    path.write_text("".join(lines), encoding="utf-8")
    report = verify(path)
    assert (report.ok, report.line) == (False, 2)


def test_truncated_tail_is_detected_by_head_file(tmp_path):
    """Cutting whole last lines leaves a valid-looking chain; the .head pointer catches it."""
    path = _log(tmp_path)
    lines = _lines(path)
    path.write_text("".join(lines[:2]), encoding="utf-8")
    report = verify(path)
    assert not report.ok
    assert "truncated" in report.reason
    assert str(report).startswith(f"{path}:3:")


def test_torn_final_line_is_repaired_and_kept(tmp_path):
    """A partial last line (crash mid-write) is moved to .torn-1 when the log is opened, and
    the repair is itself a chain entry naming the removed bytes' length and SHA-256."""
    path = _log(tmp_path, 2)
    with open(path, "ab") as fh:
        fh.write(b'{"action":"merge","pr":"acme/wid')
    assert not verify(path).ok  # torn before repair
    log = AuditLog(path)
    assert (tmp_path / "actions.jsonl.torn-1").read_bytes() == b'{"action":"merge","pr":"acme/wid'
    assert verify(path).ok and log.last["seq"] == 3
    torn = b'{"action":"merge","pr":"acme/wid'
    repair = log.last
    assert repair["action"] == "audit.torn_tail_repaired" and repair["bytes"] == len(torn)
    assert repair["sha256"] == hashlib.sha256(torn).hexdigest()
    assert repair["moved_to"] == "actions.jsonl.torn-1"
    log.append({"action": "close", "pr": "acme/widgets#9"}, now=T0)
    assert verify(path).count == 4


def test_malformed_complete_line_refuses_to_open(tmp_path):
    """A complete but malformed last line makes AuditLog() raise, naming the line."""
    path = _log(tmp_path, 2)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"not": "chained"}\n')
    with pytest.raises(AuditCorruptError, match=r"actions\.jsonl:3: malformed"):
        AuditLog(path)
    report = verify(path)
    assert (report.ok, report.line) == (False, 3)


def test_entries_are_iterable_in_order(tmp_path):
    """Iterating a log yields the records in order."""
    path = _log(tmp_path, 3)
    assert [r["n"] for r in AuditLog(path)] == [0, 1, 2]


@pytest.mark.parametrize(
    "head_text",
    [
        '{"seg": 4, "hash": "%s"}',
        '{"seq": "4", "hash": "%s"}',
        '{"seq": true, "hash": "%s"}',
        '{"seq": 4, "hash": "%s", "extra": 1}',
        '{"seq": 4}',
        "[4]",
        '{"seq": 4, "hash": "%s"',
    ],
)
def test_damaged_head_pointer_is_corruption_not_absence(tmp_path, head_text):
    """A `.head` whose key is damaged used to read as "no head" and switch off the cut-tail
    check: two cut entries then verified clean. Now verify fails naming the head file, and
    opening the log refuses instead of overwriting the evidence on the next append."""
    path = _log(tmp_path)
    head = tmp_path / "actions.jsonl.head"
    real = json.loads(head.read_text(encoding="utf-8"))
    head.write_text(head_text.replace("%s", real["hash"]), encoding="utf-8")
    path.write_text("".join(_lines(path)[:2]), encoding="utf-8")  # cut two entries
    report = verify(path)
    assert not report.ok
    assert "head pointer" in report.reason and "actions.jsonl.head" in report.reason
    with pytest.raises(AuditCorruptError, match=r"actions\.jsonl\.head"):
        AuditLog(path)
    assert head.read_text(encoding="utf-8") == head_text.replace("%s", real["hash"])


def test_cli_verify_fails_on_a_damaged_head(tmp_path, capsys):
    """`capdaemon audit verify` exits 1 and names the head file."""
    from capdaemon.cli import main

    path = _log(tmp_path)
    head = tmp_path / "actions.jsonl.head"
    head.write_text(head.read_text(encoding="utf-8").replace('"seq"', '"seg"'), encoding="utf-8")
    assert main(["audit", "verify", "--state", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:0: head pointer {head} unreadable" in out

"""AuditLog.check: the chain checked in full once, then only new entries; a failure refuses
appends until the line is repaired; a torn tail is repaired, never taken for corruption."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from capdaemon.audit import AuditCorruptError, AuditLog

T0 = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)


def _log(tmp_path: Path, n: int) -> AuditLog:
    log = AuditLog(tmp_path / "actions.jsonl")
    for i in range(n):
        log.append({"action": "merge", "pr": f"acme/widgets#{i}"}, now=T0)
    return log


def test_bad_middle_line_refuses_appends_until_repaired(tmp_path: Path) -> None:
    """A cut-off line 2 of 3: check() names it, append() refuses; restored, both work again."""
    log = _log(tmp_path, 3)
    assert log.check() is None
    raw = log.path.read_bytes()
    lines = raw.split(b"\n")
    lines[1] = lines[1][:30]
    log.path.write_bytes(b"\n".join(lines))
    short = log.check()  # between full checks: the log is shorter than what was verified
    assert short is not None and "shorter than verified" in short.reason
    report = log.check()  # a known failure: checked in full, the bad line named
    assert report is not None and report.line == 2
    with pytest.raises(AuditCorruptError, match=r"actions\.jsonl:2: .*refusing to append"):
        log.append({"action": "after"}, now=T0)
    assert b"after" not in log.path.read_bytes()
    log.path.write_bytes(raw)
    assert log.check() is None
    assert log.append({"action": "after"}, now=T0)["seq"] == 4


def test_new_entries_are_checked_incrementally(tmp_path: Path) -> None:
    """A forged line appended by hand after the last check is caught by the next check."""
    log = _log(tmp_path, 2)
    assert log.check() is None
    log.append({"action": "ok"}, now=T0)
    assert log.check() is None
    with log.path.open("a", encoding="utf-8") as fh:
        fh.write('{"action": "merge", "seq": 4, "prev": "x", "hash": "y"}\n')
    report = log.check()
    assert report is not None and report.line == 4 and "prev" in report.reason


def test_torn_tail_is_repaired_not_corruption(tmp_path: Path) -> None:
    """A partial last line (another writer crashed) is repaired by check(), which passes."""
    log = _log(tmp_path, 2)
    assert log.check() is None
    with log.path.open("ab") as fh:
        fh.write(b'{"action":"mer')
    assert log.check() is None
    assert log.last is not None and log.last["action"] == "audit.torn_tail_repaired"

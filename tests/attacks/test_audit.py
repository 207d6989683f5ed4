"""Audit-log tampering is detected by `capdaemon audit verify` (SPEC 6.1)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from capdaemon.audit import GENESIS, AuditLog, entry_hash, log_paths, verify
from capdaemon.cli import main as cli

T = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)


def _log(state: Path, n: int = 5) -> Path:
    path = log_paths(state)[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    log = AuditLog(path)
    for i in range(n):
        log.append({"action": "merge", "pr": f"acme/widgets#{i}", "status": "done"}, now=T)
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def _verify(state: Path) -> int:
    return cli(["audit", "verify", "--state", str(state)])


def test_untouched_log_verifies(tmp_path: Path) -> None:
    """Control: a whole chain exits 0."""
    _log(tmp_path)
    assert _verify(tmp_path) == 0


@pytest.mark.parametrize("how", ["edit", "delete", "reorder", "swap-status"])
def test_edit_delete_reorder_are_detected(tmp_path: Path, how: str) -> None:
    """Editing, deleting or reordering lines → `audit verify` exits 1."""
    path = _log(tmp_path)
    lines = _lines(path)
    if how == "edit":
        lines[2] = lines[2].replace("acme/widgets#2", "acme/widgets#9")
    elif how == "delete":
        del lines[1]
    elif how == "reorder":
        lines[1], lines[2] = lines[2], lines[1]
    else:
        lines[3] = lines[3].replace('"done"', '"failed"')
    path.write_text("".join(lines), encoding="utf-8")
    assert _verify(tmp_path) == 1


def test_forged_entry_with_own_hash_but_wrong_prev_is_detected(tmp_path: Path) -> None:
    """An appended entry whose hash is right for its body but whose prev is not the last hash."""
    path = _log(tmp_path)
    last = json.loads(_lines(path)[-1])
    forged = {"action": "ballot", "pr": "acme/widgets#1", "status": "approved", "by": "alice",
              "ts": "2026-05-25T12:00:01Z", "seq": last["seq"] + 1, "prev": GENESIS}  # fmt: skip
    forged["hash"] = entry_hash(forged)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(forged) + "\n")
    assert _verify(tmp_path) == 1


def test_chain_consistent_forged_entries_past_the_head_are_detected(tmp_path: Path) -> None:
    """Two forged entries appended with correct prev/hash links (someone with file access): the
    head pointer, written by the single writer after every append, does not know them → exit 1."""
    path = _log(tmp_path)
    last = json.loads(_lines(path)[-1])
    with path.open("a", encoding="utf-8") as fh:
        for _ in range(2):
            forged = {
                "action": "vote_counted",
                "user": "alice",
                "ts": "2026-05-25T12:00:01Z",
                "seq": last["seq"] + 1,
                "prev": last["hash"],
            }
            forged["hash"] = entry_hash(forged)
            fh.write(json.dumps(forged) + "\n")
            last = forged
    assert _verify(tmp_path) == 1


def test_truncated_tail_with_head_pointer_deleted_is_detected(tmp_path: Path) -> None:
    """The last entries are cut and the `.head` pointer removed to hide it → exit 1."""
    path = _log(tmp_path)
    path.write_text("".join(_lines(path)[:-2]), encoding="utf-8")
    path.with_name(path.name + ".head").unlink()
    assert _verify(tmp_path) == 1


def test_truncated_tail_is_detected(tmp_path: Path) -> None:
    """The last entry is cut (head pointer intact) → exit 1."""
    path = _log(tmp_path)
    path.write_text("".join(_lines(path)[:-1]), encoding="utf-8")
    assert _verify(tmp_path) == 1


def test_torn_tail_is_repaired_on_open_and_kept_aside(tmp_path: Path) -> None:
    """A crash mid-write leaves a partial last line: opening the log moves it aside, the chain
    verifies, and the next append links to the last whole entry."""
    path = _log(tmp_path, 3)
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"action": "merge", "pr": "acme/wid')
    assert not verify(path).ok
    log = AuditLog(path)
    assert verify(path).ok
    assert (path.with_name(path.name + ".torn-1")).read_text().startswith('{"action": "merge"')
    assert log.last is not None and log.last["action"] == "audit.torn_tail_repaired"
    rec = log.append({"action": "after"}, now=T)
    assert rec["seq"] == 5 and verify(path).ok

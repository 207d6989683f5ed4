"""The breaker reads actions.jsonl incrementally, and still notices a rewritten log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from capdaemon.audit import AuditCorruptError, AuditLog, log_paths, verify
from capdaemon.daemon.safety.breaker import breaker_state
from capdaemon.daemon.safety.logtail import BreakerLogTail
from capdaemon.state import StateError


def _log(state: Path) -> AuditLog:
    state.mkdir(parents=True, exist_ok=True)
    return AuditLog(log_paths(state)[1])


def test_growing_log_is_read_by_its_tail_only(tmp_path: Path) -> None:
    """200 appends with a check after each: no full re-read, and the answer follows the log."""
    log = _log(tmp_path)
    tail = BreakerLogTail(tmp_path)
    for i in range(200):
        log.append({"action": "merge.done", "pr": f"acme/w#{i}"})
        assert tail.tripped() is False
    log.append({"action": "breaker.tripped"})
    assert tail.tripped() is True
    log.append({"action": "merge.refused"})
    assert tail.tripped() is True
    log.append({"action": "breaker.reset"})
    assert tail.tripped() is False
    assert tail.full_reads == 0


def _rewrite_without_trip(path: Path) -> None:
    """An edit of an earlier part: the breaker.tripped line altered in place, same size."""
    text = path.read_text(encoding="utf-8")
    assert '"breaker.tripped"' in text
    path.write_text(text.replace('"breaker.tripped"', '"breaker.reset  "', 1), encoding="utf-8")


def test_rewritten_earlier_part_forces_a_full_read_and_fails_verify(tmp_path: Path) -> None:
    """Appending after an in-place rewrite of the line the reader stopped at: the reader sees its
    anchor changed, re-reads the whole log, and `audit verify` reports the broken chain."""
    log = _log(tmp_path)
    tail = BreakerLogTail(tmp_path)
    log.append({"action": "merge.done"})
    log.append({"action": "breaker.tripped"})
    assert tail.tripped() is True
    path = log_paths(tmp_path)[1]
    _rewrite_without_trip(path)
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"action": "merge.done", "seq": 3, "prev": "x", "hash": "y"}\n')
    assert tail.tripped() is False  # what the file now says, read in full
    assert tail.full_reads == 1
    assert not verify(path).ok


def test_appended_record_that_does_not_chain_forces_a_full_read(tmp_path: Path) -> None:
    """A tail whose first record's prev is not the hash read last is not trusted on its own."""
    log = _log(tmp_path)
    tail = BreakerLogTail(tmp_path)
    log.append({"action": "breaker.tripped"})
    assert tail.tripped() is True
    path = log_paths(tmp_path)[1]
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"action": "breaker.reset", "seq": 2, "prev": "forged", "hash": "h"}\n')
    tail.tripped()
    assert tail.full_reads == 1
    assert not verify(path).ok


def test_deleting_breaker_json_after_a_long_log_still_refuses(tmp_path: Path) -> None:
    """The breaker was tripped and the log grew since; deleting breaker.json is still refused
    (the incremental reader kept the trip)."""
    log = _log(tmp_path)
    tail = BreakerLogTail(tmp_path)
    log.append({"action": "breaker.tripped"})
    for i in range(50):
        log.append({"action": "merge.refused", "pr": f"acme/w#{i}"})
        with pytest.raises(StateError, match=r"missing but actions\.jsonl says"):
            breaker_state(tmp_path, tail)
    assert tail.full_reads == 0


def test_a_cut_trip_line_with_breaker_json_deleted_is_refused_not_read_as_closed(
    tmp_path: Path,
) -> None:
    """Attack: delete breaker.json and cut the `breaker.tripped` line short. The log reader
    refuses the line, naming file and line (it used to skip it and see a closed breaker); a
    malformed line appended after an incremental read is refused too; the log is left as is."""
    log = _log(tmp_path)
    log.append({"action": "merge.refused", "pr": "acme/w#1"})
    log.append({"action": "breaker.tripped"})
    log.append({"action": "merge.refused", "pr": "acme/w#2"})
    path = log_paths(tmp_path)[1]
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1][:30]
    path.write_bytes(b"\n".join(lines))
    cut = path.read_bytes()
    with pytest.raises(AuditCorruptError, match=rf"^{re.escape(str(path))}:2: not JSON"):
        breaker_state(tmp_path, BreakerLogTail(tmp_path))
    assert path.read_bytes() == cut

    other = tmp_path / "other"
    log = _log(other)
    log.append({"action": "breaker.tripped"})
    tail = BreakerLogTail(other)
    assert tail.tripped() is True
    with log_paths(other)[1].open("ab") as fh:
        fh.write(b'{"action": "breaker.reset", "pr\n')
    with pytest.raises(AuditCorruptError, match=r"actions\.jsonl:2: not JSON"):
        tail.tripped()

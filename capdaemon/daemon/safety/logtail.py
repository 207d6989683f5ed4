"""Incremental breaker reading of actions.jsonl: fold only the new tail of the log.

The breaker asks "is the newest breaker.tripped later than the newest breaker.reset?" after
every write of a tick. Re-reading the whole log each time made a cold tick quadratic. This
remembers, per log, the byte offset read so far, the start of the last line and its hash, and
reads only what was appended. It re-reads from the start when the file shrank, when the line
before the offset is no longer the line it read (its hash differs: an earlier part was
rewritten), or when an appended record does not chain onto the last one (`prev`). `capdaemon
audit verify` still checks the whole chain; this only makes the breaker's question cheap.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from capdaemon.audit import log_paths
from capdaemon.jsonl import read_spans


@dataclass
class _Cursor:
    offset: int = 0  # bytes folded so far (always at a line end)
    last_start: int = 0  # where the last folded line starts
    last_hash: str | None = None
    tripped: bool = False
    full_reads: int = 0  # how often the whole log was read (for tests and benchmarks)


def _anchor_holds(fh: IO[bytes], cur: _Cursor) -> bool:
    """Is the last line we folded still there, byte for byte as far as its hash goes?"""
    if cur.offset == 0:
        return True
    fh.seek(cur.last_start)
    line = fh.read(cur.offset - cur.last_start)
    if not line.endswith(b"\n"):
        return False
    try:
        rec = json.loads(line)
    except ValueError:
        return False
    return isinstance(rec, dict) and rec.get("hash") == cur.last_hash


def _fold(path: Path, cur: _Cursor, *, check_chain: bool = True) -> bool:
    """Fold the records after cur.offset into cur; False when the chain breaks (re-read all).

    A malformed complete line raises AuditCorruptError naming it (never skipped: a skipped
    `breaker.tripped` would read as a closed breaker)."""
    for start, end, rec in read_spans(path, cur.offset):
        prev = rec.get("prev")
        broken = cur.last_hash is not None and prev is not None and prev != cur.last_hash
        if broken and check_chain:
            return False
        action = rec.get("action")
        if action == "breaker.tripped":
            cur.tripped = True
        elif action == "breaker.reset":
            cur.tripped = False
        if isinstance(rec.get("hash"), str):
            cur.last_hash = rec["hash"]
        cur.last_start, cur.offset = start, end
    return True


class BreakerLogTail:
    """The breaker's incremental reader of one state directory's actions.jsonl (one per daemon)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = log_paths(Path(state_dir))[1]
        self._cursor: _Cursor | None = None
        self._lock = threading.Lock()

    def tripped(self) -> bool:
        """True when the newest breaker.tripped is later than the newest breaker.reset."""
        path = self.path
        with self._lock:
            cur = self._cursor or _Cursor()
            try:
                size = path.stat().st_size
                if size == cur.offset and cur.offset > 0:
                    with open(path, "rb") as fh:
                        if _anchor_holds(fh, cur):
                            return cur.tripped
                with open(path, "rb") as fh:
                    stale = size < cur.offset or not _anchor_holds(fh, cur)
                if stale or not _fold(path, cur):
                    cur = _Cursor(full_reads=cur.full_reads + 1)
                    # from the start; a chain break here is `audit verify`'s to report
                    _fold(path, cur, check_chain=False)
            except FileNotFoundError:
                self._cursor = None
                return False
            self._cursor = cur
            return cur.tripped

    @property
    def full_reads(self) -> int:
        """How many times the whole log was re-read (0 while only tails were)."""
        return self._cursor.full_reads if self._cursor is not None else 0

"""Append-only, hash-chained JSONL logs (classifier audit, actions): append, verify, repair."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# the hashing core lives in capdaemon.canon (import-light, for scope-guard); re-exported here
from capdaemon.canon import entry_hash as entry_hash
from capdaemon.chain import CHAIN_KEYS as _CHAIN_KEYS
from capdaemon.chain import check_tail, entry_problem, whole_lines_size
from capdaemon.chainlog import GENESIS as GENESIS
from capdaemon.chainlog import TORN_TAIL_REPAIRED as TORN_TAIL_REPAIRED
from capdaemon.chainlog import append_locked, read_last, refuse_bad_head, repair_torn_tail
from capdaemon.chainlog import read_head as _read_head
from capdaemon.filenames import ACTIONS_LOG, CLASSIFIER_LOG
from capdaemon.jsonl import AuditCorruptError as AuditCorruptError
from capdaemon.jsonl import read_indexed as read_indexed
from capdaemon.jsonl import read_record_at as read_record_at
from capdaemon.jsonl import read_records as read_records
from capdaemon.quoting import printable_short as printable_short
from capdaemon.state import file_lock
from capdaemon.timefmt import utc_iso


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, datetime):
        return utc_iso(obj)
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "value") and isinstance(obj.value, str):  # enums
        return obj.value
    return obj


@dataclass(frozen=True)
class VerifyReport:
    """The result of checking one log's chain."""

    path: Path
    ok: bool
    count: int
    line: int | None = None
    reason: str = ""
    last_hash: str = ""  # the newest entry's hash when ok (seq == count)

    def __str__(self) -> str:
        if self.ok:
            return f"{self.path}: ok, {self.count} entries, chain whole"
        return f"{self.path}:{self.line}: {self.reason}"


class AuditLog:
    """One hash-chained JSONL log. Appends take a cross-process lock, then fsync.

    Opening repairs a torn final line (a crash mid-write: the bytes after the last newline
    are moved to `<log>.torn-<n>` and the file is cut back) and refuses a malformed
    complete line with AuditCorruptError naming the line, and an unreadable head pointer.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._head_path = self.path.with_name(self.path.name + ".head")
        # the chain as far as check() verified it: (byte offset, seq, hash); None: not yet
        self._verified: tuple[int, int, str] | None = None
        self.corrupt: VerifyReport | None = None  # set by check(): appends are refused
        with file_lock(self._lock_path):
            refuse_bad_head(self.path)  # appending would overwrite the evidence
            self._repair_torn_tail()
            self._last = self._read_last()

    # -- reading -----------------------------------------------------------------
    def _repair_torn_tail(self) -> dict[str, Any] | None:
        """Cut a torn final line off (kept in `<log>.torn-<n>`) and record the repair: a log
        event and a chain entry naming the removed bytes' length and SHA-256. Under the lock."""
        moved = repair_torn_tail(self.path)
        if moved is None:
            return None
        self._last = read_last(self.path)
        from capdaemon.logging import get_logger  # lazily: scope-guard imports this module

        get_logger("capdaemon.audit").warning("audit.torn_tail_repaired", **moved)
        return self._last

    def _read_last(self) -> dict[str, Any] | None:
        """The last complete record (validated), or None for an empty log."""
        return read_last(self.path)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Every record, in order (raises AuditCorruptError on a malformed line)."""
        return read_records(self.path)

    @property
    def last(self) -> dict[str, Any] | None:
        """The newest record this handle knows of."""
        return self._last

    # -- writing -----------------------------------------------------------------
    def append(self, entry: Mapping[str, Any], *, now: datetime | None = None) -> dict[str, Any]:
        """Append one entry (adds ts if missing, then seq/prev/hash), flush + fsync; return it."""
        body = _jsonable(dict(entry))
        for k in _CHAIN_KEYS:
            body.pop(k, None)
        if "ts" not in body:
            body["ts"] = utc_iso(now or datetime.now(UTC))
        with file_lock(self._lock_path):
            if self.corrupt is not None:
                raise AuditCorruptError(f"{self.corrupt}: refusing to append to a corrupt log")
            self._repair_torn_tail()
            return self._append_locked(body)

    def _append_locked(self, body: dict[str, Any]) -> dict[str, Any]:
        """Chain `body` (which has its ts) to the last entry, write, fsync, move the head."""
        self._last = append_locked(self.path, body)
        return self._last

    # -- integrity ---------------------------------------------------------------
    def check(self, *, full: bool = False) -> VerifyReport | None:
        """Verify the chain: in full the first time (and when `full`), else only the entries
        appended since the last check. A failure is kept in `corrupt` (appends are refused
        until a later check passes) and returned; None when the chain is whole."""
        with file_lock(self._lock_path):
            self._repair_torn_tail()  # a writer that crashed mid-line is repaired, not corrupt
            if full or self._verified is None or self.corrupt is not None:
                report = verify(self.path)
                size = whole_lines_size(self.path)
                self._verified = (size, report.count, report.last_hash or GENESIS)
            else:
                report = self._check_tail(*self._verified)
        self.corrupt = None if report.ok else report
        return self.corrupt

    def _check_tail(self, offset: int, seq: int, prev: str) -> VerifyReport:
        """Check the complete lines after byte `offset` (entry `seq`, hash `prev`)."""
        if offset > whole_lines_size(self.path):
            return VerifyReport(self.path, False, seq, seq, "the log is shorter than verified")
        problem, (offset, seq, prev) = check_tail(self.path, offset, seq, prev)
        if problem:
            return VerifyReport(self.path, False, seq, seq + 1, problem)
        self._verified = (offset, seq, prev)
        return VerifyReport(self.path, True, seq, last_hash=prev)


def story_order(rec: Mapping[str, Any]) -> tuple[str, int]:
    """The order of a PR's story: by time, then by sequence number."""
    seq = rec.get("seq")
    return (str(rec.get("ts", "")), seq if isinstance(seq, int) else 0)


@dataclass(frozen=True)
class ChainCursor:
    """How far a log was verified: its file (device, inode), the byte just past the last
    verified line, that entry's seq, hash and own offset, and the hash of the entry before it.
    A later check resumes from here only while the file is the same one, is no shorter, and
    still holds that very line at that offset (a rewritten middle changes one of them)."""

    dev: int = 0
    ino: int = 0
    offset: int = 0
    seq: int = 0
    last_hash: str = GENESIS
    last_start: int = 0
    before_hash: str = GENESIS


def resume_cursor(path: Path, cursor: ChainCursor | None) -> ChainCursor | None:
    """`cursor` when the log can be checked on from it (same file, no shorter, the last
    verified line unchanged at its offset), else None: verify the whole log again."""
    if cursor is None or cursor.seq == 0:
        return None
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if (st.st_dev, st.st_ino) != (cursor.dev, cursor.ino) or st.st_size < cursor.offset:
                return None
            fh.seek(cursor.last_start)
            raw = fh.read(cursor.offset - cursor.last_start)
    except OSError:
        return None
    try:
        rec = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not raw.endswith(b"\n") or not isinstance(rec, dict) or rec.get("seq") != cursor.seq:
        return None
    if rec.get("hash") != cursor.last_hash or entry_hash(rec) != cursor.last_hash:
        return None
    return cursor


def verify(path: Path, visit: Callable[[int, dict[str, Any]], None] | None = None) -> VerifyReport:
    """Check a log's chain: JSON, seq order, prev links, hashes, and the head pointer (tail).

    `visit(offset, record)` is called with each entry that checked out, in order (readers that
    need every record and the verdict read the file once).
    """
    return verify_from(path, None, visit)[0]


def verify_from(
    path: Path,
    cursor: ChainCursor | None,
    visit: Callable[[int, dict[str, Any]], None] | None = None,
) -> tuple[VerifyReport, ChainCursor | None]:
    """`verify`, checking only the lines after `cursor` (one `resume_cursor` accepted; None:
    the whole log), and the cursor to resume from next time (None when the chain is broken).
    The head pointer is checked in full either way."""
    path = Path(path)
    cur = cursor or ChainCursor()
    head, head_problem = _read_head(path.with_name(path.name + ".head"))
    if head_problem is not None:
        return VerifyReport(path, False, 0, 0, head_problem), None
    head_seq = head.get("seq") if isinstance(head, dict) else None
    head_seen = _hash_at(cur, head_seq)
    offset, prev, start, before, count = (
        cur.offset,
        cur.last_hash,
        cur.last_start,
        cur.before_hash,
        cur.seq,
    )
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        if count:
            return VerifyReport(path, False, 0, 0, "the log is gone after it was verified"), None
        return VerifyReport(path, True, 0, reason="no log yet"), ChainCursor()
    with fh:
        st = os.fstat(fh.fileno())
        if count and (st.st_dev, st.st_ino) != (cur.dev, cur.ino):
            return VerifyReport(path, False, count, count, "the log was replaced"), None
        fh.seek(offset)
        for n, raw in enumerate(fh, count + 1):
            rec, reason = _next_link(raw, count + 1, prev)
            if rec is None:
                return VerifyReport(path, False, count, n, reason), None
            if visit is not None:
                visit(offset, rec)
            before, prev, start = prev, rec["hash"], offset
            offset += len(raw)
            count += 1
            if count == head_seq:
                head_seen = prev
    problem = _head_problem(head, count, prev, head_seen)
    if problem is not None and not _grew_meanwhile(path, head, count):
        return VerifyReport(path, False, count, problem[0], problem[1]), None
    after = ChainCursor(st.st_dev, st.st_ino, offset, count, prev, start, before)
    return VerifyReport(path, True, count, last_hash=prev if count else ""), after


def _grew_meanwhile(path: Path, head: dict[str, Any] | None, count: int) -> bool:
    """True when the head pointer moved past the `count` entries read since it was read
    first (a live log: the writer appended in between; the entries read are checked, the
    new ones are checked later): then a head problem is no problem."""
    again, problem = _read_head(path.with_name(path.name + ".head"))
    return problem is None and again != head and again is not None and again["seq"] > count


def verify_prefix(path: Path, cursor: ChainCursor) -> VerifyReport:
    """Check the log again from its first line up to the cursor (every link and hash, and
    that it ends in the very entry the cursor names): what a tail check takes on trust.
    Lines appended after the cursor are left to the tail check (a live log grows)."""
    path = Path(path)
    prev, count = GENESIS, 0
    try:
        with open(path, "rb") as fh:
            left = cursor.offset
            for n, raw in enumerate(fh, 1):
                if left <= 0:
                    break
                rec, reason = _next_link(raw, count + 1, prev)
                if rec is None:
                    return VerifyReport(path, False, count, n, reason)
                prev, count, left = rec["hash"], count + 1, left - len(raw)
    except OSError as exc:
        return VerifyReport(path, False, count, count + 1, f"cannot be read: {exc}")
    if left != 0 or count != cursor.seq or prev != cursor.last_hash:
        why = "the log no longer holds the entries verified before (rewritten)"
        return VerifyReport(path, False, count, count + 1, why)
    return VerifyReport(path, True, count, last_hash=prev)


def _hash_at(cursor: ChainCursor, seq: Any) -> str | None:
    """The hash of entry `seq` when the cursor knows it (its last entry or the one before)."""
    if not isinstance(seq, int) or seq < 1:
        return None
    return {cursor.seq: cursor.last_hash, cursor.seq - 1: cursor.before_hash}.get(seq)


def _next_link(raw: bytes, seq: int, prev: str) -> tuple[dict[str, Any] | None, str]:
    """(the entry, "") when `raw` is the chain's next whole line, else (None, why not)."""
    if not raw.endswith(b"\n"):
        return None, "torn final line (crash mid-write)"
    try:
        rec = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, f"not JSON: {exc}"
    reason = entry_problem(rec, seq, prev)
    return (None, reason) if reason else (rec, "")


def _head_problem(
    head: dict[str, Any] | None, count: int, prev: str, head_seen: str | None
) -> tuple[int, str] | None:
    """(line, why) when the head pointer disagrees with a chain of `count` entries."""
    if count and not isinstance(head, dict):
        return count, "head pointer (.head) missing: the tail cannot be vouched for"
    if not isinstance(head, dict):
        return None
    head_seq = head.get("seq")
    if isinstance(head_seq, int) and head_seq > count:
        return count + 1, f"log ends at seq {count} but seq {head_seq} was written (tail truncated)"
    if head_seq == count and head.get("hash") != prev:
        return count, "last entry differs from the one written"
    # the single writer moves the head after every append (a crash can leave it one behind):
    # entries further past it, or a head naming a different entry, were not written by it
    if isinstance(head_seq, int) and count - head_seq > 1:
        return head_seq + 2, (
            f"entries after seq {head_seq + 1} were not written by the log's writer "
            f"(head pointer at seq {head_seq})"
        )
    if head_seen is not None and head.get("hash") != head_seen:
        return int(head_seq or 0), "entry at the head pointer differs from the one written"
    return None


def log_paths(state_dir: Path) -> tuple[Path, Path]:
    """(classifier audit log, actions log) of a state directory."""
    state_dir = Path(state_dir)
    return state_dir / CLASSIFIER_LOG, state_dir / ACTIONS_LOG


def story(
    state_dir: Path, pr: str, on_bad: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Every record from both logs that concerns one PR (`owner/repo#N`), oldest first
    (`on_bad`: see read_records; without it a malformed line raises)."""
    out: list[dict[str, Any]] = []
    for p in log_paths(state_dir):
        for rec in read_records(p, on_bad):
            if rec.get("pr") == pr:
                out.append(rec)
    out.sort(key=story_order)
    return out

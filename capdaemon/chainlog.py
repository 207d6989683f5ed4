"""Appending to a hash-chained JSONL log: head pointer, torn-tail cut, last entry, one append.

The append protocol of `capdaemon.audit.AuditLog`, kept import-light (json, hashlib, os,
fcntl: no dataclasses, typing, tempfile) because `scope-guard run` writes two entries per run.
Every function but `append_entry` expects the caller to hold the log's `.lock`.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime

from capdaemon.canon import canonical_json, entry_hash
from capdaemon.chain import CHAIN_KEYS, HEX64
from capdaemon.jsonl import AuditCorruptError
from capdaemon.state import AtomicWrite, StateError, file_lock, json_text, read_json, sync_data
from capdaemon.timefmt import utc_iso

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, BinaryIO

GENESIS = "0" * 64
TORN_TAIL_REPAIRED = "audit.torn_tail_repaired"  # the chain entry recording a torn-tail repair
_TAIL_STEP = 65536  # bytes read back from the end per step when looking for the last line


def read_head(head_path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(head pointer, None), (None, None) when there is none, or (None, why it is unreadable).

    An unreadable head is corruption, never "no head": a damaged key (`"seg"` for `"seq"`)
    must not switch off the cut-tail check.
    """
    try:
        head = read_json(head_path, None)
    except StateError as exc:
        return None, f"head pointer unreadable ({exc}): the tail cannot be vouched for"
    if head is None and not head_path.exists():
        return None, None
    seq = head.get("seq") if isinstance(head, dict) else None
    digest = head.get("hash") if isinstance(head, dict) else None
    if (
        not isinstance(head, dict)
        or set(head) != {"seq", "hash"}
        or not isinstance(seq, int)
        or isinstance(seq, bool)
        or seq < 1
        or not isinstance(digest, str)
        or HEX64.fullmatch(digest) is None
    ):
        return None, (
            f"head pointer {head_path} unreadable: expected "
            '{"seq": <n >= 1>, "hash": <64 hex>}: the tail cannot be vouched for'
        )
    return head, None


def refuse_bad_head(path: Path) -> None:
    """Raise AuditCorruptError when the log's head pointer is unreadable (appending would
    overwrite the evidence)."""
    _head, problem = read_head(path.with_name(path.name + ".head"))
    if problem is not None:
        raise AuditCorruptError(
            f"{path}: {problem}; run `capdaemon audit verify` and repair by hand"
        )


def _last_newline(fh: BinaryIO, end: int) -> int:
    """The offset just past the last newline before byte `end` (0: none)."""
    pos = end
    while pos > 0:
        start = max(0, pos - _TAIL_STEP)
        fh.seek(start)
        idx = fh.read(pos - start).rfind(b"\n")
        if idx >= 0:
            return start + idx + 1
        pos = start
    return 0


def _size(path: Path) -> int:
    """The log's length in bytes (0 when it does not exist yet)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def cut_torn_tail(path: Path) -> dict[str, Any] | None:
    """Move the bytes after the last newline (a crash mid-write) to `<log>.torn-<n>`, cut the
    log back, sync; what was moved (length, SHA-256, where), or None when the tail is whole."""
    size = _size(path)
    if size == 0:  # missing or empty
        return None
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return None
        cut = _last_newline(fh, size)
        fh.seek(cut)
        torn = fh.read()
        n = 1
        while path.with_name(f"{path.name}.torn-{n}").exists():
            n += 1
        keep = path.with_name(f"{path.name}.torn-{n}")
        keep.write_bytes(torn)
        fh.truncate(cut)
        fh.flush()
        sync_data(fh.fileno())  # the new size is flushed with the data
    return {
        "log": path.name,
        "moved_to": keep.name,
        "bytes": len(torn),
        "sha256": hashlib.sha256(torn).hexdigest(),
        "at_offset": cut,
    }


def read_last(path: Path) -> dict[str, Any] | None:
    """The last complete record (validated), or None for an empty log. Reads only the last
    line (back from the end), however long the log is."""
    size = _size(path)
    if size == 0:  # missing or empty
        return None
    with open(path, "rb") as fh:
        back = min(size, _TAIL_STEP)
        while True:
            fh.seek(size - back)
            lines = fh.read(back).rstrip(b"\n").split(b"\n")
            if len(lines) > 1 or back == size:
                break
            back = min(size, back * 4)
    last = lines[-1]
    try:
        rec = json.loads(last)
        if not isinstance(rec, dict) or any(k not in rec for k in CHAIN_KEYS):
            raise ValueError("missing seq/prev/hash")
        if entry_hash(rec) != rec["hash"]:
            raise ValueError("hash does not match content")
    except ValueError as exc:
        with open(path, "rb") as fh:
            lineno = sum(1 for _ in fh)
        raise AuditCorruptError(
            f"{path}:{lineno}: malformed audit entry ({exc}); "
            f"run `capdaemon audit verify` and repair by hand"
        ) from exc
    return rec


def append_locked(
    path: Path, body: dict[str, Any], durable: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Chain `body` (JSON-ready, with its ts) to the last entry, write, sync, move the head
    pointer; the entry as written.

    `durable`, when given, is called with the entry once its line is on disk and before the
    head pointer moves (a state a crash can leave too: the head one entry behind, which
    `audit verify` accepts); the head then moves when it returns, still under the lock.
    """
    last = read_last(path)
    body["seq"] = (last["seq"] + 1) if last else 1
    body["prev"] = last["hash"] if last else GENESIS
    body["hash"] = entry_hash(body)
    line = (canonical_json(body) + "\n").encode("utf-8")
    # the head pointer's new file is written and synced while the line is: it replaces the
    # head only once the line is on disk (and `durable` has returned)
    head = path.with_name(path.name + ".head")
    moved = AtomicWrite(head, json_text({"seq": body["seq"], "hash": body["hash"]}), meanwhile=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            # an appended line needs its data and the file's new size on disk (fdatasync);
            # a log just created, its whole inode
            (sync_data if last is not None else os.fsync)(fd)
        finally:
            os.close(fd)
        if durable is not None:
            durable(body)
    except BaseException:
        moved.abort()
        raise
    moved.finish()
    return body


def repair_torn_tail(path: Path) -> dict[str, Any] | None:
    """Cut a torn final line off (kept in `<log>.torn-<n>`) and record the repair as a chain
    entry naming the removed bytes' length and SHA-256; what was moved, or None."""
    moved = cut_torn_tail(path)
    if moved is not None:
        append_locked(path, {"action": TORN_TAIL_REPAIRED, **moved, "ts": utc_iso(_now())})
    return moved


def append_entry(
    path: Path,
    entry: dict[str, Any],
    on_repair: Callable[[dict[str, Any]], None],
    durable: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """One append by a short-lived writer, under the log's lock: refuse an unreadable head
    pointer, repair a torn tail (`on_repair` is told what was moved), chain `entry` (JSON-ready;
    ts added when missing; seq/prev/hash replaced) and fsync it; the entry as written.
    `durable`: as for `append_locked` (what may start once the entry is on disk)."""
    body = {k: v for k, v in entry.items() if k not in CHAIN_KEYS}
    body.setdefault("ts", utc_iso(_now()))
    with file_lock(path.with_name(path.name + ".lock")):
        refuse_bad_head(path)
        moved = repair_torn_tail(path)
        if moved is not None:
            on_repair(moved)
        return append_locked(path, body, durable)


def _now() -> datetime:
    return datetime.now(UTC)

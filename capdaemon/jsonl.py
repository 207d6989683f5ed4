"""The one reader of JSONL logs (actions.jsonl, classifier_audit.jsonl) and its corruption policy.

A malformed complete line is corruption: AuditCorruptError names the file and line (or, with
`on_bad`, the caller is told and the line skipped). A last line without its newline is an
interrupted write (a crash, or a writer right now): it is not read, and is never corruption.
"""

from __future__ import annotations

import json
from pathlib import Path

from capdaemon.state import StateError

TYPE_CHECKING = False  # scope-guard run imports this module: typing costs ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any


class AuditCorruptError(StateError):
    """A complete line of an audit log is malformed or the chain is broken."""


def read_records(
    path: Path, on_bad: Callable[[str], None] | None = None
) -> Iterator[dict[str, Any]]:
    """Every complete record of a log, read-only (no lock, no repair); missing file: none.

    A line that is not a JSON object raises AuditCorruptError naming it, or, with `on_bad`,
    is skipped after `on_bad("FILE:LINE: why")` is called (to tell the rest of the story)."""
    for _, rec in read_indexed(path, on_bad):
        yield rec


def read_indexed(
    path: Path, on_bad: Callable[[str], None] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(byte offset, record) of every complete record, read-only; see `read_record_at`
    and, for `on_bad`, `read_records`."""
    for start, _end, rec in _scan(Path(path), 0, on_bad):
        if rec is not None:
            yield start, rec


def read_spans(
    path: Path, start: int = 0, on_bad: Callable[[str], None] | None = None
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(start, end, record) of every complete record from byte `start` on (a line boundary),
    read-only: where each line starts and where the next begins. Policy as `read_records`."""
    for begin, end, rec in _scan(Path(path), start, on_bad):
        if rec is not None:
            yield begin, end, rec


def read_after(
    path: Path, offset: int, on_bad: Callable[[str], None] | None = None
) -> tuple[list[dict[str, Any]], int]:
    """The complete records from byte `offset` on (a cursor a reader saved), and the offset
    just past the last complete line (the next cursor). Same policy as `read_records`; a
    log shorter than `offset` (replaced) is read from the start."""
    path = Path(path)
    try:
        if path.stat().st_size < offset:
            offset = 0
    except FileNotFoundError:
        return [], 0
    out: list[dict[str, Any]] = []
    for _start, end, rec in _scan(path, offset, on_bad):
        if rec is not None:
            out.append(rec)
        offset = end  # past a reported bad line too: it is told once, not at every read
    return out, offset


def _scan(
    path: Path, start: int, on_bad: Callable[[str], None] | None
) -> Iterator[tuple[int, int, dict[str, Any] | None]]:
    """(start, end, record) of each complete line from byte `start` on; the record is None
    for a malformed line `on_bad` was told about."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        return
    offset = start
    with fh:
        fh.seek(start)
        for n, line in enumerate(fh, 1):
            if not line.endswith(b"\n"):
                break  # torn tail (a crash mid-write, or a writer right now)
            here = offset
            offset += len(line)
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                rec, why = None, f"not JSON: {msg}"
            else:
                why = "" if isinstance(rec, dict) else "not a JSON object"
            if why:
                where = f"{path}:{_line_number(path, start) + n}: {why}"
                if on_bad is None:
                    raise AuditCorruptError(where)
                on_bad(where)
                yield here, offset, None
                continue
            yield here, offset, rec


def _line_number(path: Path, offset: int) -> int:
    """How many lines end before byte `offset` (counted only when naming a bad line)."""
    if offset == 0:
        return 0
    with open(path, "rb") as fh:
        return fh.read(offset).count(b"\n")


def read_record_at(path: Path, offset: int) -> dict[str, Any]:
    """The record starting at a byte offset `read_indexed` gave (the log is append-only)."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        line = fh.readline()
    try:
        rec = json.loads(line) if line.endswith(b"\n") else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        rec = None
    if not isinstance(rec, dict):
        raise AuditCorruptError(f"{path}: no record at byte {offset} (was the log rewritten?)")
    return rec

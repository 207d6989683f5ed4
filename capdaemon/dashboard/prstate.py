"""prs.json and its journal as the dashboard reads them: PRFacts per PR, continued cheaply.

The daemon appends each PR's new state to `prs.journal` during a tick and rewrites prs.json
once per tick (dropping the journal). While prs.json is unchanged, a rebuild reads only the
journal lines appended since the last read (same file, no shorter); otherwise both are read
again. A malformed complete journal line is a problem (a banner): the daemon refuses to start
on it, and the pages would show that PR's older state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capdaemon.dashboard.prfacts import PRFacts
from capdaemon.filenames import JOURNAL_FILE, PRS_FILE
from capdaemon.state import StateError
from capdaemon.stores.prfile import pr_records
from capdaemon.stores.prrecord import RecordError, record_of

Sig = tuple[int, int, int, int]


@dataclass(frozen=True)
class PRState:
    """What was read: prs.json's (device, inode, size, mtime), the journal's (device, inode,
    bytes read), and the facts."""

    prs_sig: Sig
    journal: tuple[int, int, int]
    facts: Mapping[str, PRFacts] = field(default_factory=dict)


def file_sig(path: Path) -> Sig:
    """(device, inode, size, mtime) of a file; all -1 when it does not exist."""
    try:
        st = path.stat()
    except OSError:
        return (-1, -1, -1, -1)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_prs(state_dir: Path, prev: PRState | None) -> tuple[PRState | None, list[str]]:
    """(the state read, problems as "file: message"); the state is None when it could not be
    read whole (then nothing is reused next time)."""
    state_dir = Path(state_dir)
    sig = file_sig(state_dir / PRS_FILE)
    if prev is not None and prev.prs_sig == sig:
        tail = _journal_tail(state_dir / JOURNAL_FILE, prev.journal)
        if tail is not None:
            entries, journal = tail
            facts = prev.facts
            try:
                if entries:
                    facts = {**facts, **{ref: PRFacts.of(record_of(ref, r)) for ref, r in entries}}
                return PRState(sig, journal, facts), []
            except RecordError:
                pass  # the whole read names it
    return _read_whole(state_dir, sig)


def _read_whole(state_dir: Path, sig: Sig) -> tuple[PRState | None, list[str]]:
    journal = state_dir / JOURNAL_FILE
    start = _journal_start(journal)  # before reading: lines added meanwhile are read again
    problems = _journal_problems(journal)
    try:
        records = pr_records(state_dir, _skip)
        facts = {ref: PRFacts.of(records.pop(ref)) for ref in list(records)}
    except (StateError, ValueError, TypeError, AttributeError, OSError) as exc:
        text = " ".join(str(exc).split())[:400] or type(exc).__name__
        return None, [*problems, f"{state_dir / PRS_FILE}: {text}"]
    records.clear()
    return (None if problems else PRState(sig, start, facts)), problems


def _skip(_where: str) -> None:
    """A bad journal line, already a problem (`_journal_problems`)."""


def _journal_start(path: Path) -> tuple[int, int, int]:
    try:
        st = path.stat()
        with open(path, "rb") as fh:
            data = fh.read(st.st_size)
    except OSError:
        return (0, 0, 0)
    return (st.st_dev, st.st_ino, data.rfind(b"\n") + 1)


def _entry(line: bytes) -> tuple[str, dict[str, Any]] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    ref, rec = entry.get("ref"), entry.get("record")
    return (ref, rec) if isinstance(ref, str) and isinstance(rec, dict) else None


def _journal_tail(
    path: Path, read: tuple[int, int, int]
) -> tuple[list[tuple[str, dict[str, Any]]], tuple[int, int, int]] | None:
    """The journal entries after the bytes already read, or None when it must be read whole
    (another file, shorter, or a malformed line: the whole read reports it)."""
    dev, ino, offset = read
    try:
        st = path.stat()
    except FileNotFoundError:
        return ([], (0, 0, 0)) if offset == 0 else None
    except OSError:
        return None
    if offset and ((st.st_dev, st.st_ino) != (dev, ino) or st.st_size < offset):
        return None
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(st.st_size - offset)
    except OSError:
        return None
    whole = data[: data.rfind(b"\n") + 1]
    entries = []
    for line in whole.split(b"\n")[:-1]:
        entry = _entry(line)
        if entry is None:
            return None
        entries.append(entry)
    return entries, (st.st_dev, st.st_ino, offset + len(whole))


def _journal_problems(path: Path) -> list[str]:
    """A malformed complete line of prs.journal, as "file: message" (the first one)."""
    try:
        complete = path.read_bytes().rpartition(b"\n")[0]
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"{path}: {exc}"]
    for n, line in enumerate(complete.split(b"\n") if complete else (), 1):
        if _entry(line) is None:
            return [
                f"{path}: line {n}: malformed journal line; pages show the PR's state before it"
            ]
    return []

"""Capability snapshot files (`bot-state/capabilities/<task>.json`) and their dispatch records
in actions.jsonl: read, found and proven untouched.

This is scope-guard's read path, so it stays import-light (no typing, dataclasses or
capdaemon.audit; the hashing core comes from `capdaemon.canon`).
"""

from __future__ import annotations

import json
import mmap
from pathlib import Path

from capdaemon.canon import canonical_json, entry_hash
from capdaemon.capability.model import (
    CapabilitySnapshot,
    SnapshotError,
    TamperedError,
    UnknownTaskError,
    Violation,
    ViolationKind,
    validate_task_id,
)
from capdaemon.capability.snapshot import snapshot_from_body
from capdaemon.filenames import ACTIONS_LOG, CAPABILITIES_DIR
from capdaemon.state import StateError, read_json

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


def snapshot_path(state_dir: Path, task_id: str) -> Path:
    """`<state>/capabilities/<task_id>.json` (the id is validated: no `/`, no `..`)."""
    return Path(state_dir) / CAPABILITIES_DIR / f"{validate_task_id(task_id)}.json"


def snapshot_ids(state_dir: Path) -> list[str]:
    """The task ids of every snapshot file, sorted ([] without the folder; an unreadable folder
    raises OSError: the caller fails closed)."""
    try:
        names = [e.name for e in (Path(state_dir) / CAPABILITIES_DIR).iterdir()]
    except FileNotFoundError:
        return []
    return sorted(n[: -len(".json")] for n in names if n.endswith(".json"))


def read_snapshot_body(path: Path) -> Any:
    """The raw JSON of a snapshot file (None when missing; corrupt → TamperedError)."""
    try:
        return read_json(path, None)
    except StateError as exc:
        raise TamperedError(str(exc)) from exc


def _lines_with(log: Path, needle: bytes) -> Iterator[tuple[bytes, bytes | None]]:
    """(complete line containing needle, the complete line after it or None) — without parsing."""
    try:
        fh = open(log, "rb")  # noqa: SIM115 - a missing log is normal; closed by `with` below
    except FileNotFoundError:
        return
    with fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # empty file
            return
        with mm:
            pos = mm.find(needle)
            while pos != -1:
                start = mm.rfind(b"\n", 0, pos) + 1
                end = mm.find(b"\n", pos)
                if end == -1:
                    return  # torn tail: not a record yet
                nxt_end = mm.find(b"\n", end + 1)
                nxt = mm[end + 1 : nxt_end] if nxt_end != -1 else None
                yield mm[start:end], nxt
                pos = mm.find(needle, end + 1)


def _dispatch_needle(task_id: str) -> bytes:
    return (canonical_json({"task_id": task_id})[1:-1]).encode("utf-8")


def find_dispatch_records(state_dir: Path, task_id: str) -> list[dict[str, Any]]:
    """The dispatch records of one task in actions.jsonl, each checked against its own hash.

    Scans bytes for the task id and parses only the matching lines (fast on a big log).
    Raises TamperedError when a matching record's hash, or the next record's link to it,
    does not hold.
    """
    log = Path(state_dir) / ACTIONS_LOG
    found = []
    for line, nxt in _lines_with(log, _dispatch_needle(task_id)):
        if b'"action":"dispatch"' not in line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            raise TamperedError(f"{log}: malformed dispatch record for {task_id!r}") from None
        if not isinstance(rec, dict) or rec.get("action") != "dispatch":
            continue
        if rec.get("task_id") != task_id:
            continue
        if entry_hash(rec) != rec.get("hash"):
            raise TamperedError(f"{log}: the dispatch record of {task_id!r} was edited")
        if nxt is not None:
            try:
                link = json.loads(nxt).get("prev")
            except (ValueError, AttributeError):
                link = None
            if link != rec["hash"]:
                raise TamperedError(f"{log}: the chain after the dispatch of {task_id!r} is broken")
        else:
            head = read_json(log.with_name(log.name + ".head"), None)
            last = isinstance(head, dict) and head.get("seq") == rec.get("seq")
            if last and head.get("hash") != rec["hash"]:
                raise TamperedError(f"{log}: the last record differs from the one written")
        found.append(rec)
    return found


def snapshot_or_violation(
    state_dir: Path, task_id: str
) -> tuple[CapabilitySnapshot | None, list[Violation]]:
    """The task check every agent-side command makes (scope-guard, scope-guard run,
    finish-task): the task's proven snapshot, or None and the one violation that says why
    there is none (never dispatched: no capability; hash or audit mismatch: tampered)."""
    try:
        return load_snapshot(state_dir, task_id), []
    except UnknownTaskError as exc:
        return None, [Violation(ViolationKind.NO_CAPABILITY, task_id, str(exc))]
    except SnapshotError as exc:
        return None, [Violation(ViolationKind.TAMPERED, task_id, f"refused: {exc}")]


def load_snapshot(state_dir: Path, task_id: str) -> CapabilitySnapshot:
    """Read a task's snapshot and prove it untouched (self-hash and the audit dispatch record).

    Raises BadTaskIdError, UnknownTaskError (never dispatched), TamperedError (hash or audit
    mismatch, corrupt file) or SnapshotError. Expiry is not checked here: see
    `CapabilitySnapshot.is_expired(now)` and the scope checks, which report it.
    """
    path = snapshot_path(state_dir, task_id)
    body = read_snapshot_body(path)
    if body is None:
        raise UnknownTaskError(f"task {task_id!r} has no capability snapshot (never dispatched)")
    snap = snapshot_from_body(body, path, task_id)
    records = find_dispatch_records(state_dir, task_id)
    if not records:
        raise TamperedError(f"{path}: no dispatch record for {task_id!r} in the audit log")
    shas = {r.get("sha256") for r in records}
    if shas != {snap.sha256}:
        raise TamperedError(
            f"{path}: sha256 {snap.sha256[:12]} does not match the audit log's dispatch record"
        )
    return snap

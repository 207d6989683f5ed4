"""Capability snapshots: hashed at dispatch, written once, checked against the audit log."""

from __future__ import annotations

import hashlib
import json
import mmap
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from capdaemon.audit import ACTIONS_LOG, entry_hash, utc_iso
from capdaemon.capability.model import (
    SNAPSHOT_FORMAT,
    Capability,
    CapabilitySnapshot,
    SnapshotError,
    TamperedError,
    UnknownTaskError,
    validate_task_id,
)
from capdaemon.state import StateError, canonical_json, read_json

CAPABILITIES_DIR = "capabilities"
_SNAPSHOT_KEYS = ("format", "task_id", "capability", "dispatched_at", "expires_at", "sha256")


def snapshot_path(state_dir: Path, task_id: str) -> Path:
    """`<state>/capabilities/<task_id>.json` (the id is validated: no `/`, no `..`)."""
    return Path(state_dir) / CAPABILITIES_DIR / f"{validate_task_id(task_id)}.json"


def content_hash(body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a snapshot body without its `sha256` field."""
    rest = {k: v for k, v in body.items() if k != "sha256"}
    return hashlib.sha256(canonical_json(rest).encode("utf-8")).hexdigest()


def build_snapshot(cap: Capability, now: datetime) -> dict[str, Any]:
    """The snapshot body for a capability dispatched at `now` (aware), with its sha256."""
    body: dict[str, Any] = {
        "format": SNAPSHOT_FORMAT,
        "task_id": cap.task_id,
        "capability": cap.to_dict(),
        "dispatched_at": utc_iso(now),
        "expires_at": utc_iso(now + timedelta(hours=cap.ttl_hours)),
    }
    body["sha256"] = content_hash(body)
    return body


def _parse_time(value: Any, name: str) -> datetime:
    if not isinstance(value, str):
        raise TamperedError(f"snapshot field {name} is not a timestamp")
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise TamperedError(f"snapshot field {name} is not a timestamp: {value!r}") from None
    if dt.tzinfo is None:
        raise TamperedError(f"snapshot field {name} has no time zone")
    return dt


def snapshot_from_body(body: Any, path: Path, task_id: str | None = None) -> CapabilitySnapshot:
    """Check a snapshot body's shape and self-hash; raise TamperedError when it does not hold."""
    if not isinstance(body, dict) or any(k not in body for k in _SNAPSHOT_KEYS):
        raise TamperedError(f"{path}: not a capability snapshot (fields missing)")
    if content_hash(body) != body["sha256"]:
        raise TamperedError(f"{path}: content does not match its sha256 (edited by hand?)")
    if task_id is not None and body["task_id"] != task_id:
        raise TamperedError(f"{path}: snapshot is for task {body['task_id']!r}, not {task_id!r}")
    if body["format"] != SNAPSHOT_FORMAT:
        raise SnapshotError(f"{path}: unknown snapshot format {body['format']!r}")
    cap = Capability.from_dict(body["capability"])
    if cap.task_id != body["task_id"]:
        raise TamperedError(f"{path}: capability names another task")
    return CapabilitySnapshot(
        capability=cap,
        dispatched_at=_parse_time(body["dispatched_at"], "dispatched_at"),
        expires_at=_parse_time(body["expires_at"], "expires_at"),
        sha256=body["sha256"],
        path=str(path),
        raw=body,
    )


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

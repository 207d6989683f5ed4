"""Capability snapshots: hashed at dispatch, written once, checked against the audit log.

This is scope-guard's read path, so it stays import-light: the hashing core comes from
`capdaemon.canon` (not `capdaemon.audit`), and pathspec is not imported when the snapshot
stores its glob regexes (`matchers`, see `glob_matchers` and `guard_capability`).
"""

from __future__ import annotations

import hashlib
import json
import mmap
from datetime import datetime, timedelta
from pathlib import Path

from capdaemon.canon import canonical_json, entry_hash
from capdaemon.capability.model import (
    SNAPSHOT_FORMAT,
    Capability,
    CapabilitySnapshot,
    SnapshotError,
    TamperedError,
    UnknownTaskError,
    validate_task_id,
)
from capdaemon.filenames import ACTIONS_LOG, CAPABILITIES_DIR
from capdaemon.globs import GLOB_DIALECT, GlobError, GlobSet, RegexGlobSet, pathspec_version
from capdaemon.state import StateError, read_json
from capdaemon.timefmt import TimestampError, parse_utc, utc_iso

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

_SNAPSHOT_KEYS = ("format", "task_id", "capability", "dispatched_at", "expires_at", "sha256")
MATCHERS_ENGINE = "pathspec"


def snapshot_path(state_dir: Path, task_id: str) -> Path:
    """`<state>/capabilities/<task_id>.json` (the id is validated: no `/`, no `..`)."""
    return Path(state_dir) / CAPABILITIES_DIR / f"{validate_task_id(task_id)}.json"


def content_hash(body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a snapshot body without its `sha256` field."""
    rest = {k: v for k, v in body.items() if k != "sha256"}
    return hashlib.sha256(canonical_json(rest).encode("utf-8")).hexdigest()


def glob_matchers(cap: Capability) -> dict[str, Any]:
    """The regexes pathspec compiles for a capability's globs, for the snapshot's `matchers`.

    `{"engine": "pathspec", "version", "dialect", "paths": [[regex, include], ...],
    "forbidden_paths": [...]}`, one entry per glob in order (forbidden globs case-folded,
    as GlobSet compiles them). The snapshot's sha256 covers them like everything else.
    """
    import pathspec

    return {
        "engine": MATCHERS_ENGINE,
        "version": pathspec.__version__,
        "dialect": GLOB_DIALECT,
        "paths": [list(e) for e in GlobSet(cap.paths, case_insensitive=False).regexes()],
        "forbidden_paths": [
            list(e) for e in GlobSet(cap.forbidden_paths, case_insensitive=True).regexes()
        ],
    }


def build_snapshot(cap: Capability, now: datetime) -> dict[str, Any]:
    """The snapshot body for a capability dispatched at `now` (aware), with its sha256.

    A scoped (not legacy) capability also stores its glob regexes (`matchers`), so that
    scope-guard can match without importing pathspec.
    """
    body: dict[str, Any] = {
        "format": SNAPSHOT_FORMAT,
        "task_id": cap.task_id,
        "capability": cap.to_dict(),
        "dispatched_at": utc_iso(now),
        "expires_at": utc_iso(now + timedelta(hours=cap.ttl_hours)),
    }
    if not cap.legacy:
        body["matchers"] = glob_matchers(cap)
    body["sha256"] = content_hash(body)
    return body


def guard_capability(snap: CapabilitySnapshot) -> Capability:
    """The snapshot's capability, matching with the regexes stored at dispatch when it can.

    Those are used only when they came from the pathspec version installed now (then the
    answers are GlobSet's, see tests/capability/test_cap_regex_parity.py) and fit the
    globs; otherwise (snapshots from before `matchers`, a pathspec upgrade, a legacy task)
    this is `snap.capability`, which compiles GlobSets with pathspec.
    """
    cap = snap.capability
    m = snap.raw.get("matchers") if isinstance(snap.raw, dict) else None
    if cap.legacy or not isinstance(m, dict):
        return cap
    if m.get("engine") != MATCHERS_ENGINE or m.get("dialect") != GLOB_DIALECT:
        return cap
    version = m.get("version")
    if not isinstance(version, str) or version != pathspec_version():
        return cap
    try:
        allowed = RegexGlobSet(cap.paths, False, m["paths"])
        forbidden = RegexGlobSet(cap.forbidden_paths, True, m["forbidden_paths"])
        return cap.with_matchers(allowed, forbidden)
    except (KeyError, TypeError, GlobError, ValueError):
        return cap


def _parse_time(value: Any, name: str) -> datetime:
    try:
        return parse_utc(value, f"snapshot field {name}")
    except TimestampError as exc:
        raise TamperedError(str(exc)) from None


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

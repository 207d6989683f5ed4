"""Capability snapshots, pure: the body hashed at dispatch and its checks when read back
(the files and their audit records are `capdaemon.stores.capabilities`).

This is scope-guard's read path, so it stays import-light: the hashing core comes from
`capdaemon.canon` (not `capdaemon.audit`), and pathspec is not imported when the snapshot
stores its glob regexes (`matchers`, see `glob_matchers` and `guard_capability`).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from pathlib import Path

from capdaemon.canon import canonical_json
from capdaemon.capability.model import (
    SNAPSHOT_FORMAT,
    Capability,
    CapabilitySnapshot,
    SnapshotError,
    TamperedError,
)
from capdaemon.globs import GLOB_DIALECT, GlobError, GlobSet, RegexGlobSet, pathspec_version
from capdaemon.timefmt import TimestampError, parse_utc, utc_iso

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from typing import Any

_SNAPSHOT_KEYS = ("format", "task_id", "capability", "dispatched_at", "expires_at", "sha256")
MATCHERS_ENGINE = "pathspec"


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

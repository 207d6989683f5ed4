"""Dispatching capabilities (create-only snapshot + audit record) and listing their states."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from capdaemon.audit import AuditLog
from capdaemon.capability.model import (
    Capability,
    CapabilityError,
    CapabilitySnapshot,
    DispatchConflictError,
    TamperedError,
)
from capdaemon.capability.snapshot import build_snapshot, snapshot_from_body
from capdaemon.filenames import ACTIONS_LOG, CAPABILITIES_DIR
from capdaemon.state import file_lock, write_new_json
from capdaemon.stores.capabilities import (
    find_dispatch_records,
    load_snapshot,
    read_snapshot_body,
    snapshot_path,
)
from capdaemon.timefmt import utc_iso


@dataclass(frozen=True)
class DispatchResult:
    """What `dispatch` did: "dispatched", "unchanged" (same), "recorded" (audit repaired)."""

    outcome: str
    snapshot: CapabilitySnapshot
    audit_record: dict[str, Any] | None = None


def dispatch(
    state_dir: Path,
    cap: Capability,
    now: datetime,
    *,
    source: str | None = None,
    base: tuple[str, str] | None = None,
    base_repo: str | None = None,
) -> DispatchResult:
    """Write the task's snapshot (create-only, read-only) and append the dispatch audit record.

    `base` (branch name, commit sha), when given, is recorded with the first dispatch: the
    commit finish-task diffs the branch against (a local branch the agent could move is
    never trusted for it). A later dispatch of the same capability never changes it.
    `base_repo` is the checkout the base was read from: finish-task reads the base's objects
    from there when the task's own checkout lacks them (nothing is fetched).

    Same content again → no-op ("unchanged"); a snapshot whose audit record is missing (a
    crash between the two writes) gets its record ("recorded"); different content →
    DispatchConflictError; a tampered existing snapshot → TamperedError.
    """
    state_dir = Path(state_dir)
    path = snapshot_path(state_dir, cap.task_id)
    log = AuditLog(state_dir / ACTIONS_LOG)

    def record(body: dict[str, Any]) -> dict[str, Any]:
        entry = {
            "action": "dispatch",
            "task_id": cap.task_id,
            "sha256": body["sha256"],
            "legacy": cap.legacy,
            "level": cap.level,
            "merge_policy": cap.merge_policy,
            "dispatched_at": body["dispatched_at"],
            "expires_at": body["expires_at"],
        }
        if source:
            entry["source"] = source
        if base is not None:
            entry["base"], entry["base_sha"] = base
            if base_repo:
                entry["base_repo"] = base_repo
        return log.append(entry, now=now)

    with file_lock(state_dir / CAPABILITIES_DIR / ".dispatch.lock"):
        existing = read_snapshot_body(path)
        if existing is not None:
            snap = snapshot_from_body(existing, path, cap.task_id)
            if existing["capability"] != cap.to_dict():
                raise DispatchConflictError(
                    f"task {cap.task_id!r} was already dispatched with a different capability "
                    f"(sha256 {snap.sha256[:12]}); snapshots are never rewritten, "
                    "use a new task id"
                )
            records = find_dispatch_records(state_dir, cap.task_id)
            if not records:
                return DispatchResult("recorded", snap, record(existing))
            if {r.get("sha256") for r in records} != {snap.sha256}:
                raise TamperedError(f"{path}: does not match the audit log's dispatch record")
            return DispatchResult("unchanged", snap)
        body = build_snapshot(cap, now)
        if not write_new_json(path, body, mode=0o444):
            raise DispatchConflictError(f"{path} appeared while dispatching; try again")
        snap = snapshot_from_body(body, path, cap.task_id)
        return DispatchResult("dispatched", snap, record(body))


def recorded_base_repo(state_dir: Path, task_id: str) -> Path | None:
    """The checkout the task's base was read from at dispatch, or None (older records)."""
    for rec in find_dispatch_records(state_dir, task_id):
        where = rec.get("base_repo")
        if isinstance(where, str) and rec.get("base_sha"):
            return Path(where)
    return None


def recorded_base(state_dir: Path, task_id: str) -> tuple[str, str] | None:
    """(branch, sha) recorded at the task's first dispatch, or None (TamperedError when the
    dispatch record was edited)."""
    for rec in find_dispatch_records(state_dir, task_id):
        sha, name = rec.get("base_sha"), rec.get("base")
        if isinstance(sha, str) and isinstance(name, str):
            return name, sha
    return None


@dataclass(frozen=True)
class TaskState:
    """One snapshot's state for listings: active, expired, legacy or tampered."""

    task_id: str
    state: str
    snapshot: CapabilitySnapshot | None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used by `capdaemon tasks --json`."""
        out: dict[str, Any] = {"task_id": self.task_id, "state": self.state}
        if self.reason:
            out["reason"] = self.reason
        s = self.snapshot
        if s is not None:
            out.update(
                level=s.capability.level,
                merge_policy=s.capability.merge_policy,
                legacy=s.legacy,
                dispatched_at=utc_iso(s.dispatched_at),
                expires_at=utc_iso(s.expires_at),
                sha256=s.sha256,
                title=s.capability.title,
            )
            if s.capability.agents:
                out["agents"] = list(s.capability.agents)
            if s.capability.branches:
                out["branches"] = list(s.capability.branches)
        return out


def list_tasks(state_dir: Path, now: datetime) -> list[TaskState]:
    """Every snapshot with its state (tampered > expired > legacy > active), sorted by id."""
    folder = Path(state_dir) / CAPABILITIES_DIR
    out = []
    for path in sorted(folder.glob("*.json")):
        task_id = path.stem
        try:
            snap = load_snapshot(state_dir, task_id)
        except CapabilityError as exc:  # corrupt, tampered, unrecorded, or a bad file name
            out.append(TaskState(task_id, "tampered", None, str(exc)))
            continue
        if snap.is_expired(now):
            state = "expired"
        elif snap.legacy:
            state = "legacy"
        else:
            state = "active"
        out.append(TaskState(task_id, state, snap))
    return out

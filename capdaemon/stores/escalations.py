"""Escalation records in `bot-state/escalations/`: create-only, listed, marked notified/resolved."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capdaemon.capability.model import Violation
from capdaemon.filenames import ESCALATIONS_DIR
from capdaemon.state import StateError, canonical_json, read_json, write_new_json
from capdaemon.timefmt import utc_iso

SUFFIX = ".escalate"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RECORD_ID = re.compile(r"^[0-9]{8}T[0-9]{6}[0-9]*Z-[A-Za-z0-9._-]+-[0-9a-f]{12}$")


class EscalationError(RuntimeError):
    """An escalation record id that is malformed or unknown."""


@dataclass(frozen=True)
class EscalationRecord:
    """One escalation: the task, what was out of scope and why, when, and its notification state."""

    id: str
    task: str
    what: tuple[str, ...]
    why: tuple[str, ...]
    when: str
    layer: str
    data: dict[str, Any]
    notified: dict[str, Any] | None = None
    resolved: dict[str, Any] | None = None

    @property
    def open(self) -> bool:
        """True until the record is marked resolved."""
        return self.resolved is None

    @property
    def issue_url(self) -> str | None:
        """The owner-notification issue, once notified."""
        return (self.notified or {}).get("issue_url")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used by `capdaemon escalations --json`."""
        return {
            **self.data,
            "id": self.id,
            "notified": self.notified,
            "resolved": self.resolved,
        }


def _folder(state_dir: Path) -> Path:
    return Path(state_dir) / ESCALATIONS_DIR


def write_escalation(
    state_dir: Path,
    task_id: str,
    violations: Sequence[Violation],
    now: datetime,
    *,
    layer: str,
    extra: dict[str, Any] | None = None,
) -> EscalationRecord:
    """Create `<when>-<task>-<hash12>.escalate` (never overwriting) and return it."""
    now = now.astimezone(UTC)
    when = utc_iso(now)
    body: dict[str, Any] = {
        "task": task_id,
        "what": [v.subject for v in violations],
        "why": [v.reason for v in violations],
        "when": when,
        "layer": layer,
        "violations": [v.to_dict() for v in violations],
    }
    if extra:
        body.update({k: v for k, v in extra.items() if k not in body})
    short = hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()[:12]
    stamp = now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond:06d}Z"
    safe_task = _SAFE.sub("_", task_id).strip("._-")[:64] or "unknown"
    record_id = f"{stamp}-{safe_task}-{short}"
    body["id"] = record_id
    write_new_json(_folder(state_dir) / f"{record_id}{SUFFIX}", body)
    return _record(body, record_id, None, None)


def _record(data: dict[str, Any], record_id: str, notified: Any, resolved: Any) -> EscalationRecord:
    return EscalationRecord(
        id=record_id,
        task=str(data.get("task", "")),
        what=tuple(str(x) for x in data.get("what", ())),
        why=tuple(str(x) for x in data.get("why", ())),
        when=str(data.get("when", "")),
        layer=str(data.get("layer", "")),
        data=data,
        notified=notified if isinstance(notified, dict) else None,
        resolved=resolved if isinstance(resolved, dict) else None,
    )


def _check_id(record_id: str) -> str:
    if not isinstance(record_id, str) or not _RECORD_ID.match(record_id):
        raise EscalationError(f"malformed escalation id {record_id!r}")
    return record_id


def read_escalation(state_dir: Path, record_id: str) -> EscalationRecord:
    """One record by id, with its notified/resolved side files (EscalationError when unknown)."""
    folder = _folder(state_dir)
    data = read_json(folder / f"{_check_id(record_id)}{SUFFIX}", None)
    if not isinstance(data, dict):
        raise EscalationError(f"no escalation {record_id!r}")
    return _record(
        data,
        record_id,
        read_json(folder / f"{record_id}.notified", None),
        read_json(folder / f"{record_id}.resolved", None),
    )


def list_escalations(state_dir: Path, *, include_resolved: bool = False) -> list[EscalationRecord]:
    """Escalation records, oldest first; open ones only unless `include_resolved`.

    A corrupt record raises StateError (never skipped silently).
    """
    folder = _folder(state_dir)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        record_id = path.name[: -len(SUFFIX)]
        data = read_json(path, None)
        if not isinstance(data, dict):
            raise StateError(f"{path}: not an escalation record")
        rec = _record(
            data,
            record_id,
            read_json(folder / f"{record_id}.notified", None),
            read_json(folder / f"{record_id}.resolved", None),
        )
        if include_resolved or rec.open:
            out.append(rec)
    return out


def mark_notified(
    state_dir: Path, record_id: str, issue_url: str, now: datetime | None = None
) -> bool:
    """Record that owners were notified (create-only side file); False if already marked."""
    read_escalation(state_dir, record_id)  # must exist
    body: dict[str, Any] = {"issue_url": issue_url}
    if now is not None:
        body["at"] = utc_iso(now)
    return write_new_json(_folder(state_dir) / f"{record_id}.notified", body)


def mark_resolved(state_dir: Path, record_id: str, by: str, now: datetime, note: str = "") -> bool:
    """Close a record (create-only side file); False if it was already resolved."""
    read_escalation(state_dir, record_id)
    body = {"by": by, "at": utc_iso(now), "note": note}
    return write_new_json(_folder(state_dir) / f"{record_id}.resolved", body)

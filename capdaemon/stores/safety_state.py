"""The safety net's bot-state files: breaker.json, safety.json and the actions-log cursor."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capdaemon.audit import log_paths
from capdaemon.decide.breaker import BreakerState
from capdaemon.filenames import BREAKER_FILE, SAFETY_FILE
from capdaemon.jsonl import read_after
from capdaemon.state import StateError, atomic_write_json, file_lock, read_json

VERSION = 1


@dataclass
class BreakerFile:
    """`bot-state/breaker.json`: the breaker state plus the incident issue it opened."""

    state: BreakerState = field(default_factory=BreakerState)
    incident_issue: dict[str, Any] | None = None  # {"key", "number", "open"}
    to_close: list[dict[str, Any]] = field(default_factory=list)  # [{"key", "comment"}]

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "version": VERSION,
            "breaker": self.state.to_json(),
            "incident_issue": self.incident_issue,
            "to_close": self.to_close,
        }


def _breaker_path(state_dir: Path) -> Path:
    return Path(state_dir) / BREAKER_FILE


def read_breaker(state_dir: Path) -> BreakerFile:
    """Read breaker.json (missing → closed breaker); a corrupt file raises StateError."""
    path = _breaker_path(state_dir)
    raw = read_json(path, None)
    if raw is None:
        return BreakerFile()
    try:
        if not isinstance(raw, dict) or raw.get("version") != VERSION:
            raise ValueError(f"not a capdaemon breaker file (version {VERSION})")
        issue = raw.get("incident_issue")
        to_close = raw.get("to_close") or []
        if issue is not None and not isinstance(issue, dict):
            raise ValueError("incident_issue: expected an object")
        if not isinstance(to_close, list):
            raise ValueError("to_close: expected a list")
        return BreakerFile(BreakerState.from_json(raw.get("breaker")), issue, list(to_close))
    except ValueError as exc:
        raise StateError(f"{path}: {exc}; never overwritten") from exc


@contextmanager
def breaker_update(state_dir: Path) -> Iterator[BreakerFile]:
    """Read-modify-write breaker.json under a file lock (the daemon and the CLI share it)."""
    path = _breaker_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path.with_name(path.name + ".lock")):
        bf = read_breaker(state_dir)
        before = json.dumps(bf.to_json(), sort_keys=True)
        yield bf
        if json.dumps(bf.to_json(), sort_keys=True) != before:
            atomic_write_json(path, bf.to_json())


class SafetyStore:
    """`bot-state/safety.json`: everything the safety steps remember between ticks."""

    KEYS: tuple[tuple[str, Any], ...] = (
        ("cursor", {"seq": 0, "offset": 0}),
        ("burn_in_cursor", {"seq": 0, "offset": 0}),
        ("burn_in", {}),
        ("tiers", {}),
        ("agents_by_pr", {}),
        ("one_tap", {}),
        ("watches", []),
        ("reverts", []),
        ("probed", {}),
        ("protection", {}),
        ("reviewed", {}),
        ("api_fail_streak", 0),
        ("audit_check", {}),
        ("breaker_comments", []),
        ("mode", ""),  # the mode the daemon last ran in (daemon.merging.modeswitch)
    )

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / SAFETY_FILE
        self._data: dict[str, Any] | None = None  # read on first use
        self._saved = ""

    @property
    def data(self) -> dict[str, Any]:
        """The file's content (read on first use; a malformed file raises StateError)."""
        if self._data is None:
            self._data = self._load()
            self._saved = json.dumps(self._data, sort_keys=True)
        return self._data

    def _load(self) -> dict[str, Any]:
        raw = read_json(self.path, None)
        if raw is not None and (not isinstance(raw, dict) or raw.get("version") != VERSION):
            raise StateError(f"{self.path}: not a capdaemon safety.json (version {VERSION})")
        raw = dict(raw or {})
        data: dict[str, Any] = {"version": VERSION}
        for key, default in self.KEYS:
            value = raw.get(key, json.loads(json.dumps(default)))
            if type(value) is not type(default):
                raise StateError(f"{self.path}: key {key!r} is malformed; never overwritten")
            data[key] = value
        return data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.data[key] = value

    def save(self) -> None:
        """Write atomically when something changed."""
        now = json.dumps(self.data, sort_keys=True)
        if now != self._saved:
            atomic_write_json(self.path, self.data)
            self._saved = now


def new_actions(
    state_dir: Path, cursor: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Complete actions.jsonl records after `cursor` ({"seq", "offset"}), and the new cursor.

    Reads from the saved byte offset; a log shorter than the offset (replaced) is re-read
    from the start, records at or below the cursor's seq skipped. A malformed complete line
    raises AuditCorruptError naming file and line; the cursor does not move past it (its
    record is read once the line is repaired by hand, never skipped).
    """
    seq = int(cursor.get("seq", 0))
    records, offset = read_after(log_paths(state_dir)[1], int(cursor.get("offset", 0)))
    out: list[dict[str, Any]] = []
    for rec in records:
        if int(rec.get("seq", 0)) > seq:
            seq = int(rec["seq"])
            out.append(rec)
    return out, {"seq": seq, "offset": offset}

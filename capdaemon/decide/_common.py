"""Shared helpers of the decision core: aware-datetime guards, JSON field readers, actions."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from capdaemon.timefmt import parse_utc, utc_iso


def aware(dt: datetime, name: str) -> datetime:
    """Return `dt` unchanged, or raise ValueError when it is naive (or not a datetime)."""
    if not isinstance(dt, datetime):
        raise ValueError(f"{name} must be a datetime, not {type(dt).__name__}")
    if dt.tzinfo is None or dt.tzinfo.utcoffset(dt) is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {dt.isoformat()}")
    return dt


def dt_to_json(dt: datetime | None) -> str | None:
    """An aware datetime as the audit log's UTC ISO form; None stays None."""
    return None if dt is None else utc_iso(dt)


class _Reader:
    """Reads typed fields from a JSON dict; every error is a ValueError naming the field."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        self.data = data
        self.where = where

    def _name(self, key: str) -> str:
        return f"{self.where}.{key}"

    def _get(self, key: str, optional: bool) -> Any:
        if key not in self.data:
            if optional:
                return None
            raise ValueError(f"{self._name(key)}: missing")
        return self.data[key]

    def text(self, key: str, *, optional: bool = False) -> Any:
        value = self._get(key, optional)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise ValueError(f"{self._name(key)}: expected a string, got {value!r}")
        return value

    def integer(self, key: str, *, optional: bool = False, minimum: int | None = None) -> Any:
        value = self._get(key, optional)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{self._name(key)}: expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise ValueError(f"{self._name(key)}: must be >= {minimum}, got {value}")
        return value

    def flag(self, key: str, *, optional: bool = False) -> Any:
        value = self._get(key, optional)
        if value is None and optional:
            return None
        if not isinstance(value, bool):
            raise ValueError(f"{self._name(key)}: expected true/false, got {value!r}")
        return value

    def when(self, key: str, *, optional: bool = False) -> Any:
        value = self._get(key, optional)
        if value is None and optional:
            return None
        return parse_utc(value, self._name(key))

    def items(self, key: str, *, optional: bool = False) -> list[Any]:
        value = self._get(key, optional)
        if value is None and optional:
            return []
        if not isinstance(value, list):
            raise ValueError(f"{self._name(key)}: expected a list, got {type(value).__name__}")
        return value

    def choice(self, key: str, kind: type[enum.StrEnum]) -> Any:
        value = self.text(key)
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(m.value for m in kind)
            raise ValueError(f"{self._name(key)}: {value!r} is not one of {allowed}") from None


def reader(data: Any, where: str) -> _Reader:
    """A field reader over a JSON object; `where` prefixes error messages (e.g. "breaker")."""
    return _Reader(data, where)


def check_share(share: float, name: str = "share") -> float:
    """A share in [0, 1], else ValueError."""
    if isinstance(share, bool) or not isinstance(share, int | float) or math.isnan(share):
        raise ValueError(f"{name} must be a number in [0, 1], got {share!r}")
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {share}")
    return float(share)


class ActionKind(enum.StrEnum):
    """What the daemon is asked to do with an action (the pure core never does it itself)."""

    AUDIT = "audit"  # append `payload` to actions.jsonl (payload carries the "action" key)
    OPEN_INCIDENT_ISSUE = "open_incident_issue"  # payload: key, title, body, labels
    UPDATE_INCIDENT_ISSUE = "update_incident_issue"  # payload: key, comment
    CLOSE_INCIDENT_ISSUE = "close_incident_issue"  # payload: key, comment
    REPLY = "reply"  # payload: body (answer on the issue/comment the request came from)


@dataclass(frozen=True)
class Action:
    """One thing for the daemon to record or do, with a JSON-able payload."""

    kind: ActionKind
    payload: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: {"kind": ..., "payload": {...}}."""
        return {"kind": self.kind.value, "payload": dict(self.payload)}


def audit(action: str, **fields: Any) -> Action:
    """An AUDIT action whose payload is {"action": action, **fields}."""
    return Action(ActionKind.AUDIT, {"action": action, **fields})

"""The parts of a PR record (its state enums and sub-records) and the strict JSON readers
they share with capdaemon.stores.prrecord: an unknown key, a wrong type or an unknown enum
value raises RecordError naming the field."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.labels import IssueKind
from capdaemon.timefmt import parse_utc

# Records written before the kind was renamed say "scope".
_LEGACY_ISSUE_KINDS = {"scope": IssueKind.SCOPE_VIOLATION.value}


class Absent:
    """Stands for a key a record does not have (its type matches no JSON type)."""


class RecordError(ValueError):
    """A PR record's field holds a value capdaemon does not know (the message names it)."""


class PRState(enum.StrEnum):
    """Where a PR stands, as the daemon last saw it."""

    OPEN = "open"
    MERGED = "merged"
    CLOSED = "closed"
    GONE = "gone"


class PendingOp(enum.StrEnum):
    """An irreversible write recorded as attempted before it is made."""

    MERGE = "merge"
    CLOSE = "close"


_E = TypeVar("_E", bound=enum.StrEnum)
_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true/false", dict: "an object"}


def value_of(data: Mapping[str, Any], key: str, kind: type, where: str, nullable: bool) -> Any:
    """`data[key]` when it is a `kind` (or null when `nullable`), else RecordError."""
    value = data[key]
    if value is None and nullable:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise RecordError(f"{where}{key}: expected {_TYPE_NAMES[kind]}, got {value!r}")
    return value


def _obj(
    data: Any, where: str, keys: tuple[str, ...], required: tuple[str, ...]
) -> Mapping[str, Any]:
    """`data` as an object with only `keys`, all of `required` among them."""
    if not isinstance(data, dict):  # JSON objects are dicts (no ABC check per field)
        raise RecordError(f"{where}: expected an object, got {data!r}")
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise RecordError(f"{where}: unknown keys {unknown}")
    missing = [k for k in required if k not in data]
    if missing:
        raise RecordError(f"{where}: missing {', '.join(missing)}")
    return data


def enum_of(kind: type[_E], value: Any, where: str) -> _E:
    member = kind._value2member_map_.get(value) if isinstance(value, str) else None
    if isinstance(member, kind):
        return member
    allowed = ", ".join(m.value for m in kind)
    raise RecordError(f"{where}: {value!r} is not one of {allowed}")


def _time(value: Any, where: str) -> str:
    """An ISO time kept as written (checked to parse, so a later reader cannot trip on it)."""
    parse_utc(value, where)  # TimestampError (a ValueError) naming the field
    return str(value)


def texts_of(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise RecordError(f"{where}{key}: expected a list of strings, got {value!r}")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class Pending:
    """An action recorded as attempted whose outcome is not recorded yet (record before act)."""

    op: PendingOp
    head_sha: str
    at: str
    base_ref: str | None = None  # a merge: the base the ballot approved it on

    def to_json(self) -> dict[str, Any]:
        """The JSON form."""
        out: dict[str, Any] = {"op": self.op.value, "head_sha": self.head_sha}
        if self.base_ref is not None:
            out["base_ref"] = self.base_ref
        return {**out, "at": self.at}

    @classmethod
    def from_json(cls, data: Any) -> Pending:
        """Parse the JSON form (RecordError naming the field)."""
        d = _obj(data, "pending", ("op", "head_sha", "base_ref", "at"), ("op", "head_sha", "at"))
        return cls(
            op=enum_of(PendingOp, d["op"], "pending.op"),
            head_sha=value_of(d, "head_sha", str, "pending.", False),
            at=_time(d["at"], "pending.at"),
            base_ref=value_of(d, "base_ref", str, "pending.", True) if "base_ref" in d else None,
        )


@dataclass(frozen=True, slots=True)
class BallotSeen:
    """A ballot issue's activity (issue list) when its votes were last read in full, and when."""

    fp: str
    at: str

    def to_json(self) -> dict[str, Any]:
        """The JSON form."""
        return {"fp": self.fp, "at": self.at}

    @classmethod
    def from_json(cls, data: Any) -> BallotSeen:
        """Parse the JSON form (RecordError naming the field)."""
        d = _obj(data, "ballot_seen", ("fp", "at"), ("fp", "at"))
        return cls(value_of(d, "fp", str, "ballot_seen.", False), _time(d["at"], "ballot_seen.at"))


@dataclass(frozen=True, slots=True)
class BallotRecord:
    """The last ballot outcome applied to a PR: its status for one head, in one round; once
    votes were counted, who decided (None: nobody), why, and when."""

    status: BallotStatus
    head_sha: str
    round: int
    by: str | None = None
    reason: str | None = None  # set once votes were counted (then `at` too)
    at: str | None = None
    voted_at: str | None = None  # when the deciding vote was cast (reaction times only)

    def __post_init__(self) -> None:
        BallotStatus(self.status)  # an unknown status never exists in memory

    def to_json(self) -> dict[str, Any]:
        """The JSON form."""
        out: dict[str, Any] = {
            "status": self.status.value,
            "head_sha": self.head_sha,
            "round": self.round,
        }
        if self.reason is not None:
            out.update(by=self.by, reason=self.reason, at=self.at)
        if self.voted_at is not None:
            out["voted_at"] = self.voted_at
        return out

    @classmethod
    def from_json(cls, data: Any) -> BallotRecord:
        """Parse the JSON form (RecordError naming the field)."""
        keys = ("status", "head_sha", "round", "by", "reason", "at", "voted_at")
        d = _obj(data, "ballot", keys, ("status", "head_sha", "round"))
        counted = "reason" in d
        return cls(
            status=enum_of(BallotStatus, d["status"], "ballot.status"),
            head_sha=value_of(d, "head_sha", str, "ballot.", False),
            round=value_of(d, "round", int, "ballot.", False),
            by=value_of(d, "by", str, "ballot.", True) if "by" in d else None,
            reason=value_of(d, "reason", str, "ballot.", False) if counted else None,
            at=_time(d.get("at"), "ballot.at") if counted else None,
            voted_at=value_of(d, "voted_at", str, "ballot.", False) if "voted_at" in d else None,
        )


@dataclass(frozen=True, slots=True)
class IssueText:
    """What capdaemon last wrote on a passive review issue (to restore it after an edit)."""

    title: str
    body: str
    marker: Mapping[str, Any]
    labels: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "title": self.title,
            "body": self.body,
            "marker": dict(self.marker),
            "labels": list(self.labels),
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> IssueText:
        """Parse the JSON form (RecordError naming the field)."""
        keys = ("title", "body", "marker", "labels")
        d = _obj(data, where, keys, keys)
        return cls(
            title=value_of(d, "title", str, f"{where}.", False),
            body=value_of(d, "body", str, f"{where}.", False),
            marker=dict(value_of(d, "marker", dict, f"{where}.", False)),
            labels=texts_of(d, "labels", f"{where}."),
        )


@dataclass(frozen=True, slots=True)
class IssueRef:
    """A PR's decision issue of one kind: its number, whether it is open, since when;
    `body_sha` hashes the title and body capdaemon last wrote there (R5), `text` is what it
    wrote (passive reviews, while open), `restores` how often it was restored after an edit."""

    number: int
    open: bool = True
    opened_at: str = ""
    kept_open: bool = False
    body_sha: str | None = None
    text: IssueText | None = None
    restores: int = 0

    def to_json(self) -> dict[str, Any]:
        """The JSON form (optional keys only when set)."""
        out: dict[str, Any] = {"number": self.number, "open": self.open}
        if self.opened_at:
            out["opened_at"] = self.opened_at
        out["kept_open"] = self.kept_open
        if self.body_sha is not None:
            out["body_sha"] = self.body_sha
        if self.text is not None:
            out["text"] = self.text.to_json()
        if self.restores:
            out["restores"] = self.restores
        return out

    @classmethod
    def from_json(cls, data: Any, where: str) -> IssueRef:
        """Parse the JSON form (RecordError naming the field)."""
        d = _obj(data, where, _ISSUE_KEYS, ("number",))
        p = f"{where}."
        return cls(
            number=value_of(d, "number", int, p, False),
            open=value_of(d, "open", bool, p, False) if "open" in d else True,
            opened_at=_time(d["opened_at"], f"{p}opened_at") if "opened_at" in d else "",
            kept_open=value_of(d, "kept_open", bool, p, False) if "kept_open" in d else False,
            body_sha=value_of(d, "body_sha", str, p, False) if "body_sha" in d else None,
            text=IssueText.from_json(d["text"], f"{p}text") if "text" in d else None,
            restores=value_of(d, "restores", int, p, False) if "restores" in d else 0,
        )


_ISSUE_KEYS = tuple(f.name for f in dataclasses.fields(IssueRef))


def issues_of(data: Mapping[str, Any]) -> Mapping[str, IssueRef]:
    raw = data.get("issues", {})
    if not isinstance(raw, dict):
        raise RecordError(f"issues: expected an object, got {raw!r}")
    out: dict[str, IssueRef] = {}
    for key, value in raw.items():
        kind = enum_of(IssueKind, _LEGACY_ISSUE_KINDS.get(key, key), f"issues: kind {key!r}")
        out[kind.value] = IssueRef.from_json(value, f"issues.{key}")
    return MappingProxyType(out)


_NO_ISSUES: Mapping[str, IssueRef] = MappingProxyType({})


def no_issues() -> Mapping[str, IssueRef]:
    return _NO_ISSUES  # read-only: one shared empty mapping

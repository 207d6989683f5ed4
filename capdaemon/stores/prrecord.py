"""Typed per-PR records of bot-state/prs.json (PRRecord and its sub-records) and their JSON form.

The JSON form is the one prs.json has always had (every PRRecord field present; `{}` for no
ballot and no `ballot_seen`, `null` for no round and nothing pending). Reading is strict: an
unknown key, a value of the wrong type or an unknown enum value raises RecordError naming the
field (the store adds the file and the PR); nothing is coerced to a default.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.labels import IssueKind
from capdaemon.decide.rounds import BallotRound
from capdaemon.model import Quadrant
from capdaemon.timefmt import parse_utc

# Records written before the kind was renamed say "scope".
_LEGACY_ISSUE_KINDS = {"scope": IssueKind.SCOPE_VIOLATION.value}


class _Absent:
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


def _value(data: Mapping[str, Any], key: str, kind: type, where: str, nullable: bool) -> Any:
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


def _enum(kind: type[_E], value: Any, where: str) -> _E:
    member = kind._value2member_map_.get(value) if isinstance(value, str) else None
    if isinstance(member, kind):
        return member
    allowed = ", ".join(m.value for m in kind)
    raise RecordError(f"{where}: {value!r} is not one of {allowed}")


def _time(value: Any, where: str) -> str:
    """An ISO time kept as written (checked to parse, so a later reader cannot trip on it)."""
    parse_utc(value, where)  # TimestampError (a ValueError) naming the field
    return str(value)


def _texts(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
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
            op=_enum(PendingOp, d["op"], "pending.op"),
            head_sha=_value(d, "head_sha", str, "pending.", False),
            at=_time(d["at"], "pending.at"),
            base_ref=_value(d, "base_ref", str, "pending.", True) if "base_ref" in d else None,
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
        return cls(_value(d, "fp", str, "ballot_seen.", False), _time(d["at"], "ballot_seen.at"))


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
            status=_enum(BallotStatus, d["status"], "ballot.status"),
            head_sha=_value(d, "head_sha", str, "ballot.", False),
            round=_value(d, "round", int, "ballot.", False),
            by=_value(d, "by", str, "ballot.", True) if "by" in d else None,
            reason=_value(d, "reason", str, "ballot.", False) if counted else None,
            at=_time(d.get("at"), "ballot.at") if counted else None,
            voted_at=_value(d, "voted_at", str, "ballot.", False) if "voted_at" in d else None,
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
            title=_value(d, "title", str, f"{where}.", False),
            body=_value(d, "body", str, f"{where}.", False),
            marker=dict(_value(d, "marker", dict, f"{where}.", False)),
            labels=_texts(d, "labels", f"{where}."),
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
            number=_value(d, "number", int, p, False),
            open=_value(d, "open", bool, p, False) if "open" in d else True,
            opened_at=_time(d["opened_at"], f"{p}opened_at") if "opened_at" in d else "",
            kept_open=_value(d, "kept_open", bool, p, False) if "kept_open" in d else False,
            body_sha=_value(d, "body_sha", str, p, False) if "body_sha" in d else None,
            text=IssueText.from_json(d["text"], f"{p}text") if "text" in d else None,
            restores=_value(d, "restores", int, p, False) if "restores" in d else 0,
        )


_ISSUE_KEYS = tuple(f.name for f in dataclasses.fields(IssueRef))


def _issues(data: Mapping[str, Any]) -> Mapping[str, IssueRef]:
    raw = data.get("issues", {})
    if not isinstance(raw, dict):
        raise RecordError(f"issues: expected an object, got {raw!r}")
    out: dict[str, IssueRef] = {}
    for key, value in raw.items():
        kind = _enum(IssueKind, _LEGACY_ISSUE_KINDS.get(key, key), f"issues: kind {key!r}")
        out[kind.value] = IssueRef.from_json(value, f"issues.{key}")
    return MappingProxyType(out)


_NO_ISSUES: Mapping[str, IssueRef] = MappingProxyType({})


def _no_issues() -> Mapping[str, IssueRef]:
    return _NO_ISSUES  # read-only: one shared empty mapping


@dataclass(frozen=True, slots=True)
class PRRecord:
    """What the daemon remembers about one PR between ticks (keyed `owner/repo#N`).

    Frozen: a change is a new record (`PRStore.change`), so every holder reads the store's.

    `fingerprint` hashes the classification inputs last handled (head, labels, foreign
    check runs — not statuses, which classification never sees —, policy, capability);
    `audited` the inputs whose classification is already in the audit log (a crash between
    audit and publication never audits twice); `published` adds the ballot state (the check
    and issues as last written). `issues` maps an issue kind (ballot, review, scope-violation)
    to its IssueRef. `ballot_round` is the ballot's binding; `ballot` the last applied outcome.
    `pending` is an action recorded as attempted whose outcome is not recorded yet.
    `light` hashes what the PR list, the policy and the capability say (head, base, labels,
    draft, policy, capability) at the last full evaluation; `firm_d` is True when the quadrant
    is D by votes no check run can lift (None: not known, recorded before this field);
    `ballot_seen` tells the last full read of the ballot's votes. Together they let a steady
    tick skip reads (the skip rules are in capdaemon/daemon/polling/gather.py).
    `auto_revert_head` / `auto_revert_floor`: the head at which the newest `labeled
    decision:auto-revert` event already present was recorded (ISO time, "" when none): only
    a label event newer than that floor can verify the label for that head (R2).
    `head_ref` is the PR's head branch name as GitHub last listed it (attacker-chosen text:
    shown escaped, never used to decide; "" in records written before this field).
    """

    repo: str
    number: int
    head_sha: str = ""
    fingerprint: str = ""
    audited: str = ""
    published: str = ""
    counted_head: str = ""
    quadrant: Quadrant | None = None
    check_success: bool = False
    blocking: tuple[str, ...] = ()
    task_id: str | None = None
    merge_policy: str | None = None
    policy_reason: str = ""
    auto_revert: bool = False
    mergeable: bool | None = None
    author: str = ""
    title: str = ""
    issues: Mapping[str, IssueRef] = field(default_factory=_no_issues)
    ballot_round: BallotRound | None = None
    ballot: BallotRecord | None = None
    handled: tuple[str, ...] = ()
    merge_blocked_head: str = ""
    would_merge_head: str = ""
    state: PRState = PRState.OPEN
    merge_sha: str | None = None
    pending: Pending | None = None
    first_seen: str = ""
    updated_at: str = ""
    light: str = ""
    firm_d: bool | None = None
    ballot_seen: BallotSeen | None = None
    auto_revert_head: str = ""
    auto_revert_floor: str = ""
    head_ref: str = ""

    def __post_init__(self) -> None:
        # a list or dict given by a caller is copied into its read-only form
        if type(self.blocking) is not tuple:
            object.__setattr__(self, "blocking", tuple(self.blocking))
        if type(self.handled) is not tuple:
            object.__setattr__(self, "handled", tuple(self.handled))
        if type(self.issues) is not MappingProxyType:
            object.__setattr__(self, "issues", MappingProxyType(dict(self.issues)))

    @property
    def ref(self) -> str:
        """`owner/repo#N`."""
        return f"{self.repo}#{self.number}"

    def issue(self, kind: str) -> IssueRef | None:
        """The decision issue of one kind, if opened."""
        return self.issues.get(kind)

    # ------------------------------------------------------------ the ballot's status
    # The one home of every question about the recorded ballot. A status outside
    # BallotStatus cannot be held (the file is refused when read), so none of these
    # answers can rest on an unknown status.
    def ballot_for(self, head_sha: str) -> BallotRecord | None:
        """The recorded ballot outcome when it is for this head (None: none for it)."""
        b = self.ballot
        return b if b is not None and b.head_sha == head_sha else None

    def ballot_status(self, head_sha: str) -> BallotStatus:
        """The ballot status recorded for this head (pending when none is)."""
        b = self.ballot_for(head_sha)
        return BallotStatus.PENDING if b is None else b.status

    def ballot_approves(self, head_sha: str) -> bool:
        """True only when a recorded approval is for exactly this head."""
        return self.ballot_status(head_sha).mergeable

    # ------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """JSON form (plain JSON data, a fresh copy)."""
        out = {name: getattr(self, name) for name in _FIELDS}
        out.update(
            quadrant=None if self.quadrant is None else self.quadrant.value,
            state=self.state.value,
            blocking=list(self.blocking),
            handled=list(self.handled),
            issues={kind: ref.to_json() for kind, ref in self.issues.items()},
            ballot_round=None if self.ballot_round is None else self.ballot_round.to_json(),
            ballot={} if self.ballot is None else self.ballot.to_json(),
            pending=None if self.pending is None else self.pending.to_json(),
            ballot_seen={} if self.ballot_seen is None else self.ballot_seen.to_json(),
        )
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PRRecord:
        """Parse one record; an unknown key or value raises RecordError naming the field."""
        unknown = data.keys() - _FIELD_SET
        if unknown:
            raise RecordError(f"unknown keys {sorted(unknown)}")
        values = _scalars(data)
        values.update({name: _texts(data, name, "") for name in ("blocking", "handled")})
        values.update(_composites(data))
        return _built(values) if cls is PRRecord else cls(**values)


def _scalars(data: Mapping[str, Any]) -> dict[str, Any]:
    """The plain-typed fields present in `data`, each checked (RecordError naming it).

    The JSON types of a record's plain fields form a signature; one already checked is
    accepted at once (every record the daemon writes has one of a few)."""
    types = tuple(map(type, map(data.get, _SCALAR_NAMES, _ABSENT)))
    if types in _CHECKED:
        return dict(zip(_SCALAR_NAMES, map(data.__getitem__, _SCALAR_NAMES), strict=True))
    missing = [k for k in ("repo", "number") if k not in data]
    if missing:
        raise RecordError(f"missing {', '.join(missing)}")
    values: dict[str, Any] = {}
    for name, (kind, nullable) in _SCALARS.items():
        if name in data:
            values[name] = _value(data, name, kind, "", nullable)
    if len(values) == len(_SCALARS) and len(_CHECKED) < 256:
        _CHECKED.add(types)
    return values


def _built(values: Mapping[str, Any]) -> PRRecord:
    """A record of checked values (absent ones take their defaults), its slots set directly:
    the frozen __init__'s object.__setattr__ per field would make reading prs.json (thousands
    of records) a third slower. The values are in their read-only forms already."""
    rec: PRRecord = object.__new__(PRRecord)
    for name, set_slot, default in _SLOTS:
        set_slot(rec, values.get(name, default))
    return rec


def record_of(ref: str, data: Any) -> PRRecord:
    """The prs.json entry filed under `ref`; RecordError naming the PR and the field."""
    try:
        if not isinstance(data, dict):
            raise RecordError("not an object")
        rec = PRRecord.from_dict(data)
        if rec.ref != ref:
            raise RecordError(f"repo/number name {rec.ref!r}")
    except (TypeError, ValueError) as exc:
        raise RecordError(f"record {ref!r} is malformed: {exc}") from exc
    return rec


def _composites(data: Mapping[str, Any]) -> dict[str, Any]:
    """The enum and sub-record fields of one record's JSON form (absent: the defaults)."""
    out: dict[str, Any] = {"issues": _issues(data)}
    if data.get("quadrant") is not None:
        out["quadrant"] = _enum(Quadrant, data["quadrant"], "quadrant")
    if "state" in data:
        out["state"] = _enum(PRState, data["state"], "state")
    if data.get("ballot_round") is not None:
        try:
            out["ballot_round"] = BallotRound.from_json(data["ballot_round"])
        except (TypeError, ValueError) as exc:  # its messages name "ballot_round.<field>"
            raise RecordError(str(exc)) from exc
    if data.get("ballot", {}) != {}:
        out["ballot"] = BallotRecord.from_json(data["ballot"])
    if data.get("pending") is not None:
        out["pending"] = Pending.from_json(data["pending"])
    if data.get("ballot_seen", {}) != {}:
        out["ballot_seen"] = BallotSeen.from_json(data["ballot_seen"])
    return out


_FIELDS = tuple(f.name for f in dataclasses.fields(PRRecord))
# (name, its slot's setter, its default: repo, number, issues, blocking, handled are always read)
_SLOTS = tuple(
    (f.name, getattr(PRRecord, f.name).__set__, f.default) for f in dataclasses.fields(PRRecord)
)
_FIELD_SET = frozenset(_FIELDS)
# plain-typed fields: (JSON type, null allowed)
_SCALARS: dict[str, tuple[type, bool]] = {
    "repo": (str, False),
    "number": (int, False),
    "head_sha": (str, False),
    "fingerprint": (str, False),
    "audited": (str, False),
    "published": (str, False),
    "counted_head": (str, False),
    "check_success": (bool, False),
    "task_id": (str, True),
    "merge_policy": (str, True),
    "policy_reason": (str, False),
    "auto_revert": (bool, False),
    "mergeable": (bool, True),
    "author": (str, False),
    "title": (str, False),
    "merge_blocked_head": (str, False),
    "would_merge_head": (str, False),
    "merge_sha": (str, True),
    "first_seen": (str, False),
    "updated_at": (str, False),
    "light": (str, False),
    "firm_d": (bool, True),
    "auto_revert_head": (str, False),
    "auto_revert_floor": (str, False),
    "head_ref": (str, False),
}
_SCALAR_NAMES = tuple(_SCALARS)
_ABSENT = (_Absent(),) * len(_SCALAR_NAMES)  # a missing key's type is never a JSON type
_CHECKED: set[tuple[type, ...]] = set()  # signatures whose every field was checked

"""Typed per-PR records of bot-state/prs.json (PRRecord; its parts are in prparts) as JSON.

The JSON form is the one prs.json has always had (every PRRecord field present; `{}` for no
ballot and no `ballot_seen`, `null` for no round and nothing pending). Reading is strict: an
unknown key, a value of the wrong type or an unknown enum value raises RecordError naming the
field (the store adds the file and the PR); nothing is coerced to a default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.rounds import BallotRound
from capdaemon.model import Quadrant
from capdaemon.stores.prparts import (
    Absent,
    BallotRecord,
    BallotSeen,
    IssueRef,
    IssueText,
    Pending,
    PendingOp,
    PRState,
    RecordError,
    enum_of,
    issues_of,
    no_issues,
    texts_of,
    value_of,
)

__all__ = [
    "BallotRecord",
    "BallotSeen",
    "IssueRef",
    "IssueText",
    "PRRecord",
    "PRState",
    "Pending",
    "PendingOp",
    "RecordError",
    "record_of",
]


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
    issues: Mapping[str, IssueRef] = field(default_factory=no_issues)
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
        values.update({name: texts_of(data, name, "") for name in ("blocking", "handled")})
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
            values[name] = value_of(data, name, kind, "", nullable)
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
    out: dict[str, Any] = {"issues": issues_of(data)}
    if data.get("quadrant") is not None:
        out["quadrant"] = enum_of(Quadrant, data["quadrant"], "quadrant")
    if "state" in data:
        out["state"] = enum_of(PRState, data["state"], "state")
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
_ABSENT = (Absent(),) * len(_SCALAR_NAMES)  # a missing key's type is never a JSON type
_CHECKED: set[tuple[type, ...]] = set()  # signatures whose every field was checked

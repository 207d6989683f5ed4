"""Capability data types and the typed errors of the capability system (pure, no I/O).

The record classes are plain `__slots__`/`__dict__` classes written out by hand, with the
constructor, equality, hashing, repr and immutability of the frozen dataclasses they
replace: `scope-guard` imports this module before every agent edit, and dataclasses
(with inspect) and typing cost ~9 ms of start-up.
"""

from __future__ import annotations

import enum
from functools import cached_property

from capdaemon.globs import GlobSet

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from capdaemon.globs import RegexGlobSet

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
MAX_TASK_ID = 128

MERGE_POLICIES = ("auto", "tiered", "manual")
DEFAULT_MERGE_POLICY = "manual"  # decision: an unstated merge policy fails closed
DEFAULT_TTL_HOURS = 48
MAX_TTL_HOURS = 720  # 30 days
DEFAULT_LEVEL = 3  # decision: an unstated level is the most cautious one
MAX_TASK_FILE_BYTES = 256 * 1024  # a task file is a few hundred bytes; far larger is an attack
MAX_LIST_ITEMS = 1000  # globs, commands or agents in one list of a task file
SNAPSHOT_FORMAT = 1
# how `scope-guard run` and QC enforce the task's scope: the process sandbox with Landlock,
# Landlock alone (an explicit opt-in to less), or the static check alone
ENFORCEMENTS = ("kernel", "landlock-only", "check-only")
HOOK_FOLDERS = (".husky", ".githooks")  # hook managers' folders: the next commit runs them
DEFAULT_ENFORCEMENT = "kernel"  # decision: the sandbox, and refuse where it is unavailable


class CapabilityError(RuntimeError):
    """Base of every capability-system error."""


class TaskFileError(CapabilityError):
    """A task file is malformed; `field` names the offending key (dotted), or "" for the file."""

    def __init__(self, field: str, message: str, line: int | None = None) -> None:
        self.field = field
        self.message = message
        self.line = line
        text = f"{field}: {message}" if field else message
        super().__init__(f"line {line}: {text}" if line else text)

    def at_line(self, line: int | None) -> TaskFileError:
        """This error (same type) with the task file's line number, when known and not set."""
        if self.line or not line:
            return self
        out = type(self)(self.field, self.message, line)
        out.__cause__ = None
        return out


class NoCapabilityError(TaskFileError):
    """A task file declares no `allowed_resources` (refused unless dispatched as legacy)."""


class BadTaskIdError(CapabilityError):
    """A task id that is not a safe file name (`/`, `..`, control characters, too long)."""


class UnknownTaskError(CapabilityError):
    """No capability snapshot exists for the task id (it was never dispatched)."""


class SnapshotError(CapabilityError):
    """A snapshot file is unreadable or malformed."""


class TamperedError(SnapshotError):
    """A snapshot's hash does not match its content or the audit log's dispatch record."""


class DispatchConflictError(CapabilityError):
    """The task id was already dispatched with a different capability (snapshots never change)."""


class ExpiredError(CapabilityError):
    """The capability's TTL has passed."""


def validate_task_id(task_id: object) -> str:
    """Return the task id when it is a safe file name: `[A-Za-z0-9._-]`, no `..`, not dotted.

    Raises BadTaskIdError otherwise (so `../../etc/x` or `a/b` never reach the file system).
    """
    if not isinstance(task_id, str):
        raise BadTaskIdError(f"task id must be a string, not {type(task_id).__name__}")
    if not task_id:
        raise BadTaskIdError("task id is empty")
    if len(task_id) > MAX_TASK_ID:
        raise BadTaskIdError(f"task id is longer than {MAX_TASK_ID} characters")
    bad = sorted({ch for ch in task_id if ch not in _ID_CHARS})
    if bad:
        raise BadTaskIdError(
            f"task id {task_id!r} has characters other than letters, digits, '.', '_', '-': "
            + " ".join(repr(ch) for ch in bad)
        )
    if ".." in task_id or task_id[0] in ".-":
        raise BadTaskIdError(f"task id {task_id!r} must not start with '.' or '-' or contain '..'")
    return task_id


class ViolationKind(enum.StrEnum):
    """Why a path, command or capability is out of scope."""

    FORBIDDEN = "forbidden"  # matches forbidden_paths (wins over paths)
    NOT_ALLOWED = "not_allowed"  # matches none of paths
    INVALID_PATH = "invalid_path"  # absolute, `..` escape, control characters
    OUTSIDE_REPO = "outside_repo"  # resolves (symlink, absolute) outside the repository
    SYMLINK_TARGET = "symlink_target"  # a symlink whose target is out of scope
    COMMAND = "command"  # a command not on the allow-list
    UNPARSEABLE = "unparseable"  # a command line that cannot be checked safely
    EXPIRED = "expired"
    TAMPERED = "tampered"
    NO_CAPABILITY = "no_capability"
    BINDING = "binding"  # the PR's author or head branch is not one the task is bound to
    QC_FAILED = "qc_failed"  # a finish-task QC command exited non-zero (or could not run)


def _frozen(self: object, name: str, *_: object) -> None:
    raise AttributeError(f"cannot assign to field {name!r} ({type(self).__name__} is immutable)")


class Record:
    """The shared behaviour of the hand-written immutable records (no dataclasses, to keep
    scope-guard's imports cheap): no assignment; equality, hash, repr and pickling by the
    `_fields` in constructor order."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    __setattr__ = _frozen
    __delattr__ = _frozen

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__qualname__}({inner})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._key())


class Violation(Record):
    """One out-of-scope finding: what (`subject`), why (`kind`, `reason`), and the matching glob."""

    __slots__ = ("kind", "pattern", "reason", "subject")
    __match_args__ = _fields = ("kind", "subject", "reason", "pattern")

    kind: ViolationKind
    subject: str
    reason: str
    pattern: str | None

    def __init__(
        self, kind: ViolationKind, subject: str, reason: str, pattern: str | None = None
    ) -> None:
        init = object.__setattr__
        init(self, "kind", kind)
        init(self, "subject", subject)
        init(self, "reason", reason)
        init(self, "pattern", pattern)

    def line(self) -> str:
        """A one-line human report."""
        return f"{self.subject}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (escalation records, audit entries)."""
        out: dict[str, Any] = {
            "kind": self.kind.value,
            "subject": self.subject,
            "reason": self.reason,
        }
        if self.pattern is not None:
            out["pattern"] = self.pattern
        return out


_CAPABILITY_FIELDS = (
    "task_id", "title", "level", "paths", "forbidden_paths", "commands", "merge_policy",
    "ttl_hours", "legacy", "description", "agents", "branches", "qc", "enforcement", "network",
    "hooks_writable",
)  # fmt: skip


class Capability(Record):
    """A task's normalised capability. `legacy` tasks were admitted with `--allow-no-scope`.

    Glob and command lists are sorted and de-duplicated, so two task files that say the
    same thing in a different order give the same capability (and the same snapshot hash).

    `agents` (lower-cased GitHub logins) and `branches` (gitignore-style globs over the PR's
    head branch name) bind the capability to who may use it; `()` means unbound (as before
    these fields existed), and a task file can never give an empty list.
    """

    __match_args__ = _fields = _CAPABILITY_FIELDS

    task_id: str
    title: str
    level: int
    paths: tuple[str, ...]
    forbidden_paths: tuple[str, ...]
    commands: tuple[str, ...]
    merge_policy: str
    ttl_hours: int
    legacy: bool
    description: str
    agents: tuple[str, ...]
    branches: tuple[str, ...]
    qc: tuple[str, ...]  # finish-task's QC commands, in order (each within `commands`)
    enforcement: str  # `scope-guard run`: "kernel", "landlock-only" or "check-only"
    network: bool | tuple[int, ...]  # under `run`: False none, True any, or TCP ports to connect
    hooks_writable: bool  # may write the folders git hooks run from (explicit opt-in)

    def __init__(
        self,
        task_id: str,
        title: str = "",
        level: int = DEFAULT_LEVEL,
        paths: tuple[str, ...] = (),
        forbidden_paths: tuple[str, ...] = (),
        commands: tuple[str, ...] = (),
        merge_policy: str = DEFAULT_MERGE_POLICY,
        ttl_hours: int = DEFAULT_TTL_HOURS,
        legacy: bool = False,
        description: str = "",
        agents: tuple[str, ...] = (),
        branches: tuple[str, ...] = (),
        qc: tuple[str, ...] = (),
        enforcement: str = DEFAULT_ENFORCEMENT,
        network: bool | tuple[int, ...] = False,
        hooks_writable: bool = False,
    ) -> None:
        d = self.__dict__
        d["task_id"] = task_id
        d["title"] = title
        d["level"] = level
        d["paths"] = paths
        d["forbidden_paths"] = forbidden_paths
        d["commands"] = commands
        d["merge_policy"] = merge_policy
        d["ttl_hours"] = ttl_hours
        d["legacy"] = legacy
        d["description"] = description
        d["agents"] = agents
        d["branches"] = branches
        d["qc"] = qc
        d["enforcement"] = enforcement
        d["network"] = network
        d["hooks_writable"] = hooks_writable

    def with_matchers(self, allowed: RegexGlobSet, forbidden: RegexGlobSet) -> Capability:
        """An equal capability whose `allowed`/`forbidden` are the given (stored-regex) matchers.

        Used by scope-guard with the regexes a snapshot stored at dispatch (see
        `capdaemon.capability.snapshot.guard_capability`); the globs must be this capability's.
        """
        if allowed.patterns != self.paths or forbidden.patterns != self.forbidden_paths:
            raise ValueError("matchers do not belong to this capability's globs")
        if allowed.case_insensitive or not forbidden.case_insensitive:
            raise ValueError("allowed globs match case-sensitively, forbidden ones do not")
        twin = type(self)(*self._key())
        twin.__dict__["allowed"] = allowed
        twin.__dict__["forbidden"] = forbidden
        return twin

    @property
    def bound(self) -> bool:
        """True when the capability names the agents or branches that may use it."""
        return bool(self.agents or self.branches)

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form stored in the snapshot.

        `agents`/`branches`/`qc`/`enforcement`/`network`/`hooks_writable` appear only when
        given, so a capability without them has exactly the form (and hash) it had before
        they existed.
        """
        res: dict[str, Any] | None = None
        if not self.legacy:
            res = {
                "paths": list(self.paths),
                "forbidden_paths": list(self.forbidden_paths),
                "commands": list(self.commands),
            }
            if self.agents:
                res["agents"] = list(self.agents)
            if self.branches:
                res["branches"] = list(self.branches)
            if self.qc:
                res["qc"] = list(self.qc)
            if self.enforcement != DEFAULT_ENFORCEMENT:
                res["enforcement"] = self.enforcement
            if self.network is not False:
                res["network"] = self.network if self.network is True else list(self.network)
            if self.hooks_writable:
                res["hooks_writable"] = True
        return {
            "task_id": self.task_id,
            "title": self.title,
            "description": self.description,
            "level": self.level,
            "legacy": self.legacy,
            "allowed_resources": res,
            "merge_policy": self.merge_policy,
            "ttl_hours": self.ttl_hours,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Capability:
        """Rebuild from `to_dict()` output (raises SnapshotError on a malformed shape)."""
        try:
            res = data["allowed_resources"]
            legacy = bool(data["legacy"])
            if legacy != (res is None):
                raise ValueError("legacy flag disagrees with allowed_resources")
            res = res or {}
            return cls(
                task_id=str(data["task_id"]),
                title=str(data.get("title", "")),
                description=str(data.get("description", "")),
                level=int(data["level"]),
                paths=tuple(str(p) for p in res.get("paths", ())),
                forbidden_paths=tuple(str(p) for p in res.get("forbidden_paths", ())),
                commands=tuple(str(c) for c in res.get("commands", ())),
                merge_policy=str(data["merge_policy"]),
                ttl_hours=int(data["ttl_hours"]),
                legacy=legacy,
                agents=_binding_list(res, "agents"),
                branches=_binding_list(res, "branches"),
                qc=tuple(str(c) for c in res.get("qc", ())),
                enforcement=_enforcement(res),
                network=_network(res),
                hooks_writable=_hooks_writable(res),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SnapshotError(f"malformed capability in snapshot: {exc}") from exc

    @cached_property
    def allowed(self) -> GlobSet | RegexGlobSet:
        """The allow-list, matched case-sensitively (an allowed glob is never widened by case)."""
        return GlobSet(self.paths, case_insensitive=False)

    @cached_property
    def forbidden(self) -> GlobSet | RegexGlobSet:
        """The deny-list, matched case-insensitively and with look-alike folding."""
        return GlobSet(self.forbidden_paths, case_insensitive=True)

    @cached_property
    def branch_globs(self) -> GlobSet:
        """The head branches the capability is bound to, matched case-sensitively, no folding."""
        return GlobSet(self.branches, case_insensitive=False)


def _binding_list(res: dict[str, Any], key: str) -> tuple[str, ...]:
    """A snapshot's optional `agents`/`branches`: absent → () (unbound); present → non-empty
    strings (an empty or odd list is malformed: it must not silently unbind the task)."""
    if key not in res:
        return ()
    value = res[key]
    if not isinstance(value, list) or not value or not all(isinstance(x, str) for x in value):
        raise ValueError(f"{key} must be a non-empty list of strings")
    return tuple(value)


def _enforcement(res: dict[str, Any]) -> str:
    value = res.get("enforcement", DEFAULT_ENFORCEMENT)
    if value not in ENFORCEMENTS:
        raise ValueError(f"enforcement must be one of {', '.join(ENFORCEMENTS)}")
    return str(value)


def _hooks_writable(res: dict[str, Any]) -> bool:
    value = res.get("hooks_writable", False)
    if not isinstance(value, bool):
        raise ValueError("hooks_writable must be true or false")
    return value


def _network(res: dict[str, Any]) -> bool | tuple[int, ...]:
    """A snapshot's optional `network`: absent/False none, True any, a list of TCP ports."""
    value = res.get("network", False)
    if isinstance(value, bool):
        return value
    if (
        not isinstance(value, list)
        or not value
        or not all(type(p) is int and 0 < p < 65536 for p in value)
    ):
        raise ValueError("network must be true, false or a non-empty list of TCP ports")
    return tuple(value)


class CapabilitySnapshot(Record):
    """The immutable record written at dispatch: capability, times and the hash of it all.

    `path` is where it was read from and `raw` the JSON body; neither is hashed, and `raw`
    takes no part in equality.
    """

    __slots__ = ("capability", "dispatched_at", "expires_at", "path", "raw", "sha256")
    __match_args__ = ("capability", "dispatched_at", "expires_at", "sha256", "path", "raw")
    _fields = ("capability", "dispatched_at", "expires_at", "sha256", "path")  # not `raw`

    capability: Capability
    dispatched_at: datetime
    expires_at: datetime
    sha256: str
    path: str
    raw: dict[str, Any]

    def __init__(
        self,
        capability: Capability,
        dispatched_at: datetime,
        expires_at: datetime,
        sha256: str,
        path: str = "",
        raw: dict[str, Any] | None = None,
    ) -> None:
        init = object.__setattr__
        init(self, "capability", capability)
        init(self, "dispatched_at", dispatched_at)
        init(self, "expires_at", expires_at)
        init(self, "sha256", sha256)
        init(self, "path", path)
        init(self, "raw", {} if raw is None else raw)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (*self._key(), self.raw))

    @property
    def task_id(self) -> str:
        """The task id."""
        return self.capability.task_id

    @property
    def legacy(self) -> bool:
        """True when the task was dispatched without a scope (`--allow-no-scope`)."""
        return self.capability.legacy

    def is_expired(self, now: datetime) -> bool:
        """True when `now` (aware) is at or after the expiry."""
        return now >= self.expires_at

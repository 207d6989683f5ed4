"""Record before act: an irreversible write is recorded before it is made and its outcome after;
a write whose outcome is unknown keeps its recorded intent for the next tick to reconcile."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from capdaemon.audit import AuditLog
from capdaemon.forge.errors import (
    BaseMoved,
    Forbidden,
    ForgeError,
    HeadMoved,
    Invalid,
    NotFound,
    NotMergeable,
    RevertConflict,
    TickAbort,
)

T = TypeVar("T")

# GitHub answered and refused (or the forge found the write cannot be made): nothing was
# written, the outcome is known ("failed") and the intent is dropped
REFUSED: tuple[type[ForgeError], ...] = (
    BaseMoved,
    HeadMoved,
    NotMergeable,
    Forbidden,
    NotFound,
    Invalid,
)
_REASONS: tuple[tuple[type[ForgeError], str], ...] = (
    (BaseMoved, "base_moved"),
    (HeadMoved, "head_moved"),
    (RevertConflict, "revert_conflict"),
    (NotMergeable, "not_mergeable"),
)


def failure_reason(exc: BaseException) -> str:
    """The `reason` an outcome record gives for `exc`."""
    for kind, name in _REASONS:
        if isinstance(exc, kind):
            return name
    return type(exc).__name__


def _nothing() -> None:
    return None


def no_crash(point: str) -> None:
    """No test hook: never dies."""
    return None


@dataclass
class Intent:
    """One irreversible write, recorded before it is made (see `attempt`).

    `keep` stores the intent durably and `drop` forgets it (a PR's `pending`; nothing when the
    intent already lives in durable state until the write is done, as a probe watch does);
    `crash` is the test hook that dies like kill -9 at "audit:<action>", "act:<action>" and
    "done:<action>". `audit` holds the fields every record of the write carries, "action" first.
    """

    log: AuditLog
    audit: Mapping[str, Any]
    now: datetime
    keep: Callable[[], None] = _nothing
    drop: Callable[[], None] = _nothing
    crash: Callable[[str], None] = no_crash
    # a refusal recorded under its own status instead of "failed" (e.g. a revert conflict)
    statuses: Mapping[type[ForgeError], str] = field(default_factory=dict)

    @property
    def action(self) -> str:
        """What is written ("merge", "close", "revert")."""
        return str(self.audit["action"])

    def attempt(self, write: Callable[[], T], **attempted: Any) -> T:
        """Keep the intent, record "attempted" (with `attempted`), then make `write`.

        A refusal (REFUSED: nothing was written) is recorded "failed" and the intent dropped;
        no answer (another ForgeError, or a TickAbort such as a rate limit) is recorded
        "unknown" and the intent kept, so the next tick finds out what happened before
        anything else is tried. The error is raised again in both cases."""
        self.keep()
        self.log.append({**self.audit, "status": "attempted", **attempted}, now=self.now)
        self.crash(f"audit:{self.action}")
        try:
            result = write()
        except REFUSED as exc:
            status = next((s for k, s in self.statuses.items() if isinstance(exc, k)), "failed")
            self._outcome(status, exc)
            self.drop()
            raise
        except (ForgeError, TickAbort) as exc:
            self._outcome("unknown", exc)
            self.keep()
            raise
        self.crash(f"act:{self.action}")
        return result

    def _outcome(self, status: str, exc: BaseException) -> None:
        self.log.append(
            {
                **self.audit,
                "status": status,
                "reason": failure_reason(exc),
                "error": str(exc)[:300],
            },
            now=self.now,
        )

    def done(self, **fields: Any) -> None:
        """Record that the write went through (the intent is kept until `settle`)."""
        self.log.append({**self.audit, "status": "done", **fields}, now=self.now)
        self.crash(f"done:{self.action}")

    def settle(self) -> None:
        """Drop the intent: its outcome is known and recorded."""
        self.drop()

"""Record before act: an irreversible write's intent is saved before it is made (Intent), and
what the actions log already says about one a crash left pending (step 0's look-up)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from capdaemon.audit import read_records
from capdaemon.daemon.botstate import PRRecord
from capdaemon.daemon.context import TickDeps
from capdaemon.forge.errors import (
    BaseMoved,
    Forbidden,
    ForgeError,
    HeadMoved,
    Invalid,
    NotFound,
    NotMergeable,
    TickAbort,
)
from capdaemon.timefmt import utc_iso

T = TypeVar("T")

# statuses that close an "attempted" record; "unknown" does not (the outcome is still open)
OUTCOMES = frozenset({"done", "failed", "not_done", "merged_by_other"})


def recorded_outcome(
    actions_path: Path, ref: str, op: str, head_sha: str | None
) -> dict[str, Any] | None:
    """The outcome record after the newest "attempted" record of `op` on `ref` at `head_sha`.

    None when there is no such outcome (the crash came before it was written). Read only
    after a crash left an action pending, so a full read of the log is fine here.
    """
    outcome: dict[str, Any] | None = None
    for rec in read_records(actions_path):
        if rec.get("action") != op or rec.get("pr") != ref or rec.get("head_sha") != head_sha:
            continue
        status = rec.get("status")
        if status == "attempted":
            outcome = None
        elif status in OUTCOMES:
            outcome = rec
    return outcome


# GitHub answered and refused: nothing was written, the intent is dropped ("failed")
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
    (NotMergeable, "not_mergeable"),
)


def failure_reason(exc: BaseException) -> str:
    """The `reason` an outcome record gives for `exc`."""
    for kind, name in _REASONS:
        if isinstance(exc, kind):
            return name
    return type(exc).__name__


@dataclass
class Intent:
    """One irreversible write on a PR (merge, close), recorded before it is made.

    `attempt` stores the intent as the record's `pending` (saved) and writes the "attempted"
    record before the write; a refusal (REFUSED: nothing was written) is recorded "failed" and
    drops the intent; no answer (another ForgeError, a TickAbort such as a rate limit) is
    recorded "unknown" and keeps it, so step 0 of the next tick reads the PR and records
    done / not_done before anything else is tried; the error is raised again in both cases.
    After a write that went through the caller records "done" (`done`), updates the record and
    drops the intent (`settle`). Every read and write of `rec.pending` for an action is here.
    """

    deps: TickDeps
    rec: PRRecord
    op: str
    now: datetime
    head_sha: str
    extra: Mapping[str, Any] = field(default_factory=dict)  # kept in pending and every record

    @property
    def audit(self) -> dict[str, Any]:
        """The fields every record of this action carries."""
        return {"action": self.op, "pr": self.rec.ref, "head_sha": self.head_sha, **self.extra}

    def attempt(self, write: Callable[[], T], **attempted: Any) -> T:
        """Record the intent (pending, then "attempted" with `attempted`), then make `write`."""
        deps, rec = self.deps, self.rec
        rec.pending = {
            "op": self.op,
            "head_sha": self.head_sha,
            **self.extra,
            "at": utc_iso(self.now),
        }
        deps.prs.save(rec)
        deps.actions_log.append({**self.audit, "status": "attempted", **attempted}, now=self.now)
        deps.crash(f"audit:{self.op}")
        try:
            result = write()
        except REFUSED as exc:
            self._outcome("failed", exc)
            self.settle()
            raise
        except (ForgeError, TickAbort) as exc:
            self._outcome("unknown", exc)
            deps.prs.save(rec)  # the intent stays: step 0 of the next tick reconciles it
            raise
        deps.crash(f"act:{self.op}")
        return result

    def _outcome(self, status: str, exc: BaseException) -> None:
        self.deps.actions_log.append(
            {
                **self.audit,
                "status": status,
                "reason": failure_reason(exc),
                "error": str(exc)[:300],
            },
            now=self.now,
        )

    def done(self, **fields: Any) -> None:
        """Record that the write went through (the intent is still kept: `settle` drops it)."""
        self.deps.actions_log.append({**self.audit, "status": "done", **fields}, now=self.now)
        self.deps.crash(f"done:{self.op}")

    def settle(self) -> None:
        """Drop the intent: its outcome is known and recorded."""
        settle(self.deps, self.rec)


def settle(deps: TickDeps, rec: PRRecord) -> None:
    """Drop a PR's recorded intent (its outcome is known and recorded) and save the record."""
    rec.pending = None
    deps.prs.save(rec)

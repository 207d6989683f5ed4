"""A PR's pending write: its intent kept in the record (pr_intent), and what the actions log
already says about one a crash or an unknown outcome left pending (step 0's look-up)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capdaemon.audit import read_records
from capdaemon.daemon.core.context import Tick, TickDeps
from capdaemon.daemon.merging.intent import Intent
from capdaemon.stores.botstate import PRRecord
from capdaemon.stores.prrecord import Pending, PendingOp
from capdaemon.timefmt import utc_iso

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


def pr_intent(t: Tick, rec: PRRecord, op: str, head_sha: str, **extra: Any) -> Intent:
    """An irreversible write on a PR (merge, close) whose intent is the record's `pending`
    (with `extra`, which every record of the write carries too): step 0 of the next tick
    reconciles one left there by a crash or an unknown outcome. The intent changes the PR's
    current record in the store (a holder of `rec` reads it again there)."""
    deps, now, ref = t.deps, t.now, rec.ref
    pending = Pending(PendingOp(op), head_sha, utc_iso(now), base_ref=extra.get("base_ref"))

    def keep() -> None:
        deps.prs.change(deps.prs.records[ref], pending=pending)

    def drop() -> None:
        settle(deps, ref)

    audit = {"action": op, "pr": ref, "head_sha": head_sha, **extra}
    return Intent(deps.actions_log, audit, now, keep=keep, drop=drop, crash=deps.crash)


def settle(deps: TickDeps, ref: str, **fields: Any) -> PRRecord:
    """Drop a PR's recorded intent (its outcome is known and recorded), with `fields` changed
    too, in one durable change of its current record; returns the new record."""
    return deps.prs.change(deps.prs.records[ref], pending=None, **fields)

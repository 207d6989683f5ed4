"""What the actions log already says about an action a crash left pending (step 0's look-up)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capdaemon.audit import read_records

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

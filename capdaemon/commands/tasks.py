"""`capdaemon tasks`: list capability snapshots and their state (active/expired/legacy/tampered)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from capdaemon.commands._common import (
    add_state_arg,
    add_unused_config_arg,
    error,
    printable,
    state_dir,
    state_dir_problem,
    unused_config_problem,
)
from capdaemon.stores.registry import list_tasks


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    add_state_arg(parser)
    add_unused_config_arg(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def run(args: argparse.Namespace) -> int:
    """Print the snapshots; 0 (even when some are tampered: the listing says so); 2 when the
    state directory does not exist."""
    sdir = state_dir(args)
    problem = unused_config_problem(args) or state_dir_problem(sdir)
    if problem:
        error("tasks", problem)
        return 2
    now = datetime.now(UTC)
    rows = list_tasks(sdir, now)
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no dispatched tasks")
        return 0
    table: list[tuple[str, ...]] = [
        ("TASK", "STATE", "LEVEL", "POLICY", "EXPIRES", "TITLE OR PROBLEM")
    ]
    for r in rows:
        d = r.to_dict()
        if r.snapshot is None:
            table.append((r.task_id, r.state, "-", "-", "-", r.reason))
        else:
            table.append(
                (
                    r.task_id,
                    r.state,
                    str(d["level"]),
                    str(d["merge_policy"]),
                    str(d["expires_at"]),
                    str(d["title"] or ""),
                )
            )
    table = [tuple(printable(cell) for cell in row) for row in table]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for row in table:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
        print(("  ".join([*cells, row[5]])).rstrip())
    return 0

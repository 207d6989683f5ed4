"""`capdaemon tasks`: list capability snapshots and their state (active/expired/legacy/tampered)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from capdaemon.commands._common import add_state_arg, error, state_dir, state_dir_problem


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    add_state_arg(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def run(args: argparse.Namespace) -> int:
    """Print the snapshots; 0 (even when some are tampered: the listing says so); 2 when the
    state directory does not exist."""
    from capdaemon.stores.registry import list_tasks

    sdir = state_dir(args)
    problem = state_dir_problem(sdir)
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
    width = max(len(r.task_id) for r in rows)
    for r in rows:
        d = r.to_dict()
        if r.snapshot is None:
            detail = r.reason
        else:
            detail = f"level {d['level']}  {d['merge_policy']:<6}  expires {d['expires_at']}" + (
                f"  {d['title']}" if d["title"] else ""
            )
        print(f"{r.task_id.ljust(width)}  {r.state:<8}  {detail}")
    return 0

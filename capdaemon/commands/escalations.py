"""`capdaemon escalations`: list open escalation records (scope violations waiting for an owner)."""

from __future__ import annotations

import argparse
import json

from capdaemon.commands._common import (
    add_state_arg,
    add_unused_config_arg,
    error,
    state_dir,
    state_dir_problem,
    unused_config_problem,
)
from capdaemon.state import StateError
from capdaemon.stores.escalations import list_escalations

# `capdaemon escalations resolve ID --by LOGIN --reason TEXT`: close one, with who and why.
SUBCOMMANDS = {
    "resolve": (
        "capdaemon.commands.escalation_resolve",
        "resolve an escalation: record who and why (audited), close its owner issue",
    )
}


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    add_state_arg(parser)
    add_unused_config_arg(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument("--all", action="store_true", help="include resolved records")


def run(args: argparse.Namespace) -> int:
    """Print the records; 0, or 1 when a record is corrupt, 2 when the state directory does
    not exist."""
    problem = unused_config_problem(args) or state_dir_problem(state_dir(args))
    if problem:
        error("escalations", problem)
        return 2
    try:
        recs = list_escalations(state_dir(args), include_resolved=args.all)
    except StateError as exc:
        error("escalations", str(exc))
        return 1
    if args.json:
        print(json.dumps([r.to_dict() for r in recs], indent=2, ensure_ascii=False))
        return 0
    if not recs:
        print("no escalations" if args.all else "no open escalations")
        return 0
    for r in recs:
        state = "open"
        if r.resolved:
            by, why = r.resolved.get("by", "?"), r.resolved.get("note", "")
            state = f"resolved by {by}" + (f": {why}" if why else "")
        elif r.notified:
            state = f"notified {r.issue_url or ''}".strip()
        print(f"{r.id}  task {r.task}  {r.layer}  {state}")
        for what, why in zip(r.what, r.why, strict=False):
            print(f"    {what}: {why}" if not why.startswith(what) else f"    {why}")
    return 0

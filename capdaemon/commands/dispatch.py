"""`capdaemon dispatch TASKFILE`: validate a task, snapshot its capability, audit it (layer 1)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from capdaemon.capability.model import (
    CapabilityError,
    DispatchConflictError,
    NoCapabilityError,
    TaskFileError,
)
from capdaemon.commands._common import (
    add_state_arg,
    add_unused_config_arg,
    error,
    state_dir,
    unused_config_problem,
)
from capdaemon.gitdiff import GitError, resolve
from capdaemon.state import StateError
from capdaemon.stores.registry import dispatch
from capdaemon.stores.taskfiles import load_task_file

PROG = "dispatch"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("taskfile", metavar="TASKFILE", help="the task's YAML file")
    parser.add_argument(
        "--allow-no-scope",
        action="store_true",
        help="admit a legacy task that declares no allowed_resources (loudly, and audited)",
    )
    parser.add_argument(
        "--repo",
        metavar="DIR",
        help="the task's git checkout: its --base commit is recorded now, and finish-task "
        "later diffs the branch against that commit (not a branch the agent can move)",
    )
    parser.add_argument(
        "--base", metavar="REF", help="the branch the task starts from (default: main)"
    )
    add_state_arg(parser)
    add_unused_config_arg(parser)


def _base(args: argparse.Namespace) -> tuple[str, str] | None:
    """(--base, its commit sha in --repo) or None without --repo; GitError when unreadable."""
    if args.repo is None:
        if args.base is not None:
            raise GitError("--base needs --repo (the checkout to read the base commit from)")
        return None
    name = args.base or "main"
    return name, resolve(Path(args.repo), name)


def run(args: argparse.Namespace) -> int:
    """Dispatch one task; 0 on success or no-op, 1 when refused, 2 on a malformed task file."""
    problem = unused_config_problem(args)
    if problem:
        error(PROG, problem)
        return 2
    taskfile = Path(args.taskfile)
    try:
        cap = load_task_file(taskfile, allow_no_scope=args.allow_no_scope)
    except NoCapabilityError as exc:
        error(PROG, f"REFUSED: {taskfile}: {exc}")
        return 1
    except TaskFileError as exc:  # bad input: exit 2, as every other command
        error(PROG, f"{taskfile}: {exc}")
        return 2
    if cap.legacy:
        bar = "!" * 72
        print(
            f"{bar}\ncapdaemon dispatch: WARNING: task {cap.task_id!r} declares no capability "
            "and is admitted as LEGACY (--allow-no-scope).\n"
            "  Nothing limits the paths or commands it may touch; "
            "the dispatch is audited as legacy.\n"
            f"{bar}",
            file=sys.stderr,
        )
    try:
        base = _base(args)
    except GitError as exc:
        error(PROG, f"cannot record the base: {exc}")
        return 2
    now = datetime.now(UTC)
    try:
        result = dispatch(
            state_dir(args),
            cap,
            now,
            source=str(taskfile),
            base=base,
            base_repo=str(Path(args.repo).resolve()) if base else None,
        )
    except DispatchConflictError as exc:
        error(PROG, f"REFUSED: {exc}")
        return 1
    except (CapabilityError, StateError) as exc:
        error(PROG, f"REFUSED: {exc}")
        return 1
    snap = result.snapshot
    if result.outcome == "unchanged":
        print(f"task {cap.task_id}: already dispatched with the same capability; nothing written")
    elif result.outcome == "recorded":
        print(f"task {cap.task_id}: snapshot existed without its audit record; record written")
    else:
        kind = "legacy (no scope)" if cap.legacy else f"level {cap.level}, {cap.merge_policy}"
        on = f"; base {base[0]} at {base[1][:12]}" if base else ""
        print(
            f"task {cap.task_id}: dispatched ({kind}); sha256 {snap.sha256}; "
            f"expires {snap.raw['expires_at']}{on}"
        )
    return 0

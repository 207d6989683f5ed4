"""`capdaemon scope-guard --task ID PATH... | --command CMD`: the check before every edit (layer 2).

`capdaemon scope-guard run --task ID -- CMD ARGS...` is `capdaemon.commands.scope_run`.

Kept light: no YAML, no jsonschema, no structlog, no config; escalation and audit
modules are imported only when something is out of scope.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from capdaemon.commands._common import (
    add_state_arg,
    add_unused_config_arg,
    error,
    state_dir,
    unused_config_problem,
)
from capdaemon.hookdirs import hook_violations  # what `run` loads first anyway (fspaths)

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from capdaemon.capability.model import CapabilitySnapshot, Violation

PROG = "scope-guard"
# `capdaemon scope-guard run --task ID -- CMD ARGS...`: the check, then CMD under the kernel.
SUBCOMMANDS = {"run": ("capdaemon.commands.scope_run", "check a command, then run it confined")}


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("--task", required=True, metavar="ID", help="the dispatched task id")
    add_state_arg(parser)
    add_unused_config_arg(parser)
    parser.add_argument(
        "--repo",
        metavar="DIR",
        help="a folder of the task's git checkout (default: cwd); paths are read from the "
        "checkout's root",
    )
    parser.add_argument(
        "--command",
        action="append",
        default=[],
        dest="commands",
        metavar="CMD",
        help="a command line to check (repeatable)",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="paths about to be modified")


def run(args: argparse.Namespace) -> int:
    """0 in scope; 1 out of scope (one line each, escalation record); 2 bad usage."""
    # lazily: only what this run needs loads (scope-guard runs before every edit)
    from capdaemon.capability.fspaths import (
        NotACheckoutError,
        check_named_path,
        here_in,
        repo_root,
        word_checker,
    )
    from capdaemon.capability.model import (
        BadTaskIdError,
        validate_task_id,
    )
    from capdaemon.capability.snapshot import guard_capability

    if not args.paths and not args.commands:
        error(PROG, "give at least one PATH or --command CMD")
        return 2
    problem = unused_config_problem(args)
    if problem:
        error(PROG, problem)
        return 2
    try:
        task_id = validate_task_id(args.task)
    except BadTaskIdError as exc:
        error(PROG, str(exc))
        return 2
    try:  # every path is read from the repository root, never from the current directory
        repo = repo_root(Path(args.repo) if args.repo else Path.cwd())
    except NotACheckoutError as exc:
        error(PROG, f"refused: {'--repo ' if args.repo else ''}{exc}")
        return 2
    now = datetime.now(UTC)
    state = state_dir(args)
    snap = snapshot_or_refuse(state, task_id, now)
    if isinstance(snap, int):
        return snap

    # lazily: only what this run needs loads (scope-guard runs before every edit)
    from capdaemon.capability.scope import check_command, expiry_violation

    violations: list[Violation] = []
    exp = expiry_violation(snap, now)
    if exp is not None:
        violations.append(exp)
    if snap.legacy:
        print(
            f"capdaemon scope-guard: WARNING: task {task_id} is LEGACY (dispatched with "
            "--allow-no-scope): paths and commands are not limited",
            file=sys.stderr,
        )
    cap = guard_capability(snap)  # stored glob regexes: no pathspec import on this path
    here = here_in(repo, Path.cwd())  # a relative path must pass from here as well
    for p in args.paths:
        violations.extend(check_named_path(cap, repo, p, here))
    violations.extend(hook_violations(cap, repo, list(args.paths), here))
    words = word_checker(cap, repo, here)
    for line in args.commands:
        violations.extend(check_command(snap, line, now, paths=words))
    unique: dict[tuple[str, str, str], Violation] = {}
    for v in violations:
        unique.setdefault((v.kind.value, v.subject, v.reason), v)
    if unique:
        return _refuse(state, task_id, list(unique.values()), now)
    return 0


def snapshot_or_refuse(state: Path, task_id: str, now: datetime) -> CapabilitySnapshot | int:
    """The task's verified capability snapshot, or the exit status of refusing (an unknown or
    tampered task: one line, escalation record, audit entry)."""
    # lazily: only what this run needs loads (scope-guard runs before every edit)
    from capdaemon.stores.capabilities import snapshot_or_violation

    snap, violations = snapshot_or_violation(state, task_id)
    return _refuse(state, task_id, violations, now) if snap is None else snap


def _refuse(state: Path, task_id: str, violations: list[Violation], now: datetime) -> int:
    """Print one line per violation, write the escalation record and the audit entry; 1."""
    # lazily: only what this run needs loads (scope-guard runs before every edit)
    from capdaemon.audit import AuditLog
    from capdaemon.filenames import ACTIONS_LOG
    from capdaemon.stores.escalations import write_escalation

    for v in violations:
        print(f"capdaemon scope-guard: OUT OF SCOPE: {v.line()}", file=sys.stderr)
    try:
        rec = write_escalation(state, task_id, violations, now, layer=PROG)
        AuditLog(state / ACTIONS_LOG).append(
            {
                "action": "scope_violation",
                "layer": PROG,
                "task_id": task_id,
                "escalation": rec.id,
                "violations": [v.to_dict() for v in violations],
            },
            now=now,
        )
        print(f"capdaemon scope-guard: escalated: {rec.id}", file=sys.stderr)
    except Exception as exc:  # the refusal stands even when the record cannot be written
        error(PROG, f"could not write the escalation record: {exc}")
    return 1

"""`capdaemon finish-task --task ID`: check every path a task branch changed (layer 3)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capdaemon.capability.cli_support import add_state_arg, err, state_dir

PROG = "finish-task"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("--task", required=True, metavar="ID", help="the dispatched task id")
    parser.add_argument("--repo", metavar="DIR", help="the task's git work tree (default: cwd)")
    parser.add_argument("--base", default="main", help="base branch (default: main)")
    parser.add_argument("--head", default="HEAD", help="task branch head (default: HEAD)")
    add_state_arg(parser)


def run(args: argparse.Namespace) -> int:
    """0 when every change is in scope; 1 on a violation (escalated, audited); 2 bad usage."""
    from capdaemon.audit import ACTIONS_LOG, AuditLog
    from capdaemon.capability.escalation import write_escalation
    from capdaemon.capability.model import (
        BadTaskIdError,
        SnapshotError,
        UnknownTaskError,
        Violation,
        ViolationKind,
        validate_task_id,
    )
    from capdaemon.capability.scope import check_file_changes
    from capdaemon.capability.snapshot import load_snapshot
    from capdaemon.gitdiff import GitError, diff_range, resolve
    from capdaemon.model import MODE_SYMLINK, FileStatus

    try:
        task_id = validate_task_id(args.task)
    except BadTaskIdError as exc:
        err(PROG, str(exc))
        return 2
    repo = Path(args.repo) if args.repo else Path.cwd()
    state = state_dir(args)
    now = datetime.now(UTC)
    entry: dict[str, Any] = {"task_id": task_id, "layer": PROG, "base": args.base}

    violations: list[Violation] = []
    changes = []
    snap = None
    try:
        snap = load_snapshot(state, task_id)
    except UnknownTaskError as exc:
        violations.append(Violation(ViolationKind.NO_CAPABILITY, task_id, str(exc)))
    except SnapshotError as exc:
        violations.append(Violation(ViolationKind.TAMPERED, task_id, f"refused: {exc}"))

    try:
        head_sha = resolve(repo, args.head)
        entry["head_sha"] = head_sha
        if snap is not None:
            changes = diff_range(repo, args.base, head_sha, patches=False)
            links = {
                c.path
                for c in changes
                if c.new_mode == MODE_SYMLINK and c.status is not FileStatus.REMOVED
            }
            if links:  # second pass only when symlinks changed: read their targets
                changes = diff_range(
                    repo, args.base, head_sha, patches=False, contents_for=links.__contains__
                )
    except GitError as exc:
        if snap is not None:
            err(PROG, f"cannot read the task branch: {exc}")
            return 2
        # no usable capability: the refusal below stands even without the branch

    if snap is not None:
        if snap.legacy:
            print(
                f"capdaemon finish-task: WARNING: task {task_id} is LEGACY (dispatched with "
                "--allow-no-scope): its changes are not limited by a scope",
                file=sys.stderr,
            )
            entry["legacy"] = True
        violations.extend(check_file_changes(snap, changes, now))
    entry["files"] = len(changes)
    log = AuditLog(state / ACTIONS_LOG)
    if violations:
        for v in violations:
            print(f"capdaemon finish-task: OUT OF SCOPE: {v.line()}", file=sys.stderr)
        rec = write_escalation(
            state,
            task_id,
            violations,
            now,
            layer=PROG,
            extra={"base": args.base, "head_sha": entry.get("head_sha"), "repo": str(repo)},
        )
        log.append(
            {
                **entry,
                "action": "scope_violation",
                "escalation": rec.id,
                "violations": [v.to_dict() for v in violations],
            },
            now=now,
        )
        print(
            f"capdaemon finish-task: BLOCKED: {len(violations)} violation(s); escalated: {rec.id}",
            file=sys.stderr,
        )
        return 1
    log.append({**entry, "action": "finish_task", "result": "pass"}, now=now)
    print(
        f"task {task_id}: {len(changes)} changed path(s) in scope "
        f"({args.base}...{entry['head_sha'][:12]})"
    )
    return 0

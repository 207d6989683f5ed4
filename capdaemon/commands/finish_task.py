"""`capdaemon finish-task --task ID`: QC, then check every path a task branch changed (layer 3).

On any failure: exit 1, an `.escalate` record, and the owners alerted at once through the
notification channels when configured. The output says what passed, what failed, who was told.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.commands._common import add_state_arg, error, state_dir

if TYPE_CHECKING:
    from capdaemon.capability.model import Violation
    from capdaemon.config import Config

PROG = "finish-task"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("--task", required=True, metavar="ID", help="the dispatched task id")
    parser.add_argument("--repo", metavar="DIR", help="the task's git work tree (default: cwd)")
    parser.add_argument("--base", default="main", help="base branch (default: main)")
    parser.add_argument("--head", default="HEAD", help="task branch head (default: HEAD)")
    parser.add_argument(
        "--qc",
        action="append",
        metavar="CMD",
        help="a QC command to run first (repeatable; replaces the capability's qc: list); "
        "each must be within the capability's commands",
    )
    parser.add_argument(
        "--qc-timeout", type=float, default=1800.0, metavar="S", help="per QC command (1800)"
    )
    add_state_arg(parser)
    from capdaemon.commands._common import add_config_arg

    add_config_arg(parser)  # for the notification channels


def run(args: argparse.Namespace) -> int:
    """0 when every change is in scope; 1 on a violation (escalated, audited); 2 bad usage."""
    from capdaemon.audit import ACTIONS_LOG, AuditLog
    from capdaemon.capability.model import (
        BadTaskIdError,
        SnapshotError,
        UnknownTaskError,
        Violation,
        ViolationKind,
        validate_task_id,
    )
    from capdaemon.capability.scope import check_file_changes
    from capdaemon.gitdiff import GitError, diff_range, resolve
    from capdaemon.model import MODE_SYMLINK, FileStatus
    from capdaemon.stores.capabilities import load_snapshot
    from capdaemon.stores.escalations import write_escalation

    try:
        task_id = validate_task_id(args.task)
    except BadTaskIdError as exc:
        error(PROG, str(exc))
        return 2
    from capdaemon.commands._common import CLIError, load_config_from_args

    try:
        config = load_config_from_args(args)
    except CLIError as exc:
        error(PROG, str(exc))
        return 2
    if args.qc_timeout <= 0:
        error(PROG, f"--qc-timeout must be greater than 0, got {args.qc_timeout:g}")
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
            error(PROG, f"cannot read the task branch: {exc}")
            return 2
        # no usable capability: the refusal below stands even without the branch

    qc_results = []
    if snap is not None and "head_sha" in entry:
        from capdaemon.commands.qc import run_qc

        commands = list(args.qc) if args.qc else list(snap.capability.qc)
        qc_results = run_qc(snap, commands, repo, now, timeout=args.qc_timeout)
        for r in qc_results:
            print(r.line(), file=sys.stdout if r.status == "passed" else sys.stderr)
            if r.status == "failed" and r.output:
                print("\n".join(f"    {x}" for x in r.output.splitlines()), file=sys.stderr)
            if r.violation is not None:
                violations.append(r.violation)
        entry["qc"] = [{"command": r.command, "status": r.status, "detail": r.detail}
                       for r in qc_results]  # fmt: skip
    if snap is not None:
        if snap.legacy:
            print(
                f"capdaemon finish-task: WARNING: task {task_id} is LEGACY (dispatched with "
                "--allow-no-scope): its changes are not limited by a scope",
                file=sys.stderr,
            )
            entry["legacy"] = True
        scope = check_file_changes(snap, changes, now)
        violations.extend(scope)
        print(
            f"scope {'FAILED' if scope else 'passed'}: {len(changes)} changed path(s), "
            f"{len(scope)} out of scope ({args.base}...{str(entry.get('head_sha', '?'))[:12]})",
            file=sys.stderr if scope else sys.stdout,
        )
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
        _alert(config, state, task_id, rec.id, violations, now)
        return 1
    log.append({**entry, "action": "finish_task", "result": "pass"}, now=now)
    print(
        f"task {task_id}: {len(qc_results)} QC command(s) passed, {len(changes)} changed "
        f"path(s) in scope ({args.base}...{entry['head_sha'][:12]})"
    )
    return 0


def _alert(
    config: Config,
    state: Path,
    task_id: str,
    esc_id: str,
    violations: list[Violation],
    now: datetime,
) -> None:
    """Tell the owners now through the notification channels; say who was told."""
    from capdaemon.channels.notify import Notice, Notifier, channel_names

    urls = config.channels.notifications.urls
    if not urls:
        print(
            "told: nobody yet (no notification channels configured); the daemon opens an "
            "escalation issue at its next tick",
            file=sys.stderr,
        )
        return
    lines = "\n".join(f"- {v.line()}" for v in violations[:20])
    notice = Notice(
        f"escalation:{esc_id}",
        f"finish-task blocked task {task_id}",
        f"Task {task_id} was blocked by finish-task ({len(violations)} finding(s)); "
        f"escalation {esc_id}.\n{lines}",
    )
    try:
        told, failed = Notifier(config.channels.notifications, state).alert(notice, now)
    except Exception as exc:  # the block and the record stand; the daemon retries the alert
        print(f"told: nobody (notification failed: {type(exc).__name__})", file=sys.stderr)
        return
    names = channel_names(urls)
    if told:
        print(f"told: {', '.join(names[c] for c in told)}", file=sys.stderr)
    if failed:
        print(
            f"not reached (retried by the daemon's next tick): "
            f"{', '.join(names.get(c, c) for c in failed)}",
            file=sys.stderr,
        )

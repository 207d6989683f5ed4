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

from capdaemon.audit import AuditLog
from capdaemon.capability.fspaths import NotACheckoutError, repo_root
from capdaemon.capability.model import (
    HOOK_FOLDERS,
    BadTaskIdError,
    Violation,
    validate_task_id,
)
from capdaemon.capability.scope import check_file_changes
from capdaemon.channels.notify import Notice, Notifier, channel_names
from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    error,
    load_config_from_args,
    state_dir,
)
from capdaemon.commands.finish_pr import add_args as add_pr_args
from capdaemon.commands.finish_pr import open_pr
from capdaemon.commands.qc import run_qc
from capdaemon.filenames import ACTIONS_LOG
from capdaemon.gitdiff import GitError, diff_range, resolve
from capdaemon.hookdirs import hook_violations
from capdaemon.model import MODE_SYMLINK, FileStatus
from capdaemon.stores.capabilities import snapshot_or_violation
from capdaemon.stores.escalations import write_escalation
from capdaemon.stores.registry import recorded_base, recorded_base_repo

if TYPE_CHECKING:
    from capdaemon.capability.model import CapabilitySnapshot
    from capdaemon.commands.qc import QCResult
    from capdaemon.config import Config
    from capdaemon.model import FileChange

PROG = "finish-task"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("--task", required=True, metavar="ID", help="the dispatched task id")
    parser.add_argument("--repo", metavar="DIR", help="the task's git work tree (default: cwd)")
    parser.add_argument(
        "--base",
        help="base branch, for a task dispatched without --repo only when it is legacy "
        "(otherwise the base commit recorded at dispatch is used, never a local branch)",
    )
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
    add_pr_args(parser)
    add_state_arg(parser)
    add_config_arg(parser)  # for the notification channels and --open-pr's forge


def run(args: argparse.Namespace) -> int:
    """0 when every change is in scope; 1 on a violation (escalated, audited); 2 bad usage."""
    try:
        task_id = validate_task_id(args.task)
    except BadTaskIdError as exc:
        error(PROG, str(exc))
        return 2
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
    snap, violations = snapshot_or_violation(state, task_id)
    try:
        base_name, base = _base(state, task_id, snap, args.base)
    except CLIError as exc:
        error(PROG, str(exc))
        return 2
    if base != base_name:
        base_name, branch = f"{base_name}@{base[:12]}", base_name
    else:
        branch = base_name
    entry: dict[str, Any] = {"task_id": task_id, "layer": PROG, "base": base_name}
    if base != branch:
        entry["base_sha"] = base
    try:
        changes = _changes(repo, base, args.head, snap, entry, _base_sources(state, task_id, snap))
    except GitError as exc:
        error(PROG, f"cannot read the task branch: {exc}")
        return 2
    qc_results: list[QCResult] = []
    if snap is not None and "head_sha" in entry:
        qc_results = _qc(args, snap, repo, now, entry, violations)
    if snap is not None:
        violations.extend(_scope(snap, changes, now, task_id, base_name, entry))
        violations.extend(_hooks(snap, repo, changes))
    entry["files"] = len(changes)
    log = AuditLog(state / ACTIONS_LOG)
    if violations:
        return _block(config, state, repo, task_id, violations, entry, log, now)
    log.append({**entry, "action": "finish_task", "result": "pass"}, now=now)
    print(
        f"task {task_id}: {len(qc_results)} QC command(s) passed, {len(changes)} changed "
        f"path(s) in scope ({base_name}...{entry['head_sha'][:12]})"
    )
    if args.open_pr:
        return open_pr(args, config, repo, branch, entry, log, now)
    return 0


def _base(
    state: Path, task_id: str, snap: CapabilitySnapshot | None, asked: str | None
) -> tuple[str, str]:
    """(what to call the base, the revision to diff against): the commit recorded at
    dispatch; a legacy or unknown task's --base (default main); else CLIError."""
    found = recorded_base(state, task_id) if snap is not None else None
    if found is not None:
        name, sha = found
        if asked is not None and asked not in (name, sha):
            print(
                f"capdaemon finish-task: note: --base {asked} ignored; the task's base is "
                f"{name} at {sha[:12]}, recorded at dispatch",
                file=sys.stderr,
            )
        return name, sha
    if snap is None or snap.legacy:
        return asked or "main", asked or "main"
    raise CLIError(
        f"refused: task {task_id} has no base recorded at dispatch, and a local branch "
        "can be moved by the agent; dispatch the task with --repo DIR [--base BRANCH]"
    )


def _base_sources(state: Path, task_id: str, snap: CapabilitySnapshot | None) -> list[Path]:
    """The checkout the base was read from at dispatch, whose objects may hold the base."""
    where = recorded_base_repo(state, task_id) if snap is not None else None
    return [] if where is None else [where]


def _changes(
    repo: Path,
    base: str,
    head: str,
    snap: CapabilitySnapshot | None,
    entry: dict[str, Any],
    sources: list[Path],
) -> list[FileChange]:
    """The branch's changed paths read from its objects (symlink targets read when symlinks
    changed); sets entry["head_sha"]. GitError only with a capability: without one the
    refusal stands."""
    try:
        head_sha = resolve(repo, head)
        entry["head_sha"] = head_sha
        if snap is None:
            return []
        _check_base(repo, base, entry, sources)
        changes = diff_range(repo, base, head_sha, patches=False, extra=sources)
        links = {
            c.path
            for c in changes
            if c.new_mode == MODE_SYMLINK and c.status is not FileStatus.REMOVED
        }
        if links:  # second pass only when symlinks changed: read their targets
            changes = diff_range(
                repo, base, head_sha, patches=False, contents_for=links.__contains__, extra=sources
            )
        return changes
    except GitError:
        if snap is not None:
            raise
        return []


def _check_base(repo: Path, base: str, entry: dict[str, Any], sources: list[Path]) -> None:
    """The recorded base commit is read from the checkout's objects, else from those of the
    checkout it was recorded from; nothing is fetched (a fetch would run the checkout's
    remotes and ssh command). GitError saying where it was looked for."""
    if "base_sha" not in entry:
        return
    try:
        resolve(repo, base, extra=sources)
    except GitError:
        also = f" nor in {sources[0]}, where it was recorded" if sources else ""
        raise GitError(
            f"the base commit {base} recorded at dispatch is not in {repo}{also}; fetch it "
            "into the checkout and run finish-task again"
        ) from None


def _qc(
    args: argparse.Namespace,
    snap: CapabilitySnapshot,
    repo: Path,
    now: datetime,
    entry: dict[str, Any],
    violations: list[Violation],
) -> list[QCResult]:
    """Run the QC commands (--qc, else the capability's), print each result, collect the
    refusals and failures as violations and the results in the audit entry."""
    commands = list(args.qc) if args.qc else list(snap.capability.qc)
    qc = run_qc(snap, commands, repo, now, state=state_dir(args), timeout=args.qc_timeout)
    qc_results = qc.results
    for r in qc_results:
        print(r.line(), file=sys.stdout if r.status == "passed" else sys.stderr)
        if r.status == "failed" and r.output:
            print("\n".join(f"    {x}" for x in r.output.splitlines()), file=sys.stderr)
        if r.violation is not None:
            violations.append(r.violation)
    entry["qc"] = [{"command": r.command, "status": r.status, "detail": r.detail}
                   for r in qc_results]  # fmt: skip
    for v in qc.changed:
        print(f"QC CHANGED: {v.line()}", file=sys.stderr)
    if qc.changed:
        entry["qc_changed"] = [v.subject for v in qc.changed]
        violations.extend(qc.changed)
    return qc_results


def _scope(
    snap: CapabilitySnapshot,
    changes: list[FileChange],
    now: datetime,
    task_id: str,
    base: str,
    entry: dict[str, Any],
) -> list[Violation]:
    """The changed paths checked against the capability, with the one-line summary."""
    if snap.legacy:
        print(
            f"capdaemon finish-task: WARNING: task {task_id} is LEGACY (dispatched with "
            "--allow-no-scope): its changes are not limited by a scope",
            file=sys.stderr,
        )
        entry["legacy"] = True
    scope = check_file_changes(snap, changes, now)
    print(
        f"scope {'FAILED' if scope else 'passed'}: {len(changes)} changed path(s), "
        f"{len(scope)} out of scope ({base}...{str(entry.get('head_sha', '?'))[:12]})",
        file=sys.stderr if scope else sys.stdout,
    )
    return scope


def _hooks(snap: CapabilitySnapshot, repo: Path, changes: list[FileChange]) -> list[Violation]:
    """Changed paths in the folder `core.hooksPath` names (`.husky/` and `.githooks/` are
    refused by the scope check itself), unless the task says `hooks_writable: true`."""
    try:
        root = repo_root(repo)
    except NotACheckoutError:
        return []
    paths = [c.path for c in changes if c.path.split("/", 1)[0].lower() not in HOOK_FOLDERS]
    found = hook_violations(snap.capability, root, paths, None)
    for v in found:
        print(f"capdaemon finish-task: hooks folder changed: {v.line()}", file=sys.stderr)
    return found


def _block(
    config: Config,
    state: Path,
    repo: Path,
    task_id: str,
    violations: list[Violation],
    entry: dict[str, Any],
    log: AuditLog,
    now: datetime,
) -> int:
    """Print the violations, write the escalation record and the audit entry, tell the
    owners; 1."""
    for v in violations:
        print(f"capdaemon finish-task: OUT OF SCOPE: {v.line()}", file=sys.stderr)
    rec = write_escalation(
        state,
        task_id,
        violations,
        now,
        layer=PROG,
        extra={"base": entry["base"], "head_sha": entry.get("head_sha"), "repo": str(repo)},
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


def _alert(
    config: Config,
    state: Path,
    task_id: str,
    esc_id: str,
    violations: list[Violation],
    now: datetime,
) -> None:
    """Tell the owners now through the notification channels; say who was told."""
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

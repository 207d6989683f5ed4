"""`capdaemon escalations resolve ID --by LOGIN --reason TEXT`: an owner closes an escalation.

The record is resolved with who and why (audited in actions.jsonl first, then the record's
`.resolved` side file), and the owner issue the daemon opened for it is closed with a comment
saying the same. Run again, it resolves nothing twice and closes an issue still open.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from capdaemon.audit import AuditLog, log_paths
from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    command_inputs,
    error,
    printable,
)
from capdaemon.config import Config
from capdaemon.daemon.service.runner import CredentialsError, github_credentials
from capdaemon.decide._text import md
from capdaemon.forge.client import Forge
from capdaemon.forge.errors import FORGE_FAILURES
from capdaemon.state import StateError
from capdaemon.stores.escalations import (
    EscalationError,
    EscalationRecord,
    mark_resolved,
    read_escalation,
)

PROG = "escalations resolve"
MAX_REASON = 500


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon escalations resolve`."""
    parser.add_argument("id", metavar="ID", help="the escalation's id (`capdaemon escalations`)")
    parser.add_argument("--by", required=True, metavar="LOGIN", help="the owner resolving it")
    parser.add_argument(
        "--reason",
        required=True,
        metavar="TEXT",
        help="why (recorded in the audit log and said on the issue)",
    )
    parser.add_argument("--now", help="ISO time (tests); default: now")
    add_state_arg(parser)
    add_config_arg(parser)


def run(args: argparse.Namespace) -> int:
    """0 resolved (or already); 1 refused (not an owner) or the issue could not be closed;
    2 bad input (unknown id, empty reason, no state); 3 corrupt state."""
    try:
        config, now, sdir = command_inputs(args)
        if not sdir.is_dir():
            raise CLIError(f"state directory {sdir} does not exist")
        reason = " ".join(str(args.reason).split())
        if not reason or len(reason) > MAX_REASON:
            raise CLIError(f"--reason must be 1 to {MAX_REASON} characters")
        if args.by.lower() not in {o.lower() for o in config.owners}:
            error(
                PROG,
                f"{printable(args.by)} is not an owner (capdaemon.yml owners); nothing changed",
            )
            return 1
        try:
            rec = read_escalation(sdir, args.id)
        except EscalationError as exc:
            raise CLIError(f"{exc} (`capdaemon escalations --all` lists them)") from None
        if rec.open:
            _resolve(sdir, rec, args.by, reason, now)
            who, task = printable(args.by), printable(rec.task)
            print(f"resolved {rec.id} (task {task}) by {who}: {printable(reason)}")
        else:
            who = printable(str((rec.resolved or {}).get("by", "?")))
            print(f"{rec.id} was already resolved by {who}")
        if rec.issue_url:
            _close(config, rec.issue_url, args.by, reason)
    except CLIError as exc:
        error(PROG, str(exc))
        return exc.code
    except StateError as exc:
        error(PROG, f"corrupt state: {exc}")
        return 3
    except FORGE_FAILURES as exc:
        error(PROG, f"the record is resolved, but its issue could not be closed: {exc}")
        return 1
    return 0


def _resolve(sdir: Path, rec: EscalationRecord, by: str, reason: str, now: datetime) -> None:
    """Audit first, then the record's side file (record before act)."""
    AuditLog(log_paths(sdir)[1]).append(
        {
            "action": "escalation_resolved",
            "escalation": rec.id,
            "task_id": rec.task,
            "by": by,
            "reason": reason,
            "issue": rec.issue_url,
        },
        now=now,
    )
    mark_resolved(sdir, rec.id, by, now, reason)


def _close(config: Config, issue: str, by: str, reason: str) -> None:
    """Close the escalation's owner issue (`owner/repo#N`) with a comment saying who and why."""
    repo, _, number = issue.rpartition("#")
    if not repo or not number.isdigit():
        raise CLIError(f"the record names no issue capdaemon can close: {issue!r}")
    cdir = Path(config.config_dir) if config.config_dir else None
    try:
        token, key = github_credentials(config.github, config_dir=cdir)
    except CredentialsError as exc:
        raise CLIError(f"the record is resolved; to close {issue}: {exc}") from None
    forge = Forge.from_config(config.github, token=token, key_pem=key)
    comment = f"Resolved by {md(by)}: {md(reason)}\n\n(`capdaemon escalations resolve`, audited.)"
    closed = forge.close_issue(repo, int(number), comment)
    print(f"closed {issue}" if closed else f"{issue} was already closed")

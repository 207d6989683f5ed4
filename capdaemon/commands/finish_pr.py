"""`finish-task --open-pr`: after a pass, push the checked commit and open (or find) its PR.

Merging stays with the daemon: the PR is classified, its L1.C3 check published and merged
(or put to the owners) like every other agent PR, so a task cannot merge past the tiers.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.commands._common import CLIError, config_dir
from capdaemon.daemon.service.preflight import CredentialsError, build_forge
from capdaemon.daemon.service.runner import github_credentials, is_loopback
from capdaemon.forge.errors import FORGE_FAILURES
from capdaemon.gitdiff import GitError, run_git

if TYPE_CHECKING:
    from capdaemon.audit import AuditLog
    from capdaemon.config import Config


def add_args(parser: argparse.ArgumentParser) -> None:
    """The --open-pr options of finish-task."""
    parser.add_argument(
        "--open-pr",
        action="store_true",
        help="after a pass, push the checked commit and open its PR (or find the open one); "
        "the daemon merges it",
    )
    parser.add_argument("--remote", default="origin", help="git remote to push to (origin)")
    parser.add_argument("--branch", help="branch to push to (default: the checked-out branch)")
    parser.add_argument(
        "--forge-repo",
        metavar="OWNER/NAME",
        help="the PR's repository (default: the config's only supervised repo)",
    )


def _branch(repo: Path, asked: str | None) -> str:
    if asked:
        return asked
    proc = run_git(repo, ["symbolic-ref", "--short", "-q", "HEAD"], ok_codes=(0, 1))
    name = proc.stdout.decode("utf-8", "replace").strip()
    if not name:
        raise CLIError("--open-pr: HEAD is detached; give --branch NAME")
    return name


def _forge_repo(config: Config, asked: str | None) -> str:
    if asked:
        return asked
    if len(config.repos) == 1:
        return config.repos[0].name
    raise CLIError(f"--open-pr: the config supervises {len(config.repos)} repos; give --forge-repo")


def open_pr(
    args: argparse.Namespace,
    config: Config,
    repo: Path,
    base: str,
    entry: dict[str, Any],
    log: AuditLog,
    now: datetime,
) -> int:
    """Push entry["head_sha"] to the branch, open or find its PR, audit it; 0, else 1 with
    one line (the pass stands in the audit log)."""
    head = entry["head_sha"]
    record: dict[str, Any] = {"action": "finish_task_pr", "task_id": entry["task_id"],
                              "head_sha": head}  # fmt: skip
    try:
        branch = _branch(repo, args.branch)
        target = _forge_repo(config, args.forge_repo)
        record.update(branch=branch, repo=target)
        if branch == base:
            raise CLIError(f"--open-pr pushes a task branch, never the base {base}; give --branch")
        run_git(repo, ["push", "--quiet", "--", args.remote, f"{head}:refs/heads/{branch}"])
        token, key = github_credentials(config.github, config_dir=config_dir(args)[0])
        forge = build_forge(
            config.github,
            token=token,
            key_pem=key,
            write_interval=0.0 if is_loopback(config.github.base_url) else 1.0,
        )
        try:
            title = f"Task {entry['task_id']}: {branch}"
            body = (f"Opened by `capdaemon finish-task --open-pr` after QC and the scope check "
                    f"passed at {head}.\n\nTask-Id: {entry['task_id']}\n")  # fmt: skip
            number, how = forge.open_task_pr(target, branch, base, title=title, body=body)
        finally:
            forge.close()
    except (CLIError, GitError, CredentialsError, *FORGE_FAILURES) as exc:
        log.append({**record, "result": "failed", "reason": str(exc)[:500]}, now=now)
        print(f"capdaemon finish-task: the PR was not opened: {exc}", file=sys.stderr)
        return 1
    log.append({**record, "result": how, "number": number}, now=now)
    said = {"opened": "opened", "open": "already open", "draft": "open as a DRAFT (mark it "
            "ready on GitHub; the REST API cannot)"}[how]  # fmt: skip
    print(f"PR {target}#{number} {said}: {branch} at {head[:12]}; the daemon merges it")
    return 0

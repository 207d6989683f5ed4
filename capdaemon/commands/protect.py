"""`capdaemon protect OWNER/REPO`: require L1.C3 pinned to the App, PRs, no force pushes.

No human approving review is required by default: the daemon is the reviewer of record (its
L1.C3, pinned to the App, fails until the quadrant, tier and ballot allow the merge), and a
required human review would block every merge the daemon makes by itself. `--reviewers N`
requires N approving reviews as well, for teams that want both.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.audit import AuditLog, log_paths
from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    error,
    load_config_from_args,
    printable,
    state_dir,
)
from capdaemon.daemon.issues.access import decision_repo_writers
from capdaemon.daemon.issues.protection_issue import protect_command
from capdaemon.daemon.safety.byhand import by_hand
from capdaemon.daemon.safety.protection import protection_problems
from capdaemon.daemon.service.runner import CredentialsError, github_credentials, with_base_url
from capdaemon.decide.labels import L1C3_CHECK_NAME
from capdaemon.filenames import PRS_FILE
from capdaemon.forge.client import Forge
from capdaemon.forge.convert import review_count
from capdaemon.forge.errors import FORGE_FAILURES, Forbidden, NotFound
from capdaemon.forge.writes import protection_body
from capdaemon.logging import logging_for_command
from capdaemon.state import StateError, read_json

if TYPE_CHECKING:
    from capdaemon.config import Config
    from capdaemon.forge.client import Forge


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon protect`."""
    parser.add_argument("repo", metavar="OWNER/REPO")
    parser.add_argument("--branch", help="branch to protect (default: the repo's configured base)")
    parser.add_argument("--base-url", help="GitHub API base URL override (e.g. the sandbox's)")
    parser.add_argument("--check", action="store_true", help="only report drift; change nothing")
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="LOGIN",
        help="also check this login's access to the decision repo (repeatable)",
    )
    parser.add_argument(
        "--reviewers",
        type=_count,
        metavar="N",
        help="also require N approving reviews (default: keep the branch's; a new protection "
        "requires none: capdaemon is the reviewer of record, and a required human review blocks "
        "the merges it makes by itself)",
    )
    add_config_arg(parser)
    add_state_arg(parser)


def _count(text: str) -> int:
    """An argparse type: a whole number of reviews, 0 to 6 (GitHub's range)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= n <= 6:
        raise argparse.ArgumentTypeError(f"{n} is out of range: GitHub allows 0 to 6 reviews")
    return n


def run(args: argparse.Namespace) -> int:
    """0 protected (or already so); 1 drift found with --check, or GitHub refused; 2 bad input
    (a repository that does not exist or the App cannot see, a bad config)."""
    # a command for a person: its warnings are plain lines, never JSON events among the report
    with logging_for_command("console", "warning"):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    import re
    from datetime import UTC, datetime

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+", args.repo):
        error("protect", f"{args.repo!r} is not OWNER/REPO")
        return 2
    try:
        config = with_base_url(load_config_from_args(args, required=True), args.base_url)
        rc = config.repo(args.repo)
        branch = args.branch or (rc.base if rc else "main")
        from pathlib import Path

        cdir = Path(config.config_dir) if config.config_dir else None
        token, key = github_credentials(config.github, config_dir=cdir)
        forge = Forge.from_config(config.github, token=token, key_pem=key)
        app_id = config.github.app_id
        _require_repo(forge, args.repo)
        _warn_decision_writers(forge, config, state_dir(args), args.agent)
        current = forge.effective_protection(args.repo, branch)
        before = protection_problems(current, app_id) + _review_problems(current, args.reviewers)
        manual = _by_hand(forge, args.repo, branch, app_id, args.reviewers) if before else []
        if args.check:
            return _report_check(args.repo, branch, rc.base if rc else None, before, manual)
        changed = (
            _write(forge, args.repo, branch, app_id, args.reviewers, manual) if before else False
        )
        if changed is None:
            return 1
        final = forge.effective_protection(args.repo, branch)
        after = protection_problems(final, app_id) + _review_problems(final, args.reviewers)
    except (CLIError, CredentialsError) as exc:
        error("protect", str(exc))
        return getattr(exc, "code", 2)
    except FORGE_FAILURES as exc:
        return _forge_failure(exc)
    if after:
        error("protect", f"{args.repo}:{branch} still falls short: {'; '.join(after)}")
        return 1
    sdir = state_dir(args)
    if sdir.is_dir():
        AuditLog(log_paths(sdir)[1]).append(
            {
                "action": "protect",
                "repo": f"{args.repo}:{branch}",
                "changed": changed,
                "was": before,
                "check": L1C3_CHECK_NAME,
                "app_id": app_id,
                "reviewers": review_count(final),
            },
            now=datetime.now(UTC),
        )
    _say_protected(f"{args.repo}:{branch}", changed, app_id, final)
    return 0


def _report_check(
    repo: str, branch: str, base: str | None, problems: list[str], manual: list[str]
) -> int:
    """`--check`: one line per shortfall, the command that fixes them (an App with
    `administration: write`) and the exact settings to apply by hand (1); or that the branch
    is protected as required (0)."""
    for p in problems:
        print(f"{repo}:{branch}: {p}")
    if not problems:
        print(f"{repo}:{branch}: protected as required")
        return 0
    print(f"{repo}:{branch}: to fix, run: {protect_command(repo, branch, base)}")
    print("\n".join(manual))
    return 1


def _by_hand(
    forge: Forge, repo: str, branch: str, app_id: int | None, reviewers: int | None
) -> list[str]:
    """The settings `protect` would write, as lines to apply by hand."""
    cur = forge.get_protection(repo, branch)
    wanted = review_count(cur) if reviewers is None else reviewers
    body = protection_body(cur, L1C3_CHECK_NAME, app_id, reviews=wanted)
    return by_hand(repo, branch, body, forge.app_slug)


def _write(
    forge: Forge,
    repo: str,
    branch: str,
    app_id: int | None,
    reviewers: int | None,
    manual: list[str],
) -> bool | None:
    """Set the protection (whether anything changed); None, having said why and printed the
    settings to apply by hand, when the App may only read protection."""
    if _read_only(forge):
        _refuse_read_only(repo, branch, manual)
        return None
    try:  # already as required (classic protection or rulesets): nothing is written
        return forge.set_protection(repo, branch, L1C3_CHECK_NAME, app_id, reviewers=reviewers)
    except Forbidden:
        _refuse_read_only(repo, branch, manual)
        return None


def _read_only(forge: Forge) -> bool:
    """An App whose installation grants `administration` below write: it reads protection,
    it cannot change it."""
    if not forge.as_app:
        return False
    info = forge.installation_info()
    return info is not None and info[2].get("administration") != "write"


def _refuse_read_only(repo: str, branch: str, manual: list[str]) -> None:
    """One line saying why nothing was changed, then the settings to apply by hand."""
    error(
        "protect",
        f"{repo}:{branch} not changed: the App's administration permission is read, which"
        " reads branch protection but cannot write it; apply the settings below by hand (or"
        " grant administration: write while you run protect)",
    )
    print("\n".join(manual))


def _say_protected(
    where: str, changed: bool, app_id: int | None, final: Mapping[str, Any] | None
) -> None:
    """The one line saying what the branch now requires."""
    pin = f" from App {app_id}" if app_id is not None else ""
    verb = "protected" if changed else "already protected"
    n = review_count(final)
    reviews = f", {n} approving review(s)" if n else ""
    print(f"{where} {verb}: requires {L1C3_CHECK_NAME}{pin}, PRs{reviews}, no force pushes")


def _forge_failure(exc: Exception) -> int:
    """One line for what GitHub answered; 2 when it does not know the repo or branch (bad
    input), 1 when it refused."""
    if isinstance(exc, NotFound):
        error("protect", f"GitHub cannot find it: {exc}")
        return 2
    error("protect", f"GitHub refused: {exc}")
    return 1


def _require_repo(forge: Forge, repo: str) -> None:
    """CLIError (exit 2) when `repo` does not exist or the credentials cannot see it."""
    try:
        forge.repo_permissions(repo)
    except NotFound:
        raise CLIError(
            f"repository {repo} not found, or not visible to these credentials: check the "
            "name (and that the GitHub App is installed on it)"
        ) from None


def _review_problems(prot: Mapping[str, Any] | None, wanted: int | None) -> list[str]:
    """`--reviewers N` not met by a protection document (nothing when N was not given)."""
    if wanted is None or prot is None:
        return []
    have = review_count(prot)
    return [] if have == wanted else [f"{have} approving review(s) required, not {wanted}"]


def _warn_decision_writers(forge: Forge, config: Config, sdir: Path, extra: list[str]) -> None:
    """Warn (one plain line each on stderr, never an exit code) about non-owners who can write
    to the decision repo.

    Candidates: the decision repo's collaborators when GitHub lets us list them; otherwise the
    PR authors (agents) in bot-state/prs.json plus `--agent` logins, checked one by one.
    """
    candidates = set(extra)
    try:
        raw = read_json(sdir / PRS_FILE, None) or {}
        for rec in (raw.get("prs") or {}).values():
            if isinstance(rec, dict) and rec.get("author"):
                candidates.add(str(rec["author"]))
    except (StateError, AttributeError, OSError):
        pass

    def warn(text: str) -> None:
        print(f"capdaemon protect: warning: {printable(text)}", file=sys.stderr)

    try:
        writers, how = decision_repo_writers(forge, config, candidates)
    except FORGE_FAILURES as exc:
        warn(f"cannot tell who can write to the decision repo: {exc}")
        return
    for w in writers:
        warn(
            f"{w.login} ({w.role}) can write to the decision repo {config.ballot_repo} "
            f"(found via {how}): agents should have at most triage there; with write they can "
            "edit or close ballots and delete owners' votes"
        )

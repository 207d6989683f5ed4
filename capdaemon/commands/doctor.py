"""`capdaemon doctor`: check a deployment without running it; one line per check, writes nothing.

Exit 0 when nothing failed (warnings allowed), 2 when the config or the credentials fail (a
repo GitHub does not show, the App not installed or missing a permission: as `run` refuses to
start), 1 when anything else fails (GitHub unreachable, a repo unprotected, an agent that can
write to the decision repo, an unusable state directory, the clock).
"""

from __future__ import annotations

import argparse
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from capdaemon.channels.tgcheck import check_telegram
from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    config_dir,
    load_config_and_rules,
    state_dir,
)
from capdaemon.daemon.service.checkup import (
    check_clock,
    check_github,
    check_landlock,
    check_sandbox,
    check_state_dir,
    check_time_zone,
)
from capdaemon.daemon.service.preflight import (
    CredentialsError,
    UnreachableError,
    authenticate,
    build_forge,
    check_key_pem,
    host_port,
)
from capdaemon.daemon.service.runner import (
    app_key_path,
    github_credentials,
    is_loopback,
    with_base_url,
)
from capdaemon.filenames import PRS_FILE
from capdaemon.findings import FAIL, OK, SKIP, Finding
from capdaemon.forge.errors import FORGE_FAILURES
from capdaemon.logging import logging_for_command
from capdaemon.state import StateError, read_json

if TYPE_CHECKING:
    from capdaemon.config import Config
    from capdaemon.forge.client import Forge


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon doctor`."""
    add_config_arg(parser)
    add_state_arg(parser)
    parser.add_argument("--offline", action="store_true", help="only the checks without network")
    parser.add_argument("--base-url", help="GitHub API base URL override (e.g. the sandbox's)")
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="LOGIN",
        help="an agent login whose access to the decision repo is checked too (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    """Print the findings; the exit status as in the module docstring."""
    findings: list[Finding] = []
    config_failed = False
    with logging_for_command("console", "warning"):  # the findings are the output
        for finding, is_config in _guarded(_findings(args)):
            print(finding.line(), flush=True)
            findings.append(finding)
            config_failed = config_failed or (
                (is_config or finding.config) and finding.status == FAIL
            )
    failed = sum(1 for f in findings if f.status == FAIL)
    warned = sum(1 for f in findings if f.status == "warn")
    summary = f"doctor: {failed} failed, {warned} warnings, {len(findings)} checks"
    print(summary + ("" if failed else (" — offline only" if args.offline else " — ready")))
    if config_failed:
        return 2
    return 1 if failed else 0


Checked = Iterator[tuple["Finding", bool]]  # (finding, whether it is a config/credentials check)


def _guarded(checks: Checked) -> Checked:
    """The findings; a check that breaks unexpectedly is one more failed line (the summary
    still comes), never a traceback."""
    try:
        yield from checks
    except Exception as exc:
        text = " ".join(str(exc).split())[:200]
        yield Finding(FAIL, "doctor", f"a check broke: {type(exc).__name__}: {text}"), False


def _findings(args: argparse.Namespace) -> Checked:
    """(Finding, whether it is a config/credentials check) in the order they are made."""

    state = state_dir(args, check=False)  # its format is one of the checks
    try:
        config, rules = load_config_and_rules(args, required=True)
    except CLIError as exc:
        yield Finding(FAIL, "config", str(exc)), True
        yield from ((f, False) for f in check_state_dir(state))
        return
    config = with_base_url(config, args.base_url)
    token, key = yield from _offline(args, config, len(rules), state)
    if args.offline:
        yield Finding(SKIP, "github", "--offline: GitHub not contacted"), False
    elif token is None and key is None:
        yield Finding(SKIP, "github", "no usable credentials"), False
    else:
        yield from _online(args, config, state, token, key)
    yield from check_telegram(config, offline=args.offline)  # nothing without `telegram:`


def _offline(
    args: argparse.Namespace, config: Config, rules: int, state: Path
) -> Generator[tuple[Finding, bool], None, tuple[str | None, bytes | None]]:
    """The config, credentials, state directory and time zone; the usable (token, key)."""

    cdir, _ = config_dir(args)
    yield (
        Finding(
            OK,
            "config",
            f"{cdir}: {len(config.repos)} repos, mode {config.mode}, "
            f"{len(config.owners)} owners, {rules} user rules",
        ),
        True,
    )
    token = key = None
    try:
        token, key = github_credentials(config.github, config_dir=cdir)
        if key is not None:
            path = app_key_path(config.github, config_dir=cdir)
            check_key_pem(key, path or "")
            yield Finding(OK, "credentials", f"App {config.github.app_id}, key {path}"), True
        else:
            yield Finding(OK, "credentials", f"token from ${config.github.token_env}"), True
    except CredentialsError as exc:
        yield Finding(FAIL, "credentials", str(exc)), True
        token = key = None
    yield from ((f, False) for f in check_state_dir(state))
    yield check_time_zone(config, datetime.now(UTC)), True
    yield check_landlock(), False
    yield check_sandbox(), False
    return token, key


def _online(
    args: argparse.Namespace, config: Config, state: Path, token: str | None, key: bytes | None
) -> Checked:
    """Reach GitHub with the credentials, then the installation, repos and decision repo."""

    try:
        forge = build_forge(
            config.github,
            token=token,
            key_pem=key,
            write_interval=0.0 if is_loopback(config.github.base_url) else 1.0,
        )
        login = authenticate(forge, config.github)
    except UnreachableError as exc:
        yield Finding(FAIL, "github", f"{exc}; check github.base_url and the network"), False
        return
    except CredentialsError as exc:
        yield Finding(FAIL, "github", str(exc)), True
        return
    yield (
        Finding(OK, "github", f"reached {host_port(config.github.base_url)}, acting as {login}"),
        False,
    )
    yield check_clock(forge), False
    try:
        forge.transport.attempts = 1  # a check reports, it does not wait out an outage
        candidates = _candidates(forge, config, state, args.agent)
        for finding in check_github(forge, config, candidates):
            yield finding, False
    finally:
        forge.close()


def _candidates(forge: Forge, config: Config, state: Path, agents: list[str]) -> set[str]:
    """Logins whose write access to the decision repo matters: the --agent logins, the PR
    authors the daemon has seen (bot-state/prs.json, read only) and open PRs' authors."""
    found = {a for a in agents if a}
    try:
        data = read_json(state / PRS_FILE, None) or {}
    except StateError:
        data = {}
    prs = data.get("prs") if isinstance(data, dict) else None
    if isinstance(prs, dict):
        found |= {str(r.get("author")) for r in prs.values() if isinstance(r, dict)}
    for rc in config.repos:
        try:
            found |= {pr.author for pr in forge.list_open_prs(rc.name)}
        except FORGE_FAILURES:
            continue
    return {f for f in found if f and f != "None"}

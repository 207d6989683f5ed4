"""The checks behind `capdaemon doctor`: each one reads (never writes) and gives one finding.

Offline: the config and user rules, the key or token, the state directory (usable, lock,
state files, audit logs), the time zone and the kernel's Landlock ABI. Online: reaching
GitHub, the credentials, the App installation and its permissions, each supervised repo
(access, branch protection, required checks), who can write to the decision repo, and the
rate-limit budget.
"""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from capdaemon.appspec import APP_PERMISSIONS
from capdaemon.audit import log_paths, verify
from capdaemon.config import Config, RepoConfig
from capdaemon.daemon.issues.access import decision_repo_writers
from capdaemon.daemon.service.identity import check_identity, check_protection
from capdaemon.filenames import METRICS_FILE, PRS_FILE, SAFETY_FILE, STATE_FORMAT_FILE
from capdaemon.findings import FAIL, OK, WARN, Finding
from capdaemon.forge.appclock import (
    AHEAD_TOLERANCE,
    BEHIND_TOLERANCE,
    DRIFT_REPORT_SECONDS,
    describe_offset,
    within_jwt_window,
)
from capdaemon.forge.errors import FORGE_FAILURES, NotFound, NotInstalled
from capdaemon.jail import bwrap_args, find_bwrap
from capdaemon.landlock import LandlockError, abi_version
from capdaemon.state import StateError, read_json
from capdaemon.stateformat import STATE_FORMAT, StateFormatError, check_format, read_format

if TYPE_CHECKING:
    from capdaemon.forge.client import Forge

_LEVEL = {"read": 1, "write": 2, "admin": 3}


def missing_permissions(granted: dict[str, str]) -> list[str]:
    """`name: level` of each APP_PERMISSIONS entry the granted permissions fall short of."""
    return [
        f"{name}: {need}"
        for name, need in APP_PERMISSIONS.items()
        if _LEVEL.get(granted.get(name, ""), 0) < _LEVEL[need]
    ]


# ---------------------------------------------------------------------------------- offline
def check_state_dir(state: Path) -> Iterator[Finding]:
    """Usable (a directory, or creatable), lock holder, state files parse, audit logs verify."""

    if state.exists() and not state.is_dir():
        yield Finding(FAIL, "state directory", f"{state} is not a directory")
        return
    if not state.exists():
        parent = next((p for p in state.parents if p.exists()), Path("/"))
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            yield Finding(
                FAIL, "state directory", f"{state} does not exist and {parent} is not writable"
            )
        else:
            yield Finding(WARN, "state directory", f"{state} does not exist yet (created at start)")
        return
    if not os.access(state, os.W_OK | os.X_OK):
        yield Finding(FAIL, "state directory", f"{state} is not writable by this user")
        return
    yield Finding(OK, "state directory", f"{state} is a writable directory")
    yield _lock_finding(state / "capdaemon.lock")
    yield _format_finding(state)
    bad = []
    for name in (PRS_FILE, METRICS_FILE, SAFETY_FILE):
        try:
            read_json(state / name, None)
        except StateError as exc:
            bad.append(str(exc))
    if bad:
        yield Finding(FAIL, "state files", bad[0])
    else:
        yield Finding(OK, "state files", "prs.json, tick_metrics.json, safety.json parse")
    for path in log_paths(state):
        try:
            report = verify(path)
        except Exception as exc:  # a corrupt .head pointer: reported, never raised
            yield Finding(FAIL, "audit log", f"{path}: cannot verify: {exc}")
            continue
        if report.ok:
            yield Finding(OK, "audit log", f"{path.name}: {report.count} entries, chain whole")
        else:
            yield Finding(
                FAIL,
                "audit log",
                f"{path}:{report.line}: {report.reason} (see `capdaemon audit verify`)",
            )


def _format_finding(state: Path) -> Finding:
    """The directory's state format (stateformat): newer than this capdaemon reads fails."""
    try:
        found = read_format(state)
        check_format(state)
    except StateFormatError as exc:
        return Finding(FAIL, "state format", str(exc))
    if found is None:
        return Finding(
            OK, "state format", f"no {STATE_FORMAT_FILE}: format 1 (stamped at the next start)"
        )
    return Finding(OK, "state format", f"format {found} (this capdaemon reads {STATE_FORMAT})")


def _lock_finding(lock: Path) -> Finding:
    """Whether a daemon holds the state lock (probed read-only, with a shared flock)."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return Finding(OK, "state lock", "free (no daemon has run here yet)")
    except OSError as exc:
        return Finding(FAIL, "state lock", f"{lock}: {exc.strerror}")
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return Finding(FAIL, "state lock", f"{lock}: {exc.strerror}")
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
        return Finding(OK, "state lock", f"held by a running daemon (pid {holder or '?'})")
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return Finding(OK, "state lock", "free (no daemon is running on this directory)")
    finally:
        os.close(fd)


def check_landlock() -> Finding:
    """The kernel's Landlock ABI: what `scope-guard run` can enforce on this machine."""
    try:
        abi = abi_version()
    except LandlockError as exc:
        return Finding(
            WARN,
            "landlock",
            f"unavailable ({exc.strerror}): `scope-guard run` refuses tasks without "
            "`enforcement: check-only`",
        )
    net = "writes and TCP" if abi >= 4 else "writes (no TCP rules before ABI 4)"
    return Finding(OK, "landlock", f"ABI {abi}: `scope-guard run` confines {net}")


def check_sandbox() -> Finding:
    """bubblewrap, and whether it can build the sandbox here (one real `true` in it)."""
    bwrap = find_bwrap()
    if bwrap is None:
        return Finding(
            WARN,
            "sandbox",
            "bubblewrap is not installed (apt-get install bubblewrap): `scope-guard run` and "
            "finish-task's QC refuse tasks without `enforcement: landlock-only` or check-only",
        )
    try:
        got = subprocess.run(
            [*bwrap_args(bwrap, False, "/"), "true"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Finding(WARN, "sandbox", f"{bwrap} could not be run: {exc}")
    if got.returncode != 0:
        said = got.stderr.strip().splitlines()[-1:] or [f"exit {got.returncode}"]
        return Finding(WARN, "sandbox", f"{bwrap} cannot build the sandbox here: {said[0]}")
    return Finding(OK, "sandbox", f"{bwrap}: new session, pid/ipc/net namespaces, no capabilities")


def check_time_zone(config: Config, now: datetime) -> Finding:
    """The digest's time zone exists here, and what time it is there."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    name = config.schedule.timezone
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return Finding(
            FAIL, "time zone", f"schedule.timezone {name!r} is unknown here (install tzdata)"
        )
    local = now.astimezone(zone)
    return Finding(
        OK,
        "time zone",
        f"{name}: digest at {config.schedule.digest_time} local, now {local:%Y-%m-%d %H:%M} there",
    )


# ---------------------------------------------------------------------------------- online
def check_github(forge: Forge, config: Config, candidates: set[str]) -> Iterator[Finding]:
    """Installation and permissions, each repo, the decision repo's writers, the rate budget."""

    steps: list[Callable[[], Iterator[Finding]]] = [
        lambda: _installation(forge, config),
        lambda: check_identity(forge, config),
        *[(lambda rc=rc: _repo(forge, config, rc)) for rc in config.repos],
        lambda: _decision_repo(forge, config, candidates),
        lambda: _rate(forge),
    ]
    for step in steps:
        try:
            yield from step()
        except FORGE_FAILURES as exc:
            yield Finding(FAIL, "github", " ".join(str(exc).split())[:200])


def check_clock(forge: Forge) -> Finding:
    """This machine's clock against GitHub's `Date`: App JWTs are judged on GitHub's clock, and
    ballot deadlines and audit times follow this one."""

    offset = forge.transport.clock_offset
    if offset is None:
        return Finding(WARN, "clock", "GitHub's answers carried no Date header: not measured")
    text = (
        f"{describe_offset(offset)} (App JWTs allow {AHEAD_TOLERANCE} s ahead to "
        f"{BEHIND_TOLERANCE} s behind)"
    )
    fix = "; enable time sync: timedatectl set-ntp true"
    if not within_jwt_window(offset):
        return Finding(FAIL, "clock", text + fix)
    if abs(offset) >= DRIFT_REPORT_SECONDS:
        return Finding(WARN, "clock", text + fix)
    return Finding(OK, "clock", text)


def _accounts(config: Config) -> list[str]:
    """The accounts (organisations or users) whose repos the config names, decision repo too."""
    names = [rc.name for rc in config.repos] + [config.ballot_repo or ""]
    seen: dict[str, str] = {}
    for name in names:
        if "/" in name:
            seen.setdefault(name.split("/")[0].lower(), name.split("/")[0])
    return list(seen.values())


def _installation(forge: Forge, config: Config) -> Iterator[Finding]:
    if not forge.as_app:
        yield Finding(OK, "credentials", f"token accepted: acting as {forge.login}")
        return
    accounts: list[str | None] = [*_accounts(config)] or [None]
    for account in accounts:
        try:
            info = forge.installation_info(account)
        except NotInstalled as exc:
            yield Finding(FAIL, "app installation", " ".join(str(exc).split())[:200], True)
            continue
        if info is not None:
            yield from _one_installation(forge, account, *info)


def _one_installation(
    forge: Forge, account: str | None, inst_id: int, on: str, granted: dict[str, str]
) -> Iterator[Finding]:
    if account is not None and on.lower() != account.lower():
        yield Finding(
            FAIL,
            "app installation",
            f"github.installation_id {inst_id} is on {on}, but repos of {account} are "
            "configured: leave installation_id unset so each account uses its own installation",
            True,
        )
        return
    yield Finding(OK, "app installation", f"{forge.login}, installation {inst_id} on {on}")
    missing = missing_permissions(granted)
    if missing:
        yield Finding(
            FAIL,
            "app permissions",
            f"missing {', '.join(missing)}; grant them in the App's settings, then accept "
            "the new permissions on the installation",
            True,
        )
    else:
        yield Finding(
            OK, "app permissions", ", ".join(f"{k}: {granted[k]}" for k in APP_PERMISSIONS)
        )


def _repo(forge: Forge, config: Config, rc: RepoConfig) -> Iterator[Finding]:
    try:
        perms = forge.repo_permissions(rc.name)
    except NotFound:
        yield Finding(
            FAIL,
            f"repo {rc.name}",
            "not found or not visible: check the name and that the App is installed on it",
            True,
        )
        return
    push = perms.get("push", True)
    yield Finding(
        OK if push else FAIL,
        f"repo {rc.name}",
        "reachable with write access" if push else "reachable but read-only: grant write",
    )
    yield from check_protection(forge, config, rc)


def _decision_repo(forge: Forge, config: Config, candidates: set[str]) -> Iterator[Finding]:
    repo = config.ballot_repo
    if repo is None:
        yield Finding(WARN, "decision repo", "bot.own_repo is not set: ballots have no home")
        return
    writers, how = decision_repo_writers(forge, config, candidates)
    checked = "its collaborators" if how == "collaborators" else f"{len(candidates)} known agents"
    if writers:
        names = ", ".join(f"{w.login} ({w.role})" for w in writers)
        yield Finding(
            FAIL,
            "decision repo",
            f"{repo}: {names} can write and could alter a ballot; make them read-only",
        )
    else:
        yield Finding(OK, "decision repo", f"{repo}: only owners and the bot can write ({checked})")


def _rate(forge: Forge) -> Iterator[Finding]:
    core = forge.rate_limit_core()
    remaining, limit = int(core.get("remaining", 0)), int(core.get("limit", 0))
    reset = core.get("reset")
    when = datetime.fromtimestamp(int(reset), tz=UTC).strftime("%H:%M UTC") if reset else "?"
    status = OK if limit and remaining >= limit // 10 else WARN
    yield Finding(status, "rate limit", f"{remaining} of {limit} requests left (resets {when})")

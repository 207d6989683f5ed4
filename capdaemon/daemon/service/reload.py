"""Config reload while `capdaemon run` runs: at the start of each tick when the files of the
config directory changed, and on SIGHUP.

A new config (every file, the user rules, and the repos it names as GitHub shows them) is
loaded and validated completely before it replaces the running one; the Ticker then rewires
its parts for it between two ticks. A config that fails is refused: the daemon keeps the last
good one, logs the error naming the file and line, puts it in each tick's summary
(`config_errors`) and keeps one incident issue open until the files are fixed. Each applied
change is an audit record with the old and the new config hash. `github:` (the connection) and
`telegram:` take effect on a restart only: a change there is kept aside with a warning.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from capdaemon.config import CONFIG_FILES, USER_RULES_SUBDIR, Config, ConfigError
from capdaemon.daemon.safety.common import INCIDENT
from capdaemon.decide._text import md
from capdaemon.decide.labels import Label
from capdaemon.forge.errors import ForgeError, RateLimited
from capdaemon.logging import get_logger

if TYPE_CHECKING:
    from capdaemon.audit import AuditLog
    from capdaemon.classify.user_rules import UserRule
    from capdaemon.forge.port import ForgePort

log = get_logger("capdaemon.reload")

ISSUE_MARKER = {"kind": INCIDENT, "key": "config-refused"}


class Ticker(Protocol):
    """What the reloader needs of the daemon's Ticker (capdaemon.daemon.core.tick)."""

    @property
    def config(self) -> Config:
        """The running config."""
        ...

    @property
    def rules(self) -> tuple[UserRule, ...]:
        """The running user rules."""
        ...

    @property
    def config_hash(self) -> str:
        """The hash classifications record for the running config and rules."""
        ...

    @property
    def decision_repo(self) -> str | None:
        """Where incident issues go."""
        ...

    @property
    def forge(self) -> ForgePort:
        """GitHub."""
        ...

    @property
    def actions_log(self) -> AuditLog:
        """The actions audit log."""
        ...

    def apply_config(self, config: Config, rules: tuple[UserRule, ...]) -> None:
        """Run the next ticks on `config`."""
        ...


class ConfigRefused(Exception):
    """The config directory as it is now cannot replace the running config (the message
    names the file, and the line when known)."""


@dataclass(frozen=True)
class Candidate:
    """A config read from the directory and validated: what would replace the running one."""

    config: Config
    rules: tuple[UserRule, ...]
    held_back: tuple[str, ...] = ()  # sections kept as running until a restart


def fingerprint(config_dir: Path) -> str:
    """A hash of every file the config is read from (names and bytes): what changes it."""
    h = hashlib.sha256()
    if not config_dir.is_dir():
        return "missing"
    names = [*CONFIG_FILES, *(Path(n).with_suffix(".yaml").name for n in CONFIG_FILES)]
    files = [config_dir / n for n in names]
    rules = config_dir / USER_RULES_SUBDIR
    if rules.is_dir():
        files += sorted(p for p in rules.rglob("*") if p.is_file())
    for path in files:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            data = f"unreadable: {exc.strerror}".encode()
        h.update(str(path.relative_to(config_dir)).encode("utf-8") + b"\0")
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


class Reloader:
    """Watches one config directory; `before_tick` applies a change to the Ticker it is given
    (built before the Ticker, which calls it at the start of each full tick)."""

    def __init__(
        self,
        config_dir: Path,
        *,
        load: Callable[[Path], tuple[Config, tuple[UserRule, ...]]],
        check_repos: Callable[[ForgePort, Config, frozenset[str]], list[str]] | None = None,
    ) -> None:
        self.config_dir = Path(config_dir)
        self._load = load
        self._check_repos = check_repos
        self._seen = fingerprint(self.config_dir)  # the files the running config came from
        self._forced = threading.Event()
        self.refused: str | None = None  # why the files as they are now were refused
        self.counts = {"applied": 0, "refused": 0}  # changes since start (for /metrics)
        self._issue_checked = False

    # ------------------------------------------------------------------ SIGHUP
    def request(self, ticker: Ticker) -> str:
        """SIGHUP: read and check the files now (no GitHub requests); the next tick applies
        them. Returns one line for the log and systemd's STATUS."""
        self._forced.set()
        try:
            cand = self._candidate(ticker, check_repos=False)
        except ConfigRefused as exc:
            log.error("config.reload_refused", error=str(exc), keeps="the running config")
            return f"config refused, running the last good one: {exc}"
        same = cand.config == ticker.config and cand.rules == ticker.rules
        log.info("config.reload_requested", changed=not same, applies="at the next tick")
        return "config unchanged" if same else "config valid; applied at the next tick"

    # ------------------------------------------------------------------ each tick
    def before_tick(self, ticker: Ticker, now: datetime) -> list[str]:
        """Apply a changed (or SIGHUP-requested) config to `ticker`; the config errors for
        the tick."""
        current = fingerprint(self.config_dir)
        forced = self._forced.is_set()
        self._forced.clear()
        if current == self._seen and not forced:
            self._close_stale_issue(ticker, now)
            return [self.refused] if self.refused else []
        try:
            cand = self._candidate(ticker, check_repos=True)
        except ConfigRefused as exc:
            self._seen = current
            self._refuse(ticker, str(exc), now)
            return [self.refused] if self.refused else []
        except RateLimited:
            if forced:
                self._forced.set()
            raise
        except ForgeError as exc:  # GitHub did not answer about the repos: try next tick
            log.warning("config.reload_postponed", error=str(exc)[:300])
            if forced:
                self._forced.set()
            return [self.refused] if self.refused else []
        self._seen = current
        if self.refused is not None:
            log.info("config.fixed", was=self.refused)
        self.refused = None
        self._close_stale_issue(ticker, now, force=True)
        self._apply(ticker, cand, now)
        return []

    def _candidate(self, ticker: Ticker, *, check_repos: bool) -> Candidate:
        """The directory's config, validated; ConfigRefused naming the file (and line)."""
        if not self.config_dir.is_dir():
            raise ConfigRefused(f"config directory {self.config_dir} is missing")
        try:
            config, rules = self._load(self.config_dir)
        except ConfigError as exc:
            raise ConfigRefused(f"config error: {exc}") from None
        running = ticker.config
        held: list[str] = []
        if config.github != running.github:
            config = dataclasses.replace(config, github=running.github)
            held.append("github")
        if config.metrics != running.metrics:  # the endpoints are bound once, at start
            config = dataclasses.replace(config, metrics=running.metrics)
            held.append("metrics")
        if config.channels.telegram != running.channels.telegram:
            channels = dataclasses.replace(config.channels, telegram=running.channels.telegram)
            config = dataclasses.replace(config, channels=channels)
            held.append("telegram")
        if check_repos and self._check_repos is not None:
            known = frozenset(n.lower() for n in [r.name for r in running.repos])
            problems = self._check_repos(
                ticker.forge, config, known | {(running.ballot_repo or "").lower()}
            )
            if problems:
                raise ConfigRefused("; ".join(problems))
        return Candidate(config, tuple(rules), tuple(held))

    def _apply(self, ticker: Ticker, cand: Candidate, now: datetime) -> None:
        old, old_hash = ticker.config, ticker.config_hash
        for section in cand.held_back:
            log.warning(
                "config.restart_needed",
                section=section,
                detail=f"a change to `{section}:` takes effect when the daemon restarts",
            )
        if cand.config == old and cand.rules == ticker.rules:
            log.info("config.unchanged", config_hash=old_hash)
            return
        ticker.apply_config(cand.config, cand.rules)
        self.counts["applied"] += 1
        new_hash = ticker.config_hash
        if new_hash != old_hash:
            ticker.actions_log.append(
                {
                    "action": "config.changed",
                    "old_config_hash": old_hash,
                    "new_config_hash": new_hash,
                    "config_dir": str(self.config_dir),
                    "restart_needed": list(cand.held_back),
                },
                now=now,
            )
        log.info("config.reloaded", old_config_hash=old_hash, new_config_hash=new_hash)

    # ------------------------------------------------------------------ the incident issue
    def _refuse(self, ticker: Ticker, message: str, now: datetime) -> None:
        """Keep the running config; log the error; one incident issue while it lasts."""
        self.refused = message
        self.counts["refused"] += 1
        log.error(
            "config.reload_refused",
            error=message,
            keeps="the running config",
            config_hash=ticker.config_hash,
        )
        repo = ticker.decision_repo
        if repo is None:
            return
        body = (
            "## capdaemon refused a config change\n\n"
            f"`{md(str(self.config_dir))}` was edited, and the new config does not load:\n\n"
            f"```\n{message[:2000]}\n```\n\n"
            "The daemon keeps running on the last good config (hash "
            f"`{ticker.config_hash}`). Fix the file named above; the next tick reads "
            "it again and closes this issue. It is not a circuit-breaker incident.\n"
        )
        try:
            ticker.forge.ensure_issue(
                repo,
                dict(ISSUE_MARKER),
                "Config change refused: the daemon runs on the last good config",
                body,
                [Label.INCIDENT.value],
                reopen=True,
            )
        except ForgeError as exc:
            log.warning("config.incident_issue_failed", error=str(exc)[:200])

    def _close_stale_issue(self, ticker: Ticker, now: datetime, *, force: bool = False) -> None:
        """Close the refused-config issue once the running config is good (also one left open
        by an earlier process: checked once per process)."""
        if self.refused is not None or (self._issue_checked and not force):
            return
        self._issue_checked = True
        repo = ticker.decision_repo
        if repo is None:
            return
        try:
            found = ticker.forge.find_issue(repo, dict(ISSUE_MARKER))
            if found is not None and found.state == "open":
                ticker.forge.close_issue(
                    repo,
                    found.number,
                    f"Fixed: the config loads again (hash `{ticker.config_hash}`).",
                )
                log.info("config.incident_closed", issue=found.number)
        except ForgeError as exc:
            log.warning("config.incident_issue_failed", error=str(exc)[:200])

"""Start-up and the scheduler: config, credentials, the state lock, the Forge, and the tick job."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import signal
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capdaemon.config import Config, GitHubConfig
from capdaemon.daemon.notify import Notifier
from capdaemon.logging import get_logger
from capdaemon.state import StateLock

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2


class CredentialsError(RuntimeError):
    """No usable GitHub credentials (the message says where to put them, never their value)."""


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """--config, --state, --base-url and the log options shared by `run` and `tick`."""
    from capdaemon.commands._common import add_config_arg, add_state_arg

    add_config_arg(parser)
    add_state_arg(parser)
    parser.add_argument("--base-url", help="GitHub API base URL override (e.g. the sandbox's)")
    parser.add_argument("--log-format", choices=("auto", "json", "console"), default="auto")
    parser.add_argument("--log-level", default="info")


def key_file_path(name: str, env: Mapping[str, str]) -> Path:
    """The App key path: a relative name is looked up in $CREDENTIALS_DIRECTORY first."""
    path = Path(name)
    creds = env.get("CREDENTIALS_DIRECTORY")
    if not path.is_absolute() and creds and (Path(creds) / path).exists():
        return Path(creds) / path
    return path


def github_credentials(
    gh: GitHubConfig, env: Mapping[str, str] | None = None, config_dir: Path | None = None
) -> tuple[str | None, bytes | None]:
    """(token, App private key PEM) for the Forge: App id + key file, else the token env var."""
    env = os.environ if env is None else env
    if gh.app_id is not None and gh.private_key_file:
        path = key_file_path(gh.private_key_file, env)
        if not path.is_absolute() and config_dir is not None and not path.exists():
            path = config_dir / path
        try:
            return None, path.read_bytes()
        except OSError as exc:
            raise CredentialsError(
                f"github.private_key_file: cannot read the App key {path}: {exc.strerror}"
            ) from exc
    token = env.get(gh.token_env, "")
    if not token:
        raise CredentialsError(
            f"no GitHub credentials: set github.app_id + github.private_key_file in capdaemon.yml, "
            f"or the environment variable {gh.token_env}"
        )
    return token, None


def is_loopback(base_url: str) -> bool:
    """True for a GitHub on this machine (the sandbox): no write pacing is needed there."""
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def with_base_url(config: Config, base_url: str | None) -> Config:
    """The config with its GitHub base URL replaced (the sandbox, GitHub Enterprise)."""
    if not base_url:
        return config
    return dataclasses.replace(config, github=dataclasses.replace(config.github, base_url=base_url))


@contextlib.contextmanager
def open_ticker(
    config: Config,
    state_dir: Path,
    *,
    rules: tuple[Any, ...] = (),
    env: Mapping[str, str] | None = None,
    heartbeat: Any = None,
    forge: Any = None,
) -> Iterator[Any]:
    """Lock the state dir, read credentials, build the Forge (unless given) and the Ticker.

    Raises LockedError (another daemon holds the dir), StateError (a corrupt state file,
    named), CredentialsError. The lock is held until the context exits.
    """
    from capdaemon.daemon.tick import Ticker

    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    with StateLock(state_dir):
        if forge is not None:
            yield Ticker(config, state_dir, forge, rules=rules, env=env, heartbeat=heartbeat)
            return
        from capdaemon.forge import tokencache
        from capdaemon.forge.client import Forge

        config_dir = Path(config.config_dir) if config.config_dir else None
        token, key_pem = github_credentials(config.github, env, config_dir)
        built = Forge.from_config(
            config.github,
            token=token,
            key_pem=key_pem,
            write_interval=0.0 if is_loopback(config.github.base_url) else 1.0,
        )
        # a cron tick starts where the last process left off: same token, same ETags
        loaded = tokencache.load(built, state_dir, config.github.base_url)
        try:
            yield Ticker(config, state_dir, built, rules=rules, env=env, heartbeat=heartbeat)
        finally:
            if not loaded.unreadable:
                try:
                    tokencache.save(built, state_dir, config.github.base_url)
                except OSError as exc:
                    get_logger("capdaemon.daemon").warning(
                        "forge.cache_not_saved", error=exc.strerror
                    )
            built.close()


def serve(ticker: Any, *, tick_seconds: float, notifier: Notifier | None = None) -> int:
    """Run the tick every `tick_seconds` on one BlockingScheduler until SIGTERM/SIGINT (exit 0).

    The signal handler asks the tick to stop after its current step and stops the scheduler;
    the main thread then waits for the running tick to return. A fatal tick error (corrupt
    state) stops the daemon with exit 1; other tick errors are logged and retried next tick.
    """
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.blocking import BlockingScheduler

    from capdaemon.daemon.digest_job import add_digest_job
    from capdaemon.state import StateError

    log = get_logger("capdaemon.daemon")
    notifier = notifier or Notifier()
    outcome = {"code": EXIT_OK}
    sched = BlockingScheduler(timezone=UTC, executors={"default": ThreadPoolExecutor(1)})

    def stop(code: int) -> None:
        outcome["code"] = max(outcome["code"], code)
        ticker.request_stop()
        if sched.running:
            sched.shutdown(wait=False)

    def job() -> None:
        try:
            ticker.tick()
        except StateError as exc:
            log.error("tick.fatal", error=str(exc))
            stop(EXIT_FAILED)
        except Exception as exc:  # a failed tick is retried next interval; the daemon stays up
            log.exception("tick.failed", error=f"{type(exc).__name__}: {exc}")
        notifier.watchdog()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("daemon.signal", signal=signal.Signals(signum).name)
        notifier.stopping()
        stop(EXIT_OK)

    sched.add_job(
        job,
        "interval",
        seconds=tick_seconds,
        id="tick",
        max_instances=1,
        coalesce=True,
        misfire_grace_time=max(1, int(tick_seconds)),
        next_run_time=datetime.now(UTC),
    )
    add_digest_job(sched, ticker)  # 09:00 local CronTrigger, generous misfire grace, coalesced
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        notifier.ready(status=f"ticking every {tick_seconds:g} s")
        log.info("daemon.start", tick_seconds=tick_seconds, pid=os.getpid())
        sched.start()
        ticker.wait_idle()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    log.info("daemon.stop", exit_code=outcome["code"])
    return outcome["code"]


def run_once(ticker: Any) -> dict[str, Any]:
    """One tick, in this thread (what `capdaemon tick --once` and the demo do)."""
    return ticker.tick().to_dict()


def start(args: argparse.Namespace, *, daemon: bool) -> int:
    """The body of `capdaemon run` (daemon=True) and `capdaemon tick --once` (daemon=False)."""
    import json
    import sys

    from capdaemon.commands._common import CLIError, load_config_and_rules, state_dir
    from capdaemon.logging import configure_logging
    from capdaemon.state import LockedError, StateError

    configure_logging(args.log_format, args.log_level)
    log = get_logger("capdaemon.daemon")
    notifier = Notifier()
    try:
        config, rules = load_config_and_rules(args)
        config = with_base_url(config, args.base_url)
        with open_ticker(
            config, state_dir(args), rules=rules, heartbeat=notifier.watchdog
        ) as ticker:
            if not daemon:
                print(json.dumps(run_once(ticker), sort_keys=True))
                return EXIT_OK
            seconds = args.tick_seconds or config.schedule.tick_seconds
            return serve(ticker, tick_seconds=seconds, notifier=notifier)
    except LockedError as exc:
        log.error("daemon.locked", error=str(exc))
        print(f"capdaemon: {exc}; refusing to start a second daemon", file=sys.stderr)
        return EXIT_FAILED
    except StateError as exc:
        log.error("daemon.state_corrupt", error=str(exc))
        print(f"capdaemon: corrupt state, refusing to start: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except (CLIError, CredentialsError) as exc:
        log.error("daemon.config_invalid", error=str(exc))
        print(f"capdaemon: {exc}", file=sys.stderr)
        return EXIT_CONFIG

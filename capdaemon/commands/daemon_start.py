"""Start-up of `capdaemon run` and `capdaemon tick --once`: arguments, config, one-line failures."""

from __future__ import annotations

import argparse
import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.commands import ticksummary
from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    config_dir,
    load_config_and_rules,
    state_dir,
)
from capdaemon.config import Config
from capdaemon.daemon.service.notify import Notifier
from capdaemon.daemon.service.observe import Endpoints, Observed
from capdaemon.daemon.service.preflight import CredentialsError, UnreachableError, repo_problems
from capdaemon.daemon.service.reload import ConfigRefused, Reloader
from capdaemon.daemon.service.runner import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STATE,
    held_stop_signals,
    open_ticker,
    run_once,
    serve,
    with_base_url,
)
from capdaemon.logging import LOG_LEVELS, configure_logging, get_logger
from capdaemon.state import LockedError, StateError
from capdaemon.stateformat import StateFormatError

if TYPE_CHECKING:
    from capdaemon.daemon.core.tick import Ticker


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """--config, --state, --base-url and the log options shared by `run` and `tick`."""
    add_config_arg(parser)
    add_state_arg(parser)
    parser.add_argument("--base-url", help="GitHub API base URL override (e.g. the sandbox's)")
    parser.add_argument("--log-format", choices=("auto", "json", "console"), default="auto")
    parser.add_argument(
        "--log-level",
        type=str.lower,
        choices=LOG_LEVELS,
        default="info",
        help="the least severe level logged (default info)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of failures")


def _reloader(args: argparse.Namespace) -> Reloader:
    """The config directory's watcher for `capdaemon run` (same loading as at start)."""

    def load(directory: Path) -> tuple[Config, tuple[Any, ...]]:
        ns = argparse.Namespace(config=str(directory))
        try:
            config, rules = load_config_and_rules(ns, required=True)
        except CLIError as exc:
            raise ConfigRefused(str(exc)) from None
        return with_base_url(config, args.base_url), rules

    return Reloader(config_dir(args)[0], load=load, check_repos=repo_problems)


def _endpoints(ticker: Ticker, reloader: Reloader | None, fixed: float | None) -> Endpoints:
    """`/healthz` and `/metrics` on `metrics.listen` (nothing when it is not set); a
    CLIError naming the key when the address cannot be bound."""
    address = ticker.config.metrics.address

    def interval() -> float:
        return fixed or ticker.config.schedule.tick_seconds

    observed = Observed(ticker, reloader, interval, started=datetime.now(UTC))
    try:
        return Endpoints(observed, address)
    except OSError as exc:
        listen = ticker.config.metrics.listen
        raise CLIError(f"metrics.listen: cannot listen on {listen}: {exc.strerror}") from None


def _os_failure(exc: OSError, state: Path) -> tuple[str, str, int]:
    """The event, the line and the exit status for a file that could not be used."""
    if exc.filename is None:
        return "daemon.failed", f"{type(exc).__name__}: {exc}", EXIT_FAILED
    path = Path(str(exc.filename))
    in_state = path == state or state in path.parents
    what = f"state directory {state}" if in_state else "file"
    where = "" if path == state else f"cannot use {path}: "
    return (
        "daemon.state_unwritable" if in_state else "daemon.file_error",
        f"{what}: {where}{exc.strerror or exc}",
        EXIT_STATE if in_state else EXIT_FAILED,
    )


def start(args: argparse.Namespace, *, daemon: bool) -> int:
    """The body of `capdaemon run` (daemon=True) and `capdaemon tick --once` (daemon=False).

    Every failure is one line on stderr (and one `daemon.*` event): exit 2 for configuration
    and credentials, 3 for a corrupt or unwritable state directory, 1 for anything else.
    Nothing is written to the state directory before the credentials are accepted.
    """
    import sys

    fmt = configure_logging(args.log_format, args.log_level)
    log = get_logger("capdaemon.daemon")
    notifier = Notifier()
    state = state_dir(args, check=False)  # open_ticker checks (and stamps) its format

    def fail(event: str, message: str, code: int) -> int:
        """One line: a JSON event when logs are JSON (the journal), else plain text."""
        if fmt == "json":
            log.error(event, error=message, exit_code=code)
        else:
            print(f"capdaemon: {message}", file=sys.stderr)
        return code

    try:
        config, rules = load_config_and_rules(args, required=True)
        config = with_base_url(config, args.base_url)
        reloader = _reloader(args) if daemon else None
        held: contextlib.AbstractContextManager[list[int]] = (
            held_stop_signals() if daemon else contextlib.nullcontext([])
        )
        with (
            held as stopped_early,
            open_ticker(
                config,
                state,
                rules=rules,
                heartbeat=notifier.watchdog,
                verify=True,
                wait_for_github=daemon,
                reloader=reloader,
            ) as ticker,
        ):
            if not daemon:
                print(ticksummary.render(run_once(ticker), json_asked=args.json))
                return EXIT_OK
            seconds = args.tick_seconds or config.schedule.tick_seconds
            with _endpoints(ticker, reloader, args.tick_seconds):
                return serve(
                    ticker,
                    tick_seconds=seconds,
                    notifier=notifier,
                    reloader=reloader,
                    fixed_interval=bool(args.tick_seconds),
                    stopped_early=stopped_early,
                )
    except LockedError as exc:
        return fail("daemon.locked", f"{exc}; refusing to start a second daemon", EXIT_FAILED)
    except StateFormatError as exc:
        return fail("daemon.state_format", f"refusing to start: {exc}", EXIT_STATE)
    except StateError as exc:
        return fail("daemon.state_corrupt", f"corrupt state, refusing to start: {exc}", EXIT_STATE)
    except (CLIError, CredentialsError) as exc:
        return fail("daemon.config_invalid", str(exc), EXIT_CONFIG)
    except UnreachableError as exc:
        return fail("daemon.unreachable", str(exc), EXIT_FAILED)
    except OSError as exc:
        if getattr(args, "debug", False):
            raise
        return fail(*_os_failure(exc, state))
    except Exception as exc:
        if getattr(args, "debug", False):
            raise
        text = " ".join(str(exc).split())[:300]
        return fail("daemon.failed", f"{type(exc).__name__}: {text} (--debug for details)", 1)

"""The CLI helpers of every command: --state/--config defaults, the one error line format
(`capdaemon CMD: error: MESSAGE`), config and user rules.

`capdaemon scope-guard` imports this module before every edit an agent makes: it imports no
typing, config or yaml at module level.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from capdaemon.quoting import printable as printable  # the one home; re-exported for commands
from capdaemon.stateformat import check_format

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings anyway
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from capdaemon.config import Config

DEFAULT_STATE_DIR = "bot-state"
DEFAULT_CONFIG_DIR = "config"
STATE_ENV = "CAPDAEMON_STATE"
CONFIG_ENV = "CAPDAEMON_CONFIG"


class CLIError(Exception):
    """A user-facing failure: printed as one line, exit code `code` (2 = bad input)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def add_state_arg(parser: argparse.ArgumentParser) -> None:
    """--state DIR (default $CAPDAEMON_STATE or ./bot-state)."""
    parser.add_argument(
        "--state",
        metavar="DIR",
        default=None,
        help=f"state directory (default ${STATE_ENV} or ./{DEFAULT_STATE_DIR})",
    )


def add_config_arg(parser: argparse.ArgumentParser) -> None:
    """--config DIR (default $CAPDAEMON_CONFIG or ./config; built-in defaults when absent)."""
    parser.add_argument(
        "--config",
        metavar="DIR",
        default=None,
        help=f"config directory (default ${CONFIG_ENV} or ./{DEFAULT_CONFIG_DIR}; commands "
        "that act on GitHub need one: `capdaemon init` makes it)",
    )


def add_unused_config_arg(parser: argparse.ArgumentParser) -> None:
    """--config DIR on a command that reads only the state directory: accepted like every
    other command's (one command line works for all), checked to exist when given, not read."""
    parser.add_argument(
        "--config",
        metavar="DIR",
        default=None,
        help="accepted as by the other commands; this one reads only the state directory",
    )


def unused_config_problem(args: argparse.Namespace) -> str | None:
    """Why an explicitly given --config cannot be right (it does not exist), else None."""
    given = getattr(args, "config", None)
    if given and not Path(given).is_dir():
        return f"config directory {given} does not exist"
    return None


def state_dir(args: argparse.Namespace, *, check: bool = True) -> Path:
    """The state directory chosen by --state, $CAPDAEMON_STATE, or ./bot-state. With `check`,
    StateFormatError when it holds a newer format than this capdaemon reads (stateformat)."""
    chosen = Path(getattr(args, "state", None) or os.environ.get(STATE_ENV) or DEFAULT_STATE_DIR)
    if check:
        check_format(chosen)
    return chosen


def state_dir_problem(path: Path) -> str | None:
    """Why `path` cannot be a state directory to read (missing, not a directory), else None."""
    if not path.exists():
        return f"state directory {path} does not exist (--state DIR or ${STATE_ENV})"
    if not path.is_dir():
        return f"state directory {path} is not a directory"
    return None


def config_dir(args: argparse.Namespace) -> tuple[Path, bool]:
    """(config directory, whether it was named explicitly by --config or $CAPDAEMON_CONFIG)."""
    explicit = getattr(args, "config", None) or os.environ.get(CONFIG_ENV)
    return Path(explicit or DEFAULT_CONFIG_DIR), bool(explicit)


def no_config_message(path: Path) -> str:
    """The one line of a command that acts on GitHub when there is no config directory."""
    return (
        f"no config directory: {path} does not exist; name one with --config DIR or "
        f"${CONFIG_ENV}, or create one with `capdaemon init`"
    )


def load_config_from_args(args: argparse.Namespace, *, required: bool = False) -> Config:
    """Load and validate the config; CLIError on a bad config or an explicit dir that is missing
    (`required`: also when the default ./config is missing — commands that act on GitHub)."""
    from capdaemon.config import ConfigError, load_config  # lazily: scope-guard imports this module

    path, explicit = config_dir(args)
    if explicit and not path.is_dir():
        raise CLIError(f"config directory {path} does not exist")
    if required and not path.is_dir():
        raise CLIError(no_config_message(path))
    try:
        return load_config(path)
    except ConfigError as exc:
        raise CLIError(f"config error: {exc}") from None


def load_user_rules_for(config: Config) -> tuple[Any, ...]:
    """The user rules under <config>/skills/classifier; CLIError naming file and line if broken."""
    from capdaemon.config import user_rules_dir  # lazily: scope-guard imports this module

    rules_dir = user_rules_dir(config)
    if rules_dir is None or not rules_dir.is_dir():
        return ()
    try:
        # lazily: scope-guard imports this module
        from capdaemon.classify.user_rules import load_user_rules
    except ImportError as exc:
        raise CLIError(f"cannot load user rules from {rules_dir}: {exc}") from None
    try:
        return tuple(load_user_rules(rules_dir))
    except Exception as exc:  # LoadError (or anything a broken rule file raises) → one line
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CLIError(f"user rule error: {msg}") from None


def load_config_and_rules(
    args: argparse.Namespace, *, required: bool = False
) -> tuple[Config, tuple[Any, ...]]:
    """Config plus its user rules, or CLIError (`required`: see load_config_from_args)."""
    config = load_config_from_args(args, required=required)
    return config, load_user_rules_for(config)


def error(prog: str, message: str) -> None:
    """Print one error line to stderr: `capdaemon CMD: error: MESSAGE`."""
    one_line = " ".join(str(message).split("\n"))
    print(f"capdaemon {prog}: error: {one_line}", file=sys.stderr)


def parse_now(text: str | None) -> datetime:
    """--now ISO (aware; `Z` allowed) → datetime; None → the current UTC time."""
    from datetime import UTC, datetime

    # lazily: scope-guard imports this module
    from capdaemon.timefmt import TimestampError, parse_utc

    if not text:
        return datetime.now(UTC)
    try:
        return parse_utc(text, "--now")
    except TimestampError as exc:
        raise CLIError(str(exc)) from None


def command_inputs(args: argparse.Namespace) -> tuple[Config, datetime, Path]:
    """(config, now, state dir) of a command with --config, --now and --state."""
    return load_config_from_args(args), parse_now(args.now), state_dir(args)

"""Small helpers shared by the capability commands (state dir argument, usage errors)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DEFAULT_STATE = "bot-state"


def add_state_arg(parser: argparse.ArgumentParser) -> None:
    """`--state DIR` (default $CAPDAEMON_STATE or ./bot-state)."""
    parser.add_argument(
        "--state",
        metavar="DIR",
        help="state directory (default: $CAPDAEMON_STATE or ./bot-state)",
    )


def state_dir(args: argparse.Namespace) -> Path:
    """The state directory chosen by `--state`, the environment, or the default."""
    return Path(args.state or os.environ.get("CAPDAEMON_STATE") or DEFAULT_STATE)


def state_dir_problem(path: Path) -> str | None:
    """Why `path` cannot be a state directory to read (missing, not a directory), else None."""
    if not path.exists():
        return f"state directory {path} does not exist (--state DIR or $CAPDAEMON_STATE)"
    if not path.is_dir():
        return f"state directory {path} is not a directory"
    return None


def err(prog: str, message: str) -> None:
    """Print one `capdaemon <prog>: message` line on stderr."""
    print(f"capdaemon {prog}: {message}", file=sys.stderr)

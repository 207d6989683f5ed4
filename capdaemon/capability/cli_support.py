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


def err(prog: str, message: str) -> None:
    """Print one `capdaemon <prog>: message` line on stderr."""
    print(f"capdaemon {prog}: {message}", file=sys.stderr)

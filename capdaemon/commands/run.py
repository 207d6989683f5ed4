"""`capdaemon run`: the daemon — one BlockingScheduler ticking until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import math

from capdaemon.commands.daemon_start import add_common_arguments, start


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon run`."""
    add_common_arguments(parser)
    parser.add_argument(
        "--tick-seconds",
        type=positive_seconds,
        help="tick interval in seconds, more than 0 (default: schedule.tick_seconds, 60)",
    )


def positive_seconds(text: str) -> float:
    """--tick-seconds: a finite number of seconds above 0 (0 would tick without pause)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the tick interval must be more than 0 seconds")
    return value


def run(args: argparse.Namespace) -> int:
    """Lock the state directory and tick on the schedule; exit 0 on SIGTERM/SIGINT."""
    return start(args, daemon=True)

"""`capdaemon run`: the daemon — one BlockingScheduler ticking until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse

from capdaemon.commands.daemon_start import add_common_arguments, start


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon run`."""
    add_common_arguments(parser)
    parser.add_argument(
        "--tick-seconds", type=float, help="tick interval (default: schedule.tick_seconds, 60)"
    )


def run(args: argparse.Namespace) -> int:
    """Lock the state directory and tick on the schedule; exit 0 on SIGTERM/SIGINT."""
    return start(args, daemon=True)

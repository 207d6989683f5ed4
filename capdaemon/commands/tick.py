"""`capdaemon tick --once`: run exactly one tick and exit (cron-friendly; what the tests drive).

The tick first acts on the Telegram taps pressed since the last one (no long poll), so under
cron a tap is acted on, and what it approves merged, by the next cron tick.
"""

from __future__ import annotations

import argparse

from capdaemon.commands.daemon_start import add_common_arguments, start


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon tick`."""
    add_common_arguments(parser)
    parser.add_argument(
        "--once",
        action="store_true",
        default=True,
        help="run one tick and exit, acting on Telegram taps pressed since the last one "
        "(always; `capdaemon run` ticks on a schedule)",
    )


def run(args: argparse.Namespace) -> int:
    """One tick under the state lock; prints a one-line JSON summary on stdout."""
    return start(args, daemon=False)

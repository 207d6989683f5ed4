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
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON line even on a terminal (off a terminal it always is)",
    )


def run(args: argparse.Namespace) -> int:
    """One tick under the state lock; prints its summary on stdout: one JSON line when stdout
    is not a terminal (or with --json), a few plain lines on a terminal."""
    return start(args, daemon=False)

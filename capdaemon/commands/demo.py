"""`capdaemon demo`: the whole thing on a throw-away sandbox; exit 0 only if every outcome held."""

from __future__ import annotations

import argparse
from pathlib import Path

from capdaemon.commands._common import error
from capdaemon.demo.extra import require_sandbox


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon demo`."""
    parser.add_argument("--dir", type=Path, help="work folder (default: a new temporary folder)")
    parser.add_argument(
        "--keep-running", action="store_true", help="keep the sandbox up afterwards (Ctrl-C stops)"
    )


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when every expected outcome happened, 1 otherwise (2: no sandbox)."""
    if not require_sandbox("capdaemon demo"):
        return 2
    from capdaemon.demo.run import run_demo  # lazily: demo/ needs the optional sandbox extra

    try:
        result = run_demo(args.dir, keep_running=args.keep_running)
    except (OSError, RuntimeError) as exc:  # git missing, a port, a step git refused
        kept = f"; its files are in {args.dir}" if args.dir else "; its temporary folder is removed"
        error("demo", f"{type(exc).__name__}: {exc}{kept}")
        return 1
    return 0 if result.ok else 1

"""`capdaemon sandbox ...`: the GitHub-compatible sandbox server (capdaemon.sandbox.cli_main)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    """Everything after `sandbox` is passed through to the sandbox's own parser."""
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="e.g. serve --root DIR [--port N]")


def run(args: argparse.Namespace) -> int:
    """Run `capdaemon.sandbox.cli_main` with the remaining arguments."""
    from capdaemon.sandbox import cli_main

    return cli_main(list(args.argv))

"""`capdaemon sandbox serve --root DIR [--port N] [--seed FILE]`: the GitHub-compatible sandbox."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    """The sandbox's own subcommands and options (so `--help` lists them)."""
    from capdaemon.sandbox.cli import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; 2 on a bad seed or store, 1 when it cannot start."""
    from capdaemon.sandbox.cli import serve_args

    return serve_args(args)

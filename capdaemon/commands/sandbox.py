"""`capdaemon sandbox serve --root DIR [--port N] [--seed FILE]`: the GitHub-compatible sandbox."""

from __future__ import annotations

import argparse

from capdaemon.demo.extra import missing_sandbox_module, require_sandbox

PROG = "capdaemon sandbox"


def configure(parser: argparse.ArgumentParser) -> None:
    """The sandbox's own subcommands and options (so `--help` lists them)."""
    if missing_sandbox_module() is not None:  # run() explains; accept any arguments meanwhile
        parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        return
    from capdaemon.demo.serve import add_arguments  # lazily: the optional sandbox extra

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; 2 on a bad seed or store or without the sandbox extra."""
    if not require_sandbox(PROG):
        return 2
    from capdaemon.demo.serve import serve_args  # lazily: the optional sandbox extra

    return serve_args(args)

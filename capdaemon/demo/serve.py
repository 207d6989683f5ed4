"""The body of `capdaemon sandbox serve`, behind the lazy import of the optional sandbox."""

from __future__ import annotations

from ghsandbox.cli import add_arguments, serve_args

__all__ = ["add_arguments", "serve_args"]

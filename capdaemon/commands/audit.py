"""`capdaemon audit verify`: check both hash-chained audit logs end to end."""

from __future__ import annotations

import argparse
import sys

from capdaemon.commands._common import add_state_arg, error, state_dir


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon audit`."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    verify = sub.add_parser("verify", help="verify both logs (seq, prev links, hashes, tail)")
    add_state_arg(verify)


def run(args: argparse.Namespace) -> int:
    """`audit verify`: exit 0 when both logs are whole, 1 naming the first bad line."""
    from capdaemon.audit import log_paths, verify

    sdir = state_dir(args)
    if not sdir.is_dir():
        error("audit", f"state directory {sdir} does not exist")
        return 2
    status = 0
    for path in log_paths(sdir):
        try:
            report = verify(path)
        except Exception as exc:  # e.g. a corrupt .head file: report it, never crash
            print(f"{path}: cannot verify: {exc}")
            status = 1
            continue
        if report.ok:
            print(
                f"{path}: ok, {report.count} entries"
                + (" (no log yet)" if not path.exists() else "")
            )
        else:
            print(f"{path}:{report.line}: {report.reason}")
            status = 1
    if status:
        print("audit verify: FAILED — the logs were altered or truncated", file=sys.stderr)
    return status

"""`capdaemon audit verify`: check both hash-chained audit logs end to end, and their anchors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from capdaemon.anchors import AnchorError, check_anchors, find_anchors, parse_anchor
from capdaemon.audit import log_paths, verify
from capdaemon.commands._common import (
    CLIError,
    add_state_arg,
    add_unused_config_arg,
    error,
    state_dir,
    unused_config_problem,
)
from capdaemon.filenames import DIGEST_DIR


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon audit`."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    verify = sub.add_parser(
        "verify",
        help="verify both logs (seq, prev links, hashes, tail) and any anchors given",
        description="Exit 0 when both logs are whole and every anchor holds, 1 when not, "
        "2 on bad input. An anchor (published in every daily digest) pins the entry a log "
        "had at seq N to hash H; a log rebuilt or cut on the host no longer holds it.",
    )
    add_state_arg(verify)
    add_unused_config_arg(verify)
    verify.add_argument(
        "--anchor",
        action="append",
        default=[],
        metavar='"FILE seq=N hash=H"',
        help="an anchor line (the `audit-anchor:` prefix is optional); repeatable",
    )
    verify.add_argument(
        "--anchors-from",
        action="append",
        default=[],
        metavar="FILE",
        help="read every `audit-anchor:` line from a text file (a saved digest issue body, "
        "a mail; `-` for stdin); repeatable",
    )
    verify.add_argument(
        "--anchors-from-digests",
        action="store_true",
        help="also check the anchors of every digest in STATE/digests/*.md (these live on the "
        "host: an anchor saved elsewhere is the stronger check)",
    )


def _read_text(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"--anchors-from {name}: cannot read: {exc}") from None


def _anchors(args: argparse.Namespace, sdir: Path) -> list[Any]:
    """Every anchor the arguments name, parsed strictly (CLIError naming the argument)."""
    out: list[Any] = []

    def add(found: list[Any]) -> None:
        out.extend(a for a in found if a not in out)

    for text in args.anchor:
        try:
            add([parse_anchor(text, source="--anchor")])
        except AnchorError as exc:
            raise CLIError(f"--anchor {text[:100]!r}: {exc}") from None
    for name in args.anchors_from:
        try:
            found = find_anchors(_read_text(name), source=name)
        except AnchorError as exc:
            raise CLIError(f"--anchors-from {name}: {exc}") from None
        if not found:
            raise CLIError(f"--anchors-from {name}: no `audit-anchor:` lines in it")
        add(found)
    if args.anchors_from_digests:
        found = []
        for path in sorted((sdir / DIGEST_DIR).glob("*.md")):
            try:
                found += find_anchors(path.read_text(encoding="utf-8"), source=str(path))
            except (OSError, UnicodeDecodeError, AnchorError) as exc:
                raise CLIError(f"--anchors-from-digests: {path}: {exc}") from None
        if not found:
            raise CLIError(f"--anchors-from-digests: no anchors in {sdir / DIGEST_DIR}/*.md")
        add(found)
    return out


def run(args: argparse.Namespace) -> int:
    """`audit verify`: exit 0 when both logs are whole and all anchors hold, 1 naming the
    first bad line or the anchor that fails, 2 on bad input."""
    sdir = state_dir(args)
    problem = unused_config_problem(args)
    if problem or not sdir.is_dir():
        error("audit", problem or f"state directory {sdir} does not exist")
        return 2
    try:
        anchors = _anchors(args, sdir)
    except CLIError as exc:
        error("audit", str(exc))
        return exc.code
    status = 0
    for path in log_paths(sdir):
        status |= _verify_one(path, [a for a in anchors if a.log == path.name])
    if status:
        print("audit verify: FAILED — the logs were altered or truncated", file=sys.stderr)
    return status


def _verify_one(path: Path, mine: list[Any]) -> int:
    """Verify one log and the anchors that name it, printing what was found; 1 when bad."""
    status = 0
    try:
        report = verify(path)
    except Exception as exc:  # e.g. a corrupt .head file: report it, never crash
        print(f"{path}: cannot verify: {exc}")
        status = 1
    else:
        if report.ok:
            print(
                f"{path}: ok, {report.count} entries"
                + (" (no log yet)" if not path.exists() else "")
            )
        else:
            print(f"{path}:{report.line}: {report.reason}")
            status = 1
    if not mine:
        return status
    failures = check_anchors(path, mine)
    for reason in failures:
        print(reason)
    if failures:
        return 1
    print(f"{path}: {len(mine)} anchor(s) hold, up to seq {max(a.seq for a in mine)}")
    return status

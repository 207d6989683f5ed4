"""`capdaemon why OWNER/REPO#N`: the story of one PR, told from both audit logs."""

from __future__ import annotations

import argparse
import re

from capdaemon.audit import story
from capdaemon.commands._common import (
    add_state_arg,
    add_unused_config_arg,
    error,
    printable,
    state_dir,
    state_dir_problem,
    unused_config_problem,
)
from capdaemon.story import tell

_PR_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+)#([0-9]+)$")


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon why`."""
    parser.add_argument("pr", metavar="OWNER/REPO#N", help="the pull request")
    add_state_arg(parser)
    add_unused_config_arg(parser)


def run(args: argparse.Namespace) -> int:
    """Print the PR's story; exit 1 when the logs know nothing of it, 2 on a bad argument,
    3 when a log has a malformed line (named on stderr; the story is told without it)."""
    m = _PR_RE.match(args.pr.strip())
    if not m:
        error("why", f"{args.pr!r} is not OWNER/REPO#N")
        return 2
    pr = f"{m.group(1)}#{int(m.group(2))}"
    sdir = state_dir(args)
    problem = unused_config_problem(args) or state_dir_problem(sdir)
    if problem:
        error("why", problem)
        return 2
    bad: list[str] = []
    records = story(sdir, pr, bad.append)
    for where in bad:
        error("why", f"{where} (line skipped: the log is corrupt; see `capdaemon audit verify`)")
    if not records:
        error("why", f"nothing is known of {pr} in {sdir}")
        return 1
    print(f"{pr}: {len(records)} record(s)")
    for line in tell(records):
        print(printable(line))
    return 3 if bad else 0

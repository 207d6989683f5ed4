"""`capdaemon why OWNER/REPO#N`: the story of one PR, told from both audit logs."""

from __future__ import annotations

import argparse
import re
from typing import Any

from capdaemon.commands._common import add_state_arg, error, printable, state_dir

_PR_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+)#([0-9]+)$")
_SKIP = frozenset({"ts", "seq", "prev", "hash", "pr", "action"})


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon why`."""
    parser.add_argument("pr", metavar="OWNER/REPO#N", help="the pull request")
    add_state_arg(parser)


def _short(sha: Any) -> str:
    return str(sha)[:10] if sha else "?"


def _rules_that_voted(rules: list[dict[str, Any]]) -> str:
    parts = []
    for r in rules or ():
        if not isinstance(r, dict):
            continue
        if r.get("result") == "error":
            parts.append(f"{r.get('rule')}=ERROR")
        elif r.get("vote"):
            parts.append(f"{r.get('rule')}={r['vote']}")
    return ", ".join(parts) or "none"


def _value(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ", ".join(_value(x) for x in v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def describe(rec: dict[str, Any]) -> list[str]:
    """The lines telling one audit record (classification or action)."""
    ts = str(rec.get("ts", "?"))
    if len(ts) > 20 and ts.endswith("Z"):
        ts = ts[:19] + "Z"  # whole seconds are enough to read a story
    if "action" not in rec and "quadrant" in rec:
        lines = [
            f"{ts}  classified {rec.get('quadrant')} at {_short(rec.get('head_sha'))}"
            f": {rec.get('reasoning', '')}",
            f"{'':22}rules that voted: {_rules_that_voted(rec.get('rules_fired', []))}",
        ]
        for f in rec.get("findings") or ():
            if isinstance(f, dict):
                lines.append(
                    f"{'':22}finding {f.get('severity')} {f.get('validator')}: {f.get('message')}"
                )
        return lines
    action = rec.get("action", "event")
    details = []
    for key in ("who", "by", "actor", "user", "vote", "command", "counted", "reason", "why"):
        if key in rec:
            details.append(f"{key}: {_value(rec[key])}")
    if "head_sha" in rec:
        details.append(f"head {_short(rec['head_sha'])}")
    if "sha" in rec:
        details.append(f"sha {_short(rec['sha'])}")
    shown = {"who", "by", "actor", "user", "vote", "command", "counted", "reason", "why"}
    shown |= {"head_sha", "sha"}
    rest = [f"{k}: {_value(v)}" for k, v in rec.items() if k not in _SKIP and k not in shown]
    line = f"{ts}  {str(action).replace('_', ' ')}"
    if details:
        line += " — " + "; ".join(details)
    lines = [line]
    if rest:
        lines.append(f"{'':22}" + "; ".join(rest))
    return lines


def run(args: argparse.Namespace) -> int:
    """Print the PR's story; exit 1 when the logs know nothing of it, 2 on a bad argument,
    3 when a log has a malformed line (named on stderr; the story is told without it)."""
    from capdaemon.audit import story
    from capdaemon.commands._common import state_dir_problem

    m = _PR_RE.match(args.pr.strip())
    if not m:
        error("why", f"{args.pr!r} is not OWNER/REPO#N")
        return 2
    pr = f"{m.group(1)}#{int(m.group(2))}"
    sdir = state_dir(args)
    problem = state_dir_problem(sdir)
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
    for rec in records:
        for line in describe(rec):
            print(printable(line))
    return 3 if bad else 0

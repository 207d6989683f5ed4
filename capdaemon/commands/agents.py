"""`capdaemon agents`: each agent identity seen, its burn-in clock and status (SPEC 6.4)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    command_inputs,
    error,
)
from capdaemon.decide.burnin import BurnInState, burn_in_raw
from capdaemon.filenames import METRICS_FILE, SAFETY_FILE
from capdaemon.state import StateError, read_json
from capdaemon.timefmt import utc_iso


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon agents`."""
    add_state_arg(parser)
    add_config_arg(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--now", help="ISO time (tests); default: now")


def run(args: argparse.Namespace) -> int:
    """0 (also when no identity was seen yet); 2 on bad input or corrupt state."""
    try:
        config, now, sdir = command_inputs(args)
        safety = read_json(sdir / SAFETY_FILE, None) or {}
        metrics = read_json(sdir / METRICS_FILE, None) or {}
        raw = burn_in_raw(safety, metrics)
        try:
            state = BurnInState.from_json(raw)
        except ValueError as exc:
            raise StateError(str(exc)) from exc
    except CLIError as exc:
        error("agents", str(exc))
        return exc.code
    except StateError as exc:
        error("agents", f"corrupt state: {exc}")
        return 2
    days = config.burn_in_days
    rows: list[dict[str, Any]] = []
    for a in state.agents:
        registered = config.registry.knows(*a.agent_id.split("/", 1))
        rows.append(
            {
                "agent": a.agent_id,
                "registered": registered,
                "status": a.status.value,
                "first_seen": utc_iso(a.first_seen),
                "clock_start": utc_iso(a.clock_start),
                "days_left": round(a.days_left(now, days), 2),
                "rejections": a.rejections,
                "promoted_at": utc_iso(a.promoted_at) if a.promoted_at else None,
            }
        )
    if args.json:
        print(json.dumps(rows, sort_keys=True))
        return 0
    if not rows:
        print("no agent identities seen yet")
        return 0
    _print_table(rows)
    return 0


def _print_table(rows: list[dict[str, Any]]) -> None:
    """One line per agent identity under a header, the numbers lined up on the right."""
    headers = ("agent", "registry", "status", "first seen", "days left", "rejections")
    table = [
        (
            r["agent"],
            "yes" if r["registered"] else "no",
            str(r["status"]).replace("_", "-"),
            r["first_seen"],
            f"{r['days_left']:.1f}",
            str(r["rejections"]),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(headers)]
    right = {4, 5}  # numbers line up on the right
    for row in (headers, *table):
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())

"""`capdaemon breaker status|reset --by LOGIN`: the circuit breaker (SPEC 6.3) from bot-state."""

from __future__ import annotations

import argparse
import json
import sys

from capdaemon.audit import AuditLog, log_paths
from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    command_inputs,
    error,
)
from capdaemon.daemon.safety.breaker import owners_reset
from capdaemon.state import StateError
from capdaemon.stores.safety_state import read_breaker
from capdaemon.timefmt import utc_iso


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon breaker`."""
    sub = parser.add_subparsers(dest="action", required=True)
    status = sub.add_parser("status", help="show the breaker state and incidents in the window")
    status.add_argument("--json", action="store_true", help="print JSON")
    reset = sub.add_parser("reset", help="reset a tripped breaker (owners only; audited)")
    reset.add_argument("--by", required=True, metavar="LOGIN", help="the owner resetting it")
    for p in (status, reset):
        add_state_arg(p)
        add_config_arg(p)
        p.add_argument("--now", help="ISO time (tests); default: now")


def run(args: argparse.Namespace) -> int:
    """0 ok / reset done; 1 refused (not an owner); 2 bad input or unreadable state."""
    from datetime import timedelta

    prog = f"breaker {args.action}"
    try:
        config, now, sdir = command_inputs(args)
        if args.action == "status":
            bf = read_breaker(sdir)
            st = bf.state
            window = st.in_window(now, timedelta(hours=config.breaker.window_hours))
            if args.json:
                print(json.dumps({**bf.to_json(), "in_window": len(window)}, sort_keys=True))
                return 0
            if st.tripped:
                since = utc_iso(st.tripped_at) if st.tripped_at else "an unknown time"
                print(f"breaker: TRIPPED since {since}; no auto-merges")
                if bf.incident_issue:
                    print(f"incident issue: {config.ballot_repo}#{bf.incident_issue['number']}")
            else:
                print("breaker: closed")
                if st.reset_by:
                    at = utc_iso(st.reset_at) if st.reset_at else "an unknown time"
                    print(f"last reset by {st.reset_by} at {at}")
            print(
                f"incidents in the last {config.breaker.window_hours:g} h: {len(window)} "
                f"(trips at {config.breaker.threshold})"
            )
            for i in window:
                print(f"  {utc_iso(i.at)} {i.kind.value} {i.ref} {i.detail}".rstrip())
            return 0
        if not sdir.is_dir():
            raise CLIError(f"state directory {sdir} does not exist")
        owners = {o.lower() for o in config.owners}
        done, message = owners_reset(sdir, args.by, owners, now, AuditLog(log_paths(sdir)[1]))
    except CLIError as exc:
        error(prog, str(exc))
        return exc.code
    except StateError as exc:
        error(prog, f"corrupt state: {exc}")
        return 2
    if not done:
        error(prog, message)
        return 1
    print(message, file=sys.stdout)
    return 0

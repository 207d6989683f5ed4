"""`capdaemon dashboard`: serve the read-only dashboard on loopback, or export it with --out."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    command_inputs,
    error,
)
from capdaemon.dashboard.export import export
from capdaemon.dashboard.readmodel import build
from capdaemon.dashboard.server import ModelCache, is_loopback, make_server, utc_now

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from capdaemon.config import Config


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon dashboard`."""
    add_config_arg(parser)
    add_state_arg(parser)
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080; 0: any free)")
    parser.add_argument(
        "--out", metavar="DIR", help="write the pages as static files to DIR instead of serving"
    )
    parser.add_argument("--now", help="ISO time the pages are built at (tests); default: now")


def run(args: argparse.Namespace) -> int:
    """0 after an export or when the server stops; 2 on bad input."""
    from pathlib import Path

    try:
        config, now, sdir = command_inputs(args)
        if not 0 <= args.port <= 65535:
            raise CLIError(f"--port {args.port} is not a port number (0-65535)")
        if not sdir.is_dir():
            raise CLIError(f"state directory {sdir} does not exist")
    except CLIError as exc:
        error("dashboard", str(exc))
        return exc.code
    if args.out:
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            error("dashboard", f"--out {out} exists and is not a folder")
            return 2
        model = build(sdir, config, now)
        n = export(model, out)
        print(f"wrote {n} files to {out} (open {out / 'index.html'})")
        for p in model.problems:
            print(f"warning: {p.file}: {p.message}")
        return 0
    return _serve(args, config, sdir, now if args.now else None)


def _serve(args: argparse.Namespace, config: Config, sdir: Path, fixed: datetime | None) -> int:
    cache = ModelCache(sdir, config, (lambda: fixed) if fixed is not None else utc_now)
    try:
        server = make_server(cache, args.host, args.port)
    except OSError as exc:
        error("dashboard", f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
        return 2
    port = server.server_address[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    where = (
        "loopback only: this machine"
        if is_loopback(args.host)
        else "WARNING: reachable from other machines, and the dashboard has no login"
    )
    print(
        f"capdaemon dashboard: serving read-only on http://{shown}:{port}/ ({where})",
        flush=True,
    )
    print(f"read model: {cache.model.build_seconds:.2f} s from {sdir}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0

"""The sandbox's command line: `capdaemon sandbox serve --root DIR [--port N] [--seed FILE]`,
and `capdaemon sandbox telegram [--port N] [--token T]` for the Telegram Bot API sandbox
(chats, users and faults are then set through its HTTP admin API)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from .seed import SeedError
from .server import Sandbox
from .store import StoreError
from .telegram import DEFAULT_TOKEN, TelegramSandbox


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``serve --root DIR [--port N] [--seed FILE]`` (shared with `capdaemon sandbox --help`)."""
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the sandbox on 127.0.0.1")
    serve.add_argument(
        "--root", required=True, type=Path, help="state directory (bare repos + state.json)"
    )
    serve.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    serve.add_argument(
        "--seed", type=Path, default=None, help="seed YAML (users, orgs, apps, repos)"
    )
    tg = sub.add_parser("telegram", help="serve the Telegram Bot API sandbox on 127.0.0.1")
    tg.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    tg.add_argument("--token", default=DEFAULT_TOKEN, help="the bot token it accepts")


def cli_main(argv: list[str]) -> int:
    """``capdaemon sandbox serve --root DIR [--port N] [--seed FILE]``: serve until interrupted."""
    parser = argparse.ArgumentParser(
        prog="capdaemon sandbox", description="GitHub-compatible sandbox server"
    )
    add_arguments(parser)
    return serve_args(parser.parse_args(argv))


def serve_args(args: argparse.Namespace) -> int:
    """Serve with parsed `serve` (or `telegram`) arguments until SIGTERM/SIGINT."""
    if args.command == "telegram":
        return _serve_telegram(args)
    try:
        sb = Sandbox.create(args.root, args.seed, args.port)
    except (SeedError, StoreError) as exc:
        print(f"capdaemon sandbox: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"capdaemon sandbox: cannot start: {exc}", file=sys.stderr)
        return 1
    print(sb.base_url, flush=True)

    def _stop(signum: int, frame: Any) -> None:
        threading.Thread(target=sb._server.shutdown, daemon=True).start()

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        sb.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sb._server.sandbox_connections.close_idle()  # type: ignore[attr-defined]
        sb._server.server_close()
        sb.backend.store.close()
    return 0


def _serve_telegram(args: argparse.Namespace) -> int:
    """The Bot API sandbox: its API URL on the first line, then serve until SIGTERM/SIGINT."""
    try:
        tg = TelegramSandbox(token=args.token, port=args.port).start()
    except OSError as exc:
        print(f"capdaemon sandbox telegram: cannot start: {exc}", file=sys.stderr)
        return 1
    print(tg.api_url, flush=True)
    done = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        done.set()

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        tg.stop()
    return 0

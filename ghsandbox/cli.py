"""The sandbox's command line: `capdaemon sandbox serve --root DIR [--port N] [--seed FILE]`,
`capdaemon sandbox sample-seed`, and `capdaemon sandbox telegram [--port N] [--token T]` for
the Telegram Bot API sandbox (chats, users and faults are then set through its admin API)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from .defaultworld import default_seed, describe
from .seed import SeedError, load_seed
from .server import Sandbox
from .store import StoreError
from .telegram import DEFAULT_TOKEN, TelegramSandbox

SAMPLE_SEED = Path(__file__).resolve().parent / "seed-sample.yml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``serve --root DIR [--port N] [--seed FILE]`` (shared with `capdaemon sandbox --help`)."""
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the sandbox on 127.0.0.1")
    serve.add_argument(
        "--root", required=True, type=Path, help="state directory (bare repos + state.json)"
    )
    serve.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    serve.add_argument(
        "--seed",
        type=Path,
        default=None,
        help="seed YAML (users, orgs, apps, repos; `sample-seed` prints a commented sample); "
        "without it: a default world (users alice, bob, agent-1, agent-2, mallory; org acme; "
        "repos acme/widgets and acme/capdaemon-bot; the capdaemon App, its key under --root)",
    )
    tg = sub.add_parser("telegram", help="serve the Telegram Bot API sandbox on 127.0.0.1")
    tg.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    tg.add_argument("--token", default=DEFAULT_TOKEN, help="the bot token it accepts")
    sub.add_parser("sample-seed", help="print a commented sample seed (the seed format)")


def cli_main(argv: list[str]) -> int:
    """``capdaemon sandbox serve --root DIR [--port N] [--seed FILE]``: serve until interrupted."""
    parser = argparse.ArgumentParser(
        prog="capdaemon sandbox", description="GitHub-compatible sandbox server"
    )
    add_arguments(parser)
    return serve_args(parser.parse_args(argv))


def serve_args(args: argparse.Namespace) -> int:
    """Serve with parsed `serve` (or `telegram`) arguments until SIGTERM/SIGINT (or print the
    sample seed)."""
    if args.command == "telegram":
        return _serve_telegram(args)
    if args.command == "sample-seed":
        print(SAMPLE_SEED.read_text(encoding="utf-8"), end="")
        return 0
    key_path: Path | None = None
    try:
        if args.seed is None:
            seed, key_path = default_seed(Path(args.root))
        else:
            seed = load_seed(args.seed)
        sb = Sandbox.create(args.root, seed, args.port)
    except (SeedError, StoreError) as exc:
        print(f"capdaemon sandbox: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"capdaemon sandbox: cannot start: {exc}", file=sys.stderr)
        return 1

    def _stop(signum: int, frame: Any) -> None:
        threading.Thread(target=sb._server.shutdown, daemon=True).start()

    previous = signal.signal(signal.SIGTERM, _stop)  # before anything is printed: a script
    try:  # may stop the server as soon as it has read what it needs
        print(sb.base_url, flush=True)  # the first line, for scripts
        print(f"sandbox GitHub API at {sb.base_url} (state in {args.root})")
        if args.seed is None:
            print("a default world (--seed FILE for your own; `capdaemon sandbox sample-seed`):")
        for line in describe(seed, sb.base_url, key_path):
            print(line)
        print("Ctrl-C (or SIGTERM) stops it; serving the same --root again keeps its data")
        sys.stdout.flush()
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

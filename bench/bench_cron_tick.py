"""Benchmark cron ticks: `capdaemon tick --once` processes, an older tree and this one side by side.

Run: .venv/bin/python bench/bench_cron_tick.py [--repos 2] [--prs 50] [--before REF] [--delay S]
Each tree gets a fresh sandbox (in this process, this tree's code) seeded with `repos` × `prs`
open PRs (a quarter per quadrant, shadow mode, as bench_tick.py), then runs three
`tick --once` processes one after the other, as cron would (mode cron), and then three ticks in
one process, as `capdaemon run` does (mode run): a cold tick, a second tick and a steady tick
over unchanged PRs. This tree runs twice: with the write budget lifted (like for like with the
older tree) and with GitHub's limits (500 writes an hour, 80 a minute), where a cold start is
spread over several ticks. The "before" tree is `git archive REF` (default: the merge base
with main) unpacked in a temporary folder.

Columns: PRs classified, new PRs left for later ticks, wall time, requests the sandbox saw,
requests counted against the rate limit, 304s, installation tokens minted, new TCP connections
accepted, peak RSS of the daemon process. `--delay` adds that many seconds to every request
(the sandbox's `delay` fault) to model the network.

A second table follows each tree through a cold start within GitHub's write limits (500 an
hour, 80 a minute; one `run`-style process, each tick a minute after the last): the tick in
which the first D ballot, every D ballot and the first passive B/C review issue were opened,
the ballots and passive issues open after the first hour (60 ticks), and the ticks run until
no new PR was left (`--order-ticks` caps them).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cron_world as world  # noqa: E402
from bench_tick import pr_files  # noqa: E402

from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402
from ghsandbox.fidelity import CONTENT_CREATING  # noqa: E402

TICKS = ("cold tick (all new)", "second tick (no change)", "steady tick (no change)")


# One daemon process (as `capdaemon run` keeps its Ticker): a tick per line read on stdin.
DAEMON = """
import argparse, json, resource, sys, time
from pathlib import Path
from capdaemon.commands._common import load_config_and_rules
from capdaemon.daemon.service.runner import open_ticker
from capdaemon.logging import configure_logging
configure_logging("json", "error")
config, rules = load_config_and_rules(argparse.Namespace(config=sys.argv[1]))
with open_ticker(config, Path(sys.argv[2]), rules=rules) as ticker:
    for _ in sys.stdin:
        t0 = time.perf_counter()
        report = ticker.tick()
        wall = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        left = getattr(report, "backlog_left", 0)
        out = {"wall": wall, "rss": rss, "classified": len(report.classified), "backlog": left}
        print(json.dumps(out), flush=True)
"""


class Daemon:
    """A `run`-style process from `tree`: `tick()` runs one tick there, (wall s, peak RSS MiB)."""

    def __init__(self, tree: Path, config: Path, state: Path) -> None:
        self.proc = world.spawn(tree, DAEMON, config, state)

    def tick(self) -> tuple[float, float, int, dict[str, Any]]:
        """One tick; (wall, rss, 0, summary) or exit code 1 when the process died."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("tick\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            return 0.0, 0.0, 1, {}
        data = json.loads(line)
        return float(data["wall"]), float(data["rss"]), 0, data

    def close(self) -> None:
        """End the process (closing stdin ends its loop)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(60)


def scenario(
    tree: Path, repos: int, prs: int, keys: Any, delay: float, mode: str, github: dict[str, Any]
) -> list[dict[str, Any]]:
    """Seed a fresh sandbox, run three ticks from `tree` (cron: a process each; run: one
    process), one row per tick."""
    # budget settings in `github` (a tree that predates them is run without)
    with world.seeded(repos, prs, keys, lambda gh: gh.update(github)) as (sb, config, tmp):
        rows = []
        daemon = Daemon(tree, config, Path(tmp) / "state") if mode == "run" else None
        for label in TICKS:
            sb.reset_counters()
            if delay:
                sb.faults("*", r".*", kind="delay", delay=delay, count=1_000_000)
            opened = sb.connections_opened()
            if daemon is not None:
                wall, rss, code, summary = daemon.tick()
            else:
                wall, rss, code, summary = world.tick_once(tree, config, Path(tmp) / "state")
            sb.clear_faults()
            c = sb.counters()
            mints = sum(
                v["requests"] for k, v in c["endpoints"].items() if k.endswith("/access_tokens")
            )
            rows.append(
                {
                    "label": f"{mode}: {label}",
                    "classified": summary.get("classified", "-"),
                    "backlog": summary.get("backlog", "-"),
                    "wall": wall,
                    "rss": rss,
                    "code": code,
                    "requests": c["total"]["requests"],
                    "counted": c["total"]["counted"],
                    "not_modified": c["total"]["not_modified"],
                    "mints": mints,
                    "connections": sb.connections_opened() - opened,
                }
            )
        if daemon is not None:
            daemon.close()
        return rows


BALLOT_LABEL = "decision:pending-owner"
PASSIVE_LABELS = (
    "decision:auto-approved-critical-reversible",
    "decision:auto-approved-irreversible-non-critical",
)


def decision_issues(sb: Sandbox) -> tuple[int, int]:
    """(ballot issues, passive review issues) in the decision repo, read from the backend."""
    b = sb.backend
    with b.lock:
        labels = [set(rec["labels"]) for rec in b.repo(std.BOT_REPO)["issues"].values()]
    ballots = sum(1 for names in labels if BALLOT_LABEL in names)
    return ballots, sum(1 for names in labels if names & set(PASSIVE_LABELS))


def content_created(sb: Sandbox) -> int:
    """Content-creating requests (issues, comments) the sandbox answered since its last reset."""
    ends = sb.counters()["endpoints"]
    return sum(v["requests"] for k, v in ends.items() if k in CONTENT_CREATING)


def cold_start_order(tree: Path, repos: int, prs: int, keys: Any, max_ticks: int) -> dict[str, Any]:
    """Tick a cold start within GitHub's write limits, a minute apart, until nothing waits:
    in which tick the first ballot, every ballot and the first passive issue were opened."""
    d_prs = repos * sum(1 for i in range(prs) if ".github/workflows/" in next(iter(pr_files(i))))
    found: dict[str, Any] = {"first ballot": "-", "every ballot": "-", "first passive": "-"}
    found["hour"] = (0, 0)  # (ballots, passive issues) open after the first hour's ticks
    found["content"] = (0, 0)  # content-creating writes: most in one tick, in the first hour

    with world.seeded(repos, prs, keys, world.github_limits) as (sb, config, tmp):
        proc = world.spawn(tree, world.CLOCKED, config, Path(tmp) / "state")
        assert proc.stdin is not None and proc.stdout is not None
        start = datetime.now(UTC)
        tick = 0
        for tick in range(1, max_ticks + 1):
            at = start + timedelta(seconds=61 * (tick - 1))
            proc.stdin.write(at.isoformat() + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                break
            ballots, passive = decision_issues(sb)
            made = content_created(sb)
            sb.reset_counters()
            most, hour = found["content"]
            found["content"] = (max(most, made), hour + made if tick <= 60 else hour)
            if ballots and found["first ballot"] == "-":
                found["first ballot"] = tick
            if ballots >= d_prs and found["every ballot"] == "-":
                found["every ballot"] = tick
            if passive and found["first passive"] == "-":
                found["first passive"] = tick
            if tick <= 60:
                found["hour"] = (ballots, passive)
            if not json.loads(line)["backlog"]:
                break
        found["ticks"] = tick
        proc.stdin.close()
        proc.wait(120)
    return found


def main() -> int:
    """Run both trees and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=2)
    ap.add_argument("--prs", type=int, default=50, help="open PRs per repo")
    ap.add_argument("--before", default=None, help="git ref of the older tree (merge base)")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds added to each request")
    ap.add_argument("--order-ticks", type=int, default=30, help="most ticks of the cold start")
    ap.add_argument("--order-only", action="store_true", help="only the cold-start order table")
    args = ap.parse_args()
    before = args.before or world.merge_base()
    keys = std.generate_keys()
    if not args.order_only:
        print(f"{args.repos} × {args.prs} open PRs, shadow mode, delay {args.delay:g} s")
        print(
            "| tree | tick | classified | backlog left | wall s | requests | counted | 304 "
            "| tokens minted | new TCP connections | peak RSS MiB |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = world.unpack(before, Path(tmp) / "before")
        trees: list[tuple[str, Path, dict[str, Any]]] = [
            (f"before ({before[:10]})", old_tree, {}),
            ("after, budget off", ROOT, world.UNLIMITED),
            (
                "after, GitHub's write limits",
                ROOT,
                {"writes_per_hour": 500, "writes_per_minute": 80},
            ),
        ]
        for name, tree, github in [] if args.order_only else trees:
            for r in (
                row
                for mode in ("cron", "run")
                for row in scenario(tree, args.repos, args.prs, keys, args.delay, mode, github)
            ):
                failed = "" if r["code"] == 0 else f" (exit {r['code']})"
                print(
                    f"| {name} | {r['label']}{failed} | {r['classified']} | {r['backlog']} | "
                    f"{r['wall']:.2f} | {r['requests']} | "
                    f"{r['counted']} | {r['not_modified']} | {r['mints']} | "
                    f"{r['connections']} | {r['rss']:.0f} |",
                    flush=True,
                )
        print()
        print(
            f"Cold start within GitHub's write limits, {args.repos} × {args.prs} open PRs "
            "(a quarter D), ticks a minute apart: the tick in which"
        )
        print(
            "| tree | first D ballot | every D ballot | first passive issue "
            "| ballots / passive issues after 60 ticks | content-creating writes: most in a "
            "tick / first 60 ticks | ticks run |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, tree in ((f"before ({before[:10]})", old_tree), ("after", ROOT)):
            o = cold_start_order(tree, args.repos, args.prs, keys, args.order_ticks)
            print(
                f"| {name} | {o['first ballot']} | {o['every ballot']} | "
                f"{o['first passive']} | {o['hour'][0]} / {o['hour'][1]} | "
                f"{o['content'][0]} / {o['content'][1]} | {o['ticks']} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

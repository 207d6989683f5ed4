"""Benchmark two cron costs, an older tree and this one side by side in one run.

Run: .venv/bin/python bench/bench_protected_costs.py [--before REF] [--latency-ms 100]
     [--steady 10x100] [--cold 2x50] [--only steady|cold]

1. Steady `tick --once` on protected repos: `steady` repos × PRs (shadow mode, a quarter per
   quadrant), every base branch protected as `doctor` demands (L1.C3 pinned to the App, PRs
   required, no force pushes) plus an active ruleset requiring `ci`. Cron processes tick until
   nothing new is left (write limits lifted), up to SETTLE_TICKS more settle what the cold
   start left (until one makes no counted request), then the measured steady tick runs with
   `--latency-ms` added to every request (the sandbox's `delay` fault).
2. Cold start within GitHub's write limits (500 an hour, 80 a minute): `cold` repos × PRs,
   `tick --once` processes one after the other (cron), then one `run`-style process whose
   ticks are a minute apart on its clock (run), until the backlog is drained; every request
   the sandbox saw over the whole drain, and the counted ones per PR.

Columns: requests, counted requests (against the REST rate limit), 304s, wall time.
The "before" tree is `git archive REF` (default: the merge base with main).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cron_world as world  # noqa: E402

from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402
from ghsandbox.api_access import add_ruleset  # noqa: E402

L1C3 = "capdaemon/L1.C3"
MAX_TICKS = 40
SETTLE_TICKS = 3  # at most, after the drain, before the measured steady tick


def protect(sb: Sandbox, full: str) -> None:
    """Protect `full`'s main as `capdaemon protect` does, plus a ruleset requiring `ci`."""
    sb.backend.set_protection(
        full,
        "main",
        {
            "required_status_checks": {
                "strict": False,
                "checks": [{"context": L1C3, "app_id": std.APP_ID}],
            },
            "enforce_admins": False,
            "required_pull_request_reviews": {"required_approving_review_count": 0},
            "restrictions": None,
            "allow_force_pushes": False,
            "allow_deletions": False,
        },
    )
    add_ruleset(
        sb.backend,
        full,
        {
            "name": "ci",
            "enforcement": "active",
            "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
            "rules": [
                {"type": "deletion"},
                {
                    "type": "required_status_checks",
                    "parameters": {
                        "strict_required_status_checks_policy": False,
                        "required_status_checks": [{"context": "ci"}],
                    },
                },
            ],
        },
    )


def _size(text: str) -> tuple[int, int]:
    repos, prs = text.lower().split("x")
    return int(repos), int(prs)


class Clocked:
    """One `run`-style process from `tree` whose ticks are a minute apart on the daemon's clock
    (the write budget's minute and hour), however fast they run."""

    def __init__(self, tree: Path, config: Path, state: Path) -> None:
        self.at = datetime.now(UTC)
        self.proc = world.spawn(tree, world.CLOCKED, config, state)

    def tick(self) -> tuple[float, float, int, dict[str, Any]]:
        """One tick, a minute after the last: (0, 0, exit code, summary)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(self.at.isoformat() + "\n")
        self.proc.stdin.flush()
        self.at += timedelta(seconds=61)
        line = self.proc.stdout.readline()
        return (0.0, 0.0, 0, json.loads(line)) if line else (0.0, 0.0, 1, {})

    def close(self) -> None:
        """End the process (closing stdin ends its loop)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(120)


def _drain(
    sb: Sandbox, tree: Path, config: Path, state: Path, daemon: Clocked | None = None
) -> tuple[int, dict[str, Any]]:
    """Tick until no new PR is left (`tick --once` processes, or one `run`-style `daemon`):
    (ticks, summed sandbox totals, with counted requests per endpoint under "endpoints")."""
    sums: dict[str, Any] = {"requests": 0, "counted": 0, "not_modified": 0, "endpoints": {}}
    for n in range(1, MAX_TICKS + 1):
        sb.reset_counters()
        if daemon is not None:
            _wall, _rss, code, summary = daemon.tick()
        else:
            _wall, _rss, code, summary = world.tick_once(tree, config, state)
        c = sb.counters()
        for k in ("requests", "counted", "not_modified"):
            sums[k] += c["total"][k]
        for k, v in c["endpoints"].items():
            if v["counted"]:
                sums["endpoints"][k] = sums["endpoints"].get(k, 0) + v["counted"]
        if code != 0:
            raise SystemExit(f"tick --once failed (exit {code})")
        if not summary.get("backlog"):
            return n, sums
    return MAX_TICKS, sums


def steady(tree: Path, size: tuple[int, int], keys: Any, latency: float) -> dict[str, Any]:
    """The steady `tick --once` on protected repos (after the cold start is drained)."""
    with world.seeded(*size, keys, lambda gh: gh.update(world.UNLIMITED)) as (sb, config, tmp):
        for r in range(size[0]):
            protect(sb, f"{std.ORG}/bench{r}")
        state = Path(tmp) / "state"
        _drain(sb, tree, config, state)
        for _ in range(SETTLE_TICKS):  # what the cold start left: until a tick counts nothing
            sb.reset_counters()
            world.tick_once(tree, config, state)
            if not sb.counters()["total"]["counted"]:
                break
        sb.reset_counters()
        if latency:
            sb.faults("*", r".*", kind="delay", delay=latency, count=1_000_000)
        t0 = time.perf_counter()
        _wall, _rss, code, _summary = world.tick_once(tree, config, state)
        wall = time.perf_counter() - t0
        sb.clear_faults()
        c = sb.counters()
        ends = {k: v["requests"] for k, v in c["endpoints"].items() if v["requests"]}
        return {**c["total"], "wall": wall, "code": code, "endpoints": ends}


def cold(tree: Path, size: tuple[int, int], keys: Any, mode: str) -> dict[str, Any]:
    """A cold start within GitHub's write limits, drained (`mode` cron: a process per tick;
    run: one process): totals over every tick."""

    with world.seeded(*size, keys, world.github_limits) as (sb, config, tmp):
        t0 = time.perf_counter()
        state = Path(tmp) / "state"
        daemon = Clocked(tree, config, state) if mode == "run" else None
        ticks, sums = _drain(sb, tree, config, state, daemon)
        if daemon is not None:
            daemon.close()
        return {**sums, "ticks": ticks, "wall": time.perf_counter() - t0}


def main() -> int:
    """Run both trees and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=None, help="git ref of the older tree (merge base)")
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--steady", default="10x100", help="repos x PRs of the steady tick")
    ap.add_argument("--cold", default="2x50", help="repos x PRs of the cold start")
    ap.add_argument("--only", choices=("steady", "cold"), default=None)
    ap.add_argument("--modes", default="cron,run", help="cold start modes (cron, run)")
    ap.add_argument("--after-only", action="store_true", help="skip the older tree")
    ap.add_argument("--endpoints", action="store_true", help="requests per endpoint")
    args = ap.parse_args()
    before = args.before or world.merge_base()
    keys = std.generate_keys()
    with tempfile.TemporaryDirectory() as tmp:
        trees = [("after", ROOT)]
        if not args.after_only:
            trees.insert(0, (f"before ({before[:10]})", world.unpack(before, Path(tmp) / "before")))
        if args.only in (None, "steady"):
            size = _size(args.steady)
            print(
                f"Steady `tick --once`, {size[0]} × {size[1]} open PRs, every repo protected, "
                f"{args.latency_ms:g} ms per request"
            )
            print("| tree | requests | counted | 304 | wall s |")
            print("|---|---:|---:|---:|---:|")
            for name, tree in trees:
                r = steady(tree, size, keys, args.latency_ms / 1000)
                print(
                    f"| {name} | {r['requests']} | {r['counted']} | {r['not_modified']} | "
                    f"{r['wall']:.2f} |",
                    flush=True,
                )
                if args.endpoints:
                    for k, v in sorted(r["endpoints"].items()):
                        print(f"|   {k} | {v} | | | |")
            print()
        if args.only in (None, "cold"):
            size = _size(args.cold)
            prs = size[0] * size[1]
            print(
                f"Cold start within GitHub's write limits, {size[0]} × {size[1]} open PRs, "
                "drained (ticks until no new PR is left)"
            )
            print("| tree | mode | ticks | requests | counted | counted per PR | 304 | wall s |")
            print("|---|---|---:|---:|---:|---:|---:|---:|")
            for (name, tree), mode in ((t, m) for m in args.modes.split(",") for t in trees):
                r = cold(tree, size, keys, mode)
                print(
                    f"| {name} | {mode} | {r['ticks']} | {r['requests']} | {r['counted']} | "
                    f"{r['counted'] / prs:.2f} | {r['not_modified']} | {r['wall']:.1f} |",
                    flush=True,
                )
                if args.endpoints:
                    for k, v in sorted(r["endpoints"].items()):
                        print(f"|   {k} (counted) | | | | {v} | | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark reaction time to a new PR under `capdaemon run`-style ticks, before and after the
same-tick re-read of an UNKNOWN mergeability.

Run: .venv/bin/python bench/bench_reaction.py [--repos 2] [--prs 20] [--tick 20] [--minutes 2]
     [--every 7] [--computing 3]

One sandbox per variant, seeded with `repos` × `prs` open PRs, enforce mode; a Ticker (built as
`capdaemon run` builds it) ticks every `tick` seconds in a thread, and a script opens a new
A-quadrant PR (a guide page) every `every` seconds, round robin over the repos. GitHub computes
a PR's mergeability in the background: the sandbox answers null for `computing` seconds after
the first read (fidelity `mergeable_seconds`). Reaction = the PR's merge time minus the time it
was opened. "before" empties capdaemon.daemon.mergewait.RETRY_AFTER (a PR still unknown after
the merge gate's one re-read waits for the next tick, as before); "after" is this tree.
Columns: PRs opened and merged, reaction p50/p95/max (s), requests and counted requests per
minute, ticks run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tick import seed_repo, write_config  # noqa: E402

from capdaemon.commands._common import load_config_and_rules  # noqa: E402
from capdaemon.daemon import mergewait  # noqa: E402
from capdaemon.daemon.runner import open_ticker  # noqa: E402
from capdaemon.logging import configure_logging  # noqa: E402
from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402

TRAILER = "Agent-Session: claude-code/claude-opus-4/sess-bench\n"


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def run_variant(name: str, args: argparse.Namespace, keys: Any) -> dict[str, Any]:
    """One sandbox, one ticking Ticker, the scripted PRs; the measurements."""
    saved = mergewait.RETRY_AFTER
    if name == "before":
        mergewait.RETRY_AFTER = ()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            key, _ = std.write_keys(keys, Path(tmp) / "keys")
            sb = Sandbox.start(Path(tmp) / "sb", std.standard_seed(keys, rate_limit=10_000_000))
            sb.set_fidelity(points_per_minute=0, content_per_minute=0, content_per_hour=0)
            try:
                return _scenario(sb, key, Path(tmp), args)
            finally:
                sb.stop()
    finally:
        mergewait.RETRY_AFTER = saved


def _scenario(sb: Sandbox, key: Path, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    names = [seed_repo(sb, f"react{r}", args.prs) for r in range(args.repos)]
    write_config(tmp / "config", sb, key, names, "enforce")
    cfg_file = tmp / "config" / "capdaemon.yml"
    data = yaml.safe_load(cfg_file.read_text(encoding="utf-8"))
    for repo in data["repos"]:
        repo.pop("extra_checks", None)  # no outside CI: an A PR merges on capdaemon's L1.C3
    cfg_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    config, rules = load_config_and_rules(argparse.Namespace(config=str(tmp / "config")))
    opened: dict[tuple[str, int], float] = {}
    stop = threading.Event()
    ticks = [0]
    with open_ticker(config, tmp / "state", rules=rules) as ticker:
        ticker.tick()  # the cold start, before the clock of the measurement starts
        sb.set_fidelity(mergeable_reads=0, mergeable_seconds=args.computing)

        def tick_loop() -> None:
            while not stop.is_set():
                started = time.monotonic()
                ticker.tick()
                ticks[0] += 1
                stop.wait(max(0.0, args.tick - (time.monotonic() - started)))

        before = sb.counters()["total"]
        t0 = time.time()
        thread = threading.Thread(target=tick_loop, daemon=True)
        thread.start()
        i = 0
        while time.time() - t0 < args.minutes * 60:
            full = names[i % len(names)]
            branch = f"agent-1/new{i}"
            page = {f"docs/guide/new{i}.md": f"# New {i}\n"}
            sb.commit_files(full, branch, page, f"New {i}\n\n{TRAILER}", "agent-1", "main")
            n = sb.open_pr(full, branch, "main", f"New {i}", None, "agent-1")
            opened[(full, n)] = time.time()
            i += 1
            stop.wait(args.every)
        # let the last PRs be reached by the ticks, but stop counting the traffic now
        after = sb.counters()["total"]
        elapsed = time.time() - t0
        time.sleep(args.tick * 2 + 10)
        stop.set()
        thread.join()
    reactions = []
    for (full, n), at in opened.items():
        merged = sb.backend.issue(full, n)["pull"]["merged_at"]
        if merged:
            reactions.append(datetime.fromisoformat(merged.replace("Z", "+00:00")).timestamp() - at)
    minutes = elapsed / 60
    return {
        "opened": len(opened),
        "merged": len(reactions),
        "p50": _pct(reactions, 0.5),
        "p95": _pct(reactions, 0.95),
        "max": max(reactions) if reactions else float("nan"),
        "mean": statistics.fmean(reactions) if reactions else float("nan"),
        "req_min": (after["requests"] - before["requests"]) / minutes,
        "counted_min": (after["counted"] - before["counted"]) / minutes,
        "ticks": ticks[0],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=2)
    ap.add_argument("--prs", type=int, default=20)
    ap.add_argument("--tick", type=float, default=20.0, help="tick interval (s)")
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--every", type=float, default=7.0, help="a new PR every this many seconds")
    ap.add_argument("--computing", type=float, default=3.0, help="mergeability null for (s)")
    args = ap.parse_args()
    configure_logging("json", "error")
    keys = std.generate_keys()
    rows = [(name, run_variant(name, args, keys)) for name in ("before", "after")]
    print(
        f"reaction to a new A PR: {args.repos} repos × {args.prs} PRs, enforce, a tick every "
        f"{args.tick:g} s, a new PR every {args.every:g} s for {args.minutes:g} min, "
        f"mergeability computing {args.computing:g} s"
    )
    print(
        f"{'variant':<8} {'opened':>6} {'merged':>6} {'p50 s':>6} {'p95 s':>6} {'max s':>6} "
        f"{'req/min':>8} {'counted/min':>11} {'ticks':>5}"
    )
    for name, r in rows:
        print(
            f"{name:<8} {r['opened']:>6} {r['merged']:>6} {r['p50']:>6.1f} {r['p95']:>6.1f} "
            f"{r['max']:>6.1f} {r['req_min']:>8.1f} {r['counted_min']:>11.1f} {r['ticks']:>5}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

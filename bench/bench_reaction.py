"""Benchmark reaction time to a new PR under `capdaemon run`: the tick alone, and the tick with
the change detector between ticks (capdaemon.daemon.polling.detector), side by side in one run.

Run: .venv/bin/python bench/bench_reaction.py [--repos 3] [--prs 30] [--tick 60] [--minutes 3]
     [--every 7] [--computing 3] [--latency 0.1] [--quiet 1] [--detect 5] [--detect-rpm 30]
     [--variants "tick only,detector"]
Before/after: CAPDAEMON_TREE=/path/to/old/worktree runs the same script on that tree's code
(started beside the run on this tree, the two share the machine's load).

One sandbox per variant, seeded with `repos` × `prs` open PRs, enforce mode, `latency` seconds
injected before every answer; a Ticker (built as `capdaemon run` builds it) ticks every `tick`
seconds in a thread and, in the "detector" variant, a ChangeDetector wakes every second as the
`run` job does (`detect` s between looks at most, `detect-rpm` requests a minute at most).
The seeded PRs are ticked until nothing more merges; then `quiet` minutes with nothing
happening (what idling costs), then a script opens a new
A-quadrant PR (a guide page) every `every` seconds, round robin over the repos. GitHub computes
a PR's mergeability in the background: the sandbox answers null for `computing` seconds after
the first read (fidelity `mergeable_seconds`). Reaction = the PR's merge time minus the time it
was opened. Columns: PRs opened and merged, reaction p50/p95/max (s), requests and counted
requests per minute while PRs arrive and while quiet, full ticks and targeted ticks run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(os.environ.get("CAPDAEMON_TREE") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tick import seed_repo, write_config  # noqa: E402

from capdaemon import __file__ as capdaemon_file  # noqa: E402
from capdaemon.commands._common import load_config_and_rules  # noqa: E402
from capdaemon.daemon.polling.detector import ChangeDetector  # noqa: E402
from capdaemon.daemon.service.runner import open_ticker  # noqa: E402
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
    """One sandbox, one ticking Ticker (with the detector or not), the scripted PRs."""
    with tempfile.TemporaryDirectory() as tmp:
        key, _ = std.write_keys(keys, Path(tmp) / "keys")
        sb = Sandbox.start(Path(tmp) / "sb", std.standard_seed(keys, rate_limit=10_000_000))
        sb.set_fidelity(points_per_minute=0, content_per_minute=0, content_per_hour=0)
        try:
            return _scenario(sb, key, Path(tmp), args, detect=name == "detector")
        finally:
            sb.stop()


def _config(sb: Sandbox, key: Path, tmp: Path, names: list[str], args: argparse.Namespace) -> Any:
    write_config(tmp / "config", sb, key, names, "enforce")
    cfg_file = tmp / "config" / "capdaemon.yml"
    data = yaml.safe_load(cfg_file.read_text(encoding="utf-8"))
    for repo in data["repos"]:
        repo.pop("extra_checks", None)  # no outside CI: an A PR merges on capdaemon's L1.C3
    data["schedule"] = {
        "tick_seconds": int(args.tick),
        "detect_seconds": args.detect,
        "detect_requests_per_minute": args.detect_rpm,
    }
    cfg_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config_and_rules(argparse.Namespace(config=str(tmp / "config")))


def _every(stop: threading.Event, seconds: float, step: Any) -> threading.Thread:
    """Run `step` every `seconds` in a thread until `stop` (as the scheduler would)."""

    def loop() -> None:
        while not stop.is_set():
            started = time.monotonic()
            step()
            stop.wait(max(0.0, seconds - (time.monotonic() - started)))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def _rates(sb: Sandbox, before: dict[str, int], seconds: float) -> tuple[float, float]:
    after = sb.counters()["total"]
    minutes = seconds / 60
    return (
        (after["requests"] - before["requests"]) / minutes,
        (after["counted"] - before["counted"]) / minutes,
    )


def _scenario(
    sb: Sandbox, key: Path, tmp: Path, args: argparse.Namespace, *, detect: bool
) -> dict[str, Any]:
    names = [seed_repo(sb, f"react{r}", args.prs) for r in range(args.repos)]
    config, rules = _config(sb, key, tmp, names, args)
    opened: dict[tuple[str, int], float] = {}
    stop = threading.Event()
    ticks = [0]
    with open_ticker(config, tmp / "state", rules=rules) as ticker:
        ticker.tick()  # the cold start, before the clock of the measurement starts
        for _ in range(20):  # the seeded A/B/C PRs merged: a steady state to measure from
            if not ticker.tick().merged:
                break
        sb.set_fidelity(mergeable_reads=0, mergeable_seconds=args.computing)
        if args.latency:
            sb.faults("*", ".", kind="delay", delay=args.latency, count=10**9)
        detector = ChangeDetector(ticker)
        threads = [
            _every(stop, args.tick, lambda: (ticker.tick(), ticks.__setitem__(0, ticks[0] + 1)))
        ]
        if detect:
            detector.run()  # its marks, as `run` takes them before its first tick
            threads.append(_every(stop, 1.0, detector.run))
        before, t0, looked = sb.counters()["total"], time.time(), detector.stats.requests
        stop.wait(args.quiet * 60)
        quiet = _rates(sb, before, time.time() - t0)
        looks_min = (detector.stats.requests - looked) / ((time.time() - t0) / 60)
        before, t0 = sb.counters()["total"], time.time()
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
        busy = _rates(sb, before, time.time() - t0)
        time.sleep(args.tick + 15)
        stop.set()
        for thread in threads:
            thread.join()
        sb.clear_faults()
    reactions = []
    for (full, n), at in opened.items():
        merged = sb.backend.issue(full, n)["pull"]["merged_at"]
        if merged:
            reactions.append(datetime.fromisoformat(merged.replace("Z", "+00:00")).timestamp() - at)
    return {
        "opened": len(opened),
        "merged": len(reactions),
        "p50": _pct(reactions, 0.5),
        "p95": _pct(reactions, 0.95),
        "max": max(reactions) if reactions else float("nan"),
        "mean": statistics.fmean(reactions) if reactions else float("nan"),
        "req_min": busy[0],
        "counted_min": busy[1],
        "quiet_req_min": quiet[0],
        "quiet_counted_min": quiet[1],
        "looks_min": looks_min,
        "ticks": ticks[0],
        "targeted": detector.stats.targeted_ticks,
        "feeds": len(detector.feeds()),
        "interval": detector.interval(len(detector.feeds())),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=3)
    ap.add_argument("--prs", type=int, default=30)
    ap.add_argument("--tick", type=float, default=60.0, help="tick interval (s)")
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--every", type=float, default=7.0, help="a new PR every this many seconds")
    ap.add_argument("--computing", type=float, default=3.0, help="mergeability null for (s)")
    ap.add_argument("--latency", type=float, default=0.1, help="injected per request (s)")
    ap.add_argument("--quiet", type=float, default=1.0, help="minutes with nothing happening")
    ap.add_argument("--detect", type=int, default=5, help="schedule.detect_seconds")
    ap.add_argument("--detect-rpm", type=int, default=30, help="detect_requests_per_minute")
    ap.add_argument("--variants", default="tick only,detector", help="comma-separated")
    args = ap.parse_args()
    configure_logging("json", "error")
    keys = std.generate_keys()
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not names or any(v not in ("tick only", "detector") for v in names):
        ap.error(f"--variants: 'tick only' and/or 'detector', not {args.variants!r}")
    rows = [(name, run_variant(name, args, keys)) for name in names]
    print(f"code: {Path(capdaemon_file).parent}")
    print(
        f"reaction to a new A PR: {args.repos} repos × {args.prs} PRs, enforce, "
        f"{1000 * args.latency:g} ms per request, a tick every {args.tick:g} s, "
        f"detector: {args.detect} s / {args.detect_rpm} requests a minute at most; "
        f"{args.quiet:g} min quiet, then a new PR every {args.every:g} s for "
        f"{args.minutes:g} min, mergeability computing {args.computing:g} s"
    )
    print(
        f"{'variant':<10} {'opened':>6} {'merged':>6} {'p50 s':>6} {'p95 s':>6} {'max s':>6} "
        f"{'req/min':>8} {'counted/min':>11} {'quiet req/min':>13} {'quiet counted/min':>17} "
        f"{'ticks':>5} {'targeted':>8}"
    )
    for name, r in rows:
        print(
            f"{name:<10} {r['opened']:>6} {r['merged']:>6} {r['p50']:>6.1f} {r['p95']:>6.1f} "
            f"{r['max']:>6.1f} {r['req_min']:>8.1f} {r['counted_min']:>11.1f} "
            f"{r['quiet_req_min']:>13.1f} {r['quiet_counted_min']:>17.1f} {r['ticks']:>5} "
            f"{r['targeted']:>8}"
        )
    det = rows[-1][1]
    print(
        f"detector: {det['feeds']} feeds a look, a look every {det['interval']:g} s, "
        f"{det['looks_min']:.1f} of the quiet requests a minute are its looks"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

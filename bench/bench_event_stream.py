"""Benchmark `capdaemon run` under a scripted stream of events at 10 repos × 100 open PRs: the
tick alone (`schedule.detect_seconds: 0`, what capdaemon did before the change detector), the
change detector without its burst rollup sweep (`detect_burst_graphql_points_per_hour: 0`) and
the daemon as this tree configures it by default, side by side in one run.

Run: .venv/bin/python bench/bench_event_stream.py [--repos 10] [--prs 100] [--minutes 10]
     [--quiet 2] [--tick 60] [--latency 0.1] [--computing 3] [--rates push=6,new_pr=2,...]
     [--keep DIR]  (each variant's daemon log copied there: its ticks' per-step figures)
     [--first-tick-minutes 10]  (how long `run`'s first tick may take before the stream)
Smoke: .venv/bin/python bench/bench_event_stream.py --minutes 1 --repos 2 --prs 20

Per variant, a fresh sandbox in this process holds `repos` × `prs` open PRs (a quarter each of
quadrants A/B/C/D) in enforce mode, every repo requiring a `ci` check from a CI App: in
progress on the A/B/C heads, passed on the D heads (they wait on an owner's vote). One
in-process tick (content pacing lifted, as bench_tick.py does) classifies and publishes them
all; then the real `capdaemon run` starts as a subprocess on that state directory (the
scheduler, the tick every `tick` s, the change detector when on, GitHub's content pacing) and
`latency` s are injected before every answer, GitHub computes a PR's mergeability for
`computing` s. After its first tick the script runs for `minutes`, the same in both variants
(a fixed random seed; each kind at its rate, one event at a random point of each period),
with these default rates over the whole fleet, about an active team of agents on 10 repos:
6 agent pushes a minute to open A/B PRs (CI starts on the new head), 2 new PRs a minute
(A/B/C/D in turn, CI started), 3 `ci` runs completing a minute on PRs waiting only on them,
1 owner `/approve A` and 1 owner 👍 a minute on waiting D ballots (over HTTP, as the owner).
Reaction, on the bench's clock (a watcher looks at the sandbox every 0.25 s): push or new PR →
L1.C3 published on its head; `ci` done, `/approve`, 👍 → the PR merged. Events not acted on
`drain` s after the script ends count as missed. Then `quiet` minutes with nothing happening.
Traffic is capdaemon's only (the owner's clicks left out): requests, counted requests and
GraphQL points a minute while the script runs, while quiet, and while quiet after the
detector's burst window (`schedule.detect_burst_seconds` after the last action) has passed.
Next to the bench's figures, the daemon's own (`tick_metrics.json` `reaction_samples` of the
same window: L1.C3 published, vote counted, merge done), its full and targeted ticks (from
its log) and its peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tick import write_config  # noqa: E402
from event_world import (  # noqa: E402
    KINDS,
    Stream,
    Watcher,
    figures,
    script,
    seed,
    stream_sandbox,
)

from capdaemon.commands._common import load_config_and_rules  # noqa: E402
from capdaemon.config.types import ScheduleConfig  # noqa: E402
from capdaemon.daemon.service.runner import open_ticker  # noqa: E402
from capdaemon.decide.reaction import KINDS as DAEMON_KINDS  # noqa: E402
from capdaemon.forge.pacing import ContentPacer  # noqa: E402
from capdaemon.logging import configure_logging  # noqa: E402
from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402

# the tick alone; the change detector without its burst rollup sweep (the per-PR check feeds
# only); the daemon as this tree's defaults set it
VARIANTS = ("tick only", "detector, no sweep", "detector")


def traffic(sb: Sandbox) -> tuple[int, int, int]:
    """capdaemon's requests, counted requests (identities other than users) and GraphQL points."""
    ids = sb.counters()["identities"]
    mine = [v for k, v in ids.items() if not k.startswith("user:")]
    return (
        sum(v["requests"] for v in mine),
        sum(v["counted"] for v in mine),
        sb.app.graphql.total_points(),
    )


def by_endpoint(sb: Sandbox, what: str) -> dict[str, int]:
    """`what` (requests, counted) per endpoint so far (every identity: the owner sends none
    while quiet)."""
    return {k: int(v[what]) for k, v in sb.counters()["endpoints"].items() if v[what]}


def grown(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The endpoints whose count grew, by how much, most first."""
    out = {k: n - before.get(k, 0) for k, n in after.items() if n > before.get(k, 0)}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def per_minute(before: tuple[int, ...], after: tuple[int, ...], seconds: float) -> list[float]:
    """The growth of each counter a minute."""
    return [(a - b) * 60 / max(seconds, 1e-9) for b, a in zip(before, after, strict=True)]


def write_run_config(
    sb: Sandbox, key: Path, tmp: Path, names: list[str], args: Any, variant: str
) -> Path:
    """The config directory: enforce, every repo requiring `ci`, the tick at `args.tick`; the
    detector off (`detect_seconds: 0`), without its rollup sweep
    (`detect_burst_graphql_points_per_hour: 0`) or as this tree's defaults set it."""
    cfg_dir = tmp / "config"
    write_config(cfg_dir, sb, key, names, "enforce")  # extra_checks: [ci] on every repo
    cfg_file = cfg_dir / "capdaemon.yml"
    data = yaml.safe_load(cfg_file.read_text(encoding="utf-8"))
    data["schedule"] = {"tick_seconds": int(args.tick)}
    if variant == "tick only":
        data["schedule"]["detect_seconds"] = 0
    elif variant == "detector, no sweep":
        data["schedule"]["detect_burst_graphql_points_per_hour"] = 0
    cfg_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    return cfg_dir


def settle(cfg_dir: Path, state: Path) -> dict[str, Any]:
    """Cold start in this process, content pacing lifted (measured elsewhere): tick until a
    tick classifies and merges nothing more."""
    config, rules = load_config_and_rules(argparse.Namespace(config=str(cfg_dir)))
    t0 = time.monotonic()
    ticks = classified = 0
    with open_ticker(config, state, rules=rules) as ticker:
        transport = ticker.forge.transport
        real, governor = transport.pacer, getattr(transport, "governor", None)
        transport.pacer = ContentPacer(per_minute=10**6, per_hour=10**6)
        if governor is not None:  # the minute's points lifted too (one request in flight kept)
            transport.governor = type(governor)(
                rest_per_minute=10**9, graphql_per_minute=10**9, sleep=governor.sleep
            )
        for _ in range(60):
            report = ticker.tick()
            ticks += 1
            classified += len(report.classified)
            if not report.classified and not report.merged and not report.backlog_left:
                break
            if report.backlog_left and not report.classified:
                time.sleep(5)  # the work budget's minute window moves on
        transport.pacer = real
        if governor is not None:
            transport.governor = governor
    return {"ticks": ticks, "classified": classified, "seconds": time.monotonic() - t0}


def start_daemon(cfg_dir: Path, state: Path, log: Path) -> subprocess.Popen[bytes]:
    """`capdaemon run` as a subprocess, its JSON log to `log`."""
    exe = Path(sys.executable).parent / "capdaemon"
    cmd = [str(exe), "run", "--config", str(cfg_dir), "--state", str(state)]
    cmd += ["--log-format", "json", "--log-level", "info"]
    out = log.open("wb")
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))


def log_events(log: Path) -> list[dict[str, Any]]:
    """The JSON events of the daemon's log (other lines skipped)."""
    out = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def count(log: Path, name: str, since: float = 0.0) -> int:
    """How many `name` events the daemon logged (at or after epoch `since`)."""
    return sum(1 for e in log_events(log) if e.get("event") == name and _epoch(e) >= since)


def _epoch(e: dict[str, Any]) -> float:
    ts = e.get("timestamp") or e.get("ts") or ""
    try:
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("inf")  # unknown: counted


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_for(predicate: Any, timeout: float, every: float = 0.5) -> bool:
    """Poll `predicate` until true or `timeout` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())


def run_variant(name: str, args: argparse.Namespace, keys: Any) -> dict[str, Any]:
    """One sandbox, the seeded PRs settled, `capdaemon run`, the stream; the measurements."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        try:
            with stream_sandbox(keys, tmp) as (sb, key, token):
                return _scenario(sb, key, token, tmp, args, variant=name)
        finally:
            if args.keep:  # the daemon's log (its ticks' per-step figures) for reading later
                keep = Path(args.keep)
                keep.mkdir(parents=True, exist_ok=True)
                if (tmp / "daemon.log").exists():
                    shutil.copy(tmp / "daemon.log", keep / f"{name.replace(' ', '_')}.log")


def _scenario(
    sb: Sandbox, key: Path, token: str, tmp: Path, args: argparse.Namespace, *, variant: str
) -> dict[str, Any]:
    names, pools = seed(sb, args.repos, args.prs, random.Random(args.seed))
    cfg_dir = write_run_config(sb, key, tmp, names, args, variant)
    state, log = tmp / "state", tmp / "daemon.log"
    settled = settle(cfg_dir, state)
    # from here on GitHub's secondary limit holds as documented: 900 REST points a minute
    sb.set_fidelity(mergeable_reads=0, mergeable_seconds=args.computing, rest_points_per_minute=900)
    sb.backend.secondary.reset()  # the stream's own minutes (the cold start is not measured)
    if args.latency:
        sb.faults("*", ".", kind="delay", delay=args.latency, count=10**9)
    proc = start_daemon(cfg_dir, state, log)
    try:
        first = args.first_tick_minutes * 60
        if not wait_for(lambda: count(log, "tick.done") >= 1 or proc.poll() is not None, first):
            raise RuntimeError(f"capdaemon run did not finish a tick; see {log}")
        if proc.poll() is not None:
            raise RuntimeError(f"capdaemon run exited {proc.returncode}: {log.read_text()[-2000:]}")
        time.sleep(5)  # its first look and the targeted tick after its own writes
        out = _measure(sb, token, names, pools, proc, log, args)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    out["daemon"] = _own_reactions(state, out["t0"])
    out["settle"] = settled
    mine = [v for k, v in sb.secondary_stats().items() if k.startswith("installation:")]
    out["secondary"] = mine[0] if mine else {}
    return out


def _measure(
    sb: Sandbox,
    token: str,
    names: list[str],
    pools: Any,
    proc: subprocess.Popen[bytes],
    log: Path,
    args: argparse.Namespace,
) -> dict[str, Any]:
    stream = Stream(sb, names, pools, token)
    watcher = Watcher(sb, stream.events)
    plan = script(args.rates, args.minutes, args.seed)  # the same in both variants
    watcher.thread.start()
    before, t0 = traffic(sb), time.time()
    for offset, kind in plan:
        delay = t0 + offset - time.time()
        if delay > 0:
            time.sleep(delay)
        stream.fire(kind)
    end = t0 + args.minutes * 60
    time.sleep(max(0.0, end - time.time()))
    busy = per_minute(before, traffic(sb), time.time() - t0)
    wait_for(lambda: not watcher.pending(), args.drain, every=1.0)
    watcher.stop.set()
    watcher.thread.join()
    watcher.look()
    q_before, q0 = traffic(sb), time.time()
    q_ends = {w: by_endpoint(sb, w) for w in ("requests", "counted")}
    window = min(float(ScheduleConfig().detect_burst_seconds), args.quiet * 60)
    time.sleep(window)  # a look's burst window may still run after the last event
    q_mid, mid = traffic(sb), time.time()
    time.sleep(max(0.0, q0 + args.quiet * 60 - time.time()))
    q_end = traffic(sb)
    quiet = per_minute(q_before, q_end, time.time() - q0)
    settled = per_minute(q_mid, q_end, time.time() - mid) if time.time() - mid >= 1 else None
    q_by = {w: grown(q_ends[w], by_endpoint(sb, w)) for w in ("requests", "counted")}
    rss = peak_rss_mib(proc.pid)
    return {
        "t0": t0,
        "events": stream.events,
        "skipped": stream.skipped,
        "busy": busy,
        "quiet": quiet,
        "settled": settled,
        "quiet_by": q_by,
        "rss": rss,
        "full": count(log, "tick.done", t0),
        "targeted": count(log, "tick.targeted.done", t0),
        "errors": count(log, "tick.failed") + count(log, "detect.failed"),
    }


def _own_reactions(state: Path, since: float) -> dict[str, list[float]]:
    """The daemon's reaction samples (tick_metrics.json) of actions at or after `since`."""
    path = state / "tick_metrics.json"
    if not path.exists():
        return {}
    samples = json.loads(path.read_text(encoding="utf-8")).get("reaction_samples", {})
    return {k: [s for at, s in rows if at >= since] for k, rows in samples.items()}


def _fig(xs: list[float]) -> str:
    f = figures(xs)
    if f is None:
        return "—"
    return f"{f[0]:.1f} / {f[1]:.1f} / {f[2]:.1f}"


def table(rows: list[tuple[str, dict[str, Any]]], args: argparse.Namespace) -> list[str]:
    """The side-by-side Markdown table, a row per figure, a column per variant."""
    cols = [r for _, r in rows]
    head = "| p50 / p95 / max (s), or per minute | " + " | ".join(n for n, _ in rows) + " |"
    lines = [head, "|---|" + "---:|" * len(rows)]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    for kind, (label, _) in KINDS.items():
        cells = []
        for r in cols:
            evs = [e for e in r["events"] if e.kind == kind]
            done = [e.reaction for e in evs if e.reaction is not None]
            cells.append(f"{_fig(done)} ({len(done)}/{len(evs)})")
        row(label, cells)
    for kind, label in DAEMON_KINDS.items():
        row(
            f"daemon's own: {label}",
            [f"{_fig(r['daemon'].get(kind, []))} ({len(r['daemon'].get(kind, []))})" for r in cols],
        )
    names = ("requests", "counted requests", "GraphQL points")
    for i, what in enumerate(names):
        row(f"{what}/min, events flowing", [f"{r['busy'][i]:.1f}" for r in cols])
    for i, what in enumerate(names):
        row(f"{what}/min, quiet", [f"{r['quiet'][i]:.1f}" for r in cols])
    for i, what in enumerate(names):
        cells = [f"{r['settled'][i]:.1f}" if r["settled"] else "—" for r in cols]
        row(f"{what}/min, quiet after the burst window", cells)
    row("full / targeted ticks", [f"{r['full']} / {r['targeted']}" for r in cols])
    row("daemon peak RSS (MiB)", [f"{r['rss']:.0f}" for r in cols])
    return lines


def parse_rates(text: str) -> dict[str, float]:
    """`push=6,new_pr=2,...` over the defaults; a clear error naming a bad kind or value."""
    rates = {k: v for k, (_, v) in KINDS.items()}
    for part in filter(None, text.split(",")):
        kind, _, value = part.partition("=")
        if kind not in KINDS:
            raise argparse.ArgumentTypeError(f"--rates: unknown kind {kind!r} ({', '.join(KINDS)})")
        try:
            rates[kind] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--rates: {kind}={value!r} is not a number") from None
    return rates


def main() -> int:
    """Run both variants and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=10)
    ap.add_argument("--prs", type=int, default=100, help="open PRs per repo at the start")
    ap.add_argument("--minutes", type=float, default=10.0, help="how long events arrive")
    ap.add_argument("--quiet", type=float, help="minutes with nothing happening (2; ≤ minutes)")
    ap.add_argument("--tick", type=float, default=60.0, help="schedule.tick_seconds")
    ap.add_argument("--latency", type=float, default=0.1, help="injected per request (s)")
    ap.add_argument("--computing", type=float, default=3.0, help="mergeability null for (s)")
    ap.add_argument("--drain", type=float, help="s to wait for late actions (2 ticks + 30)")
    ap.add_argument("--rates", type=parse_rates, default=parse_rates(""), help="kind=per-minute")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument(
        "--only", choices=VARIANTS, action="append", help="run this variant (repeatable)"
    )
    ap.add_argument("--keep", help="a folder to copy each variant's daemon log into")
    ap.add_argument(
        "--first-tick-minutes",
        type=float,
        default=10.0,
        help="wait this long for `run`'s first tick",
    )
    args = ap.parse_args()
    args.quiet = min(2.0, args.minutes) if args.quiet is None else args.quiet
    args.drain = 2 * args.tick + 30 if args.drain is None else args.drain
    configure_logging("json", "error")
    keys = std.generate_keys()
    rows = [(v, run_variant(v, args, keys)) for v in VARIANTS if not args.only or v in args.only]
    rates = ", ".join(f"{k} {v:g}" for k, v in args.rates.items())
    print(
        f"event stream under `capdaemon run`: {args.repos} repos × {args.prs} PRs, enforce, "
        f"{1000 * args.latency:g} ms per request, a tick every {args.tick:g} s, mergeability "
        f"computing {args.computing:g} s; {args.minutes:g} min of events ({rates} a minute), "
        f"then {args.quiet:g} min quiet; (n acted on / n events)"
    )
    print("\n".join(table(rows, args)))
    for name, r in rows:
        s = r["settle"]
        print(
            f"{name}: cold start {s['classified']} PRs in {s['ticks']} ticks, "
            f"{s['seconds']:.0f} s; "
            f"skipped (pool empty) {r['skipped'] or 'none'}; daemon errors {r['errors']}; "
            f"counted while quiet: {r['quiet_by']['counted'] or 'none'}"
        )
        sec = r.get("secondary") or {}
        minutes = [p for p in sec.get("rest_points_by_minute", []) if p]
        p50 = sorted(minutes)[len(minutes) // 2] if minutes else 0
        print(
            f"{name}: GitHub's secondary limit as the sandbox counted it from the stream on: "
            f"REST points a minute p50 {p50}, max {sec.get('rest_points_max_minute', 0)}; "
            f"most in flight at once {sec.get('peak_inflight', 0)}; "
            f"refused {sec.get('refused') or 'none'}"
        )
        top = list(r["quiet_by"]["requests"].items())[:6]
        print(f"{name}: requests while quiet, most first: {top}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

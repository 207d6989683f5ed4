"""Benchmark reading prs.json: the daemon's load (PRStore) and the dashboard's PR facts.

Run: .venv/bin/python bench/bench_prs_load.py [--prs 20000] [--runs 5] [--before REV]

prs.json is built from the records of `tests/data/botstate/prs-v1-demo.json` (written by a
sandbox run of the daemon: merged and open PRs, ballots, rounds, review issues), repeated
under new numbers. Each revision (this tree, and `--before`, default `main`, exported with
`git archive`) reads the same file in its own fresh process: the store's load, and the
dashboard's read of the PR facts. The table gives the CPU time (best of `--runs`), its ratio
to the `--before` revision and to a bare `json.loads` of the file, and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "botstate" / "prs-v1-demo.json"


def build(state: Path, n: int) -> int:
    """prs.json with `n` records shaped like the fixture's; its size in bytes."""
    shapes = list(json.loads(FIXTURE.read_text())["prs"].values())
    prs = {}
    for i in range(n):
        rec = {**shapes[i % len(shapes)], "repo": "acme/widgets", "number": i + 1}
        prs[f"acme/widgets#{i + 1}"] = rec
    state.mkdir(parents=True)
    path = state / "prs.json"
    path.write_text(json.dumps({"version": 1, "prs": prs}, indent=2, sort_keys=True))
    return path.stat().st_size


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(code: str, state: str, what: str, runs: int) -> dict[str, float]:
    """In this process: best CPU seconds of `what` over `runs`, and the peak RSS."""
    sys.path.insert(0, code)
    best = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        if what == "json":
            json.loads((Path(state) / "prs.json").read_text())
        elif what == "store":
            try:  # bot-state's records moved from daemon/ to stores/
                from capdaemon.stores.botstate import PRStore
            except ImportError:
                from capdaemon.stores.botstate import PRStore  # type: ignore[no-redef]

            PRStore(Path(state))
        else:
            from capdaemon.dashboard.prstate import read_prs

            read_prs(Path(state), None)
        best = min(best, time.process_time() - t0)
    return {"cpu": best, "rss": _peak_mb()}


def _child(code: str, state: Path, what: str, runs: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", what, "--code", code, "--state", str(state),
         "--runs", str(runs)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    result: dict[str, float] = json.loads(out.stdout.splitlines()[-1])
    return result


def main() -> int:
    """Build the file, measure both revisions, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prs", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", default="main")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--code", help=argparse.SUPPRESS)
    ap.add_argument("--state", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.code, args.state, args.measure, args.runs)))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-prs-") as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.before, "capdaemon"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        state = Path(tmp) / "bot-state"
        size = build(state, args.prs)
        base = _child(str(ROOT), state, "json", args.runs)
        rows = []
        for what, label in (("store", "daemon load (PRStore)"), ("facts", "dashboard PR facts")):
            for rev, code in ((args.before, str(old)), ("this tree", str(ROOT))):
                rows.append((label, rev, _child(code, state, what, args.runs)))
    print(f"prs.json: {args.prs} records, {size / 1e6:.1f} MB")
    print()
    print(f"| {'read':24} | {'revision':10} | {'CPU':>9} | {'× before':>8} | {'× json.loads':>12} "
          f"| {'peak RSS':>9} |")  # fmt: skip
    print(f"|{'-' * 26}|{'-' * 12}|{'-' * 11}|{'-' * 10}|{'-' * 14}|{'-' * 11}|")
    print(f"| {'json.loads (baseline)':24} | {'':10} | {base['cpu'] * 1000:>7.0f}ms | {'':>8} "
          f"| {1:>11.2f}× | {base['rss']:>6.0f} MB |")  # fmt: skip
    before: dict[str, float] = {}
    for label, rev, r in rows:
        before.setdefault(label, r["cpu"])
        print(
            f"| {label:24} | {rev[:10]:10} | {r['cpu'] * 1000:>7.0f}ms "
            f"| {r['cpu'] / before[label]:>7.2f}× | {r['cpu'] / base['cpu']:>11.2f}× "
            f"| {r['rss']:>6.0f} MB |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: finish-task's diff step (`diff_range(..., patches=False)`) and classify's range
reading (patches and contents) on an n-file branch, wall and CPU time (own + git children).

Run: .venv/bin/python bench/bench_finish_diff.py [--sizes 300,3000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import functools
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_classify_cli import build_repo  # the script's folder is on sys.path

from capdaemon.gitdiff import diff_range, resolve


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `fn` (one warm-up call)."""
    fn()
    walls, cpus = [], []
    for _ in range(repeat):
        c0, t0 = _cpu(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
    return statistics.median(walls), statistics.median(cpus)


def main(argv: list[str] | None = None) -> int:
    """Build the repos, time both reads, print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="300,3000")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="capdaemon-bench-"))
    try:
        print(f"{'files':>6} {'finish-task diff':>18} {'cpu':>9} {'classify read':>15} {'cpu':>9}")
        for n in (int(s) for s in args.sizes.split(",")):
            repo = build_repo(tmp, n)
            base, head = resolve(repo, "main"), resolve(repo, "feat")
            rng = functools.partial(diff_range, repo, base, head)
            fin = measure(functools.partial(rng, patches=False), args.repeat)
            cls = measure(functools.partial(rng, contents_for=bool), args.repeat)
            print(f"{n:>6} {fin[0] * 1000:>16.1f}ms {fin[1] * 1000:>7.1f}ms "
                  f"{cls[0] * 1000:>13.1f}ms {cls[1] * 1000:>7.1f}ms")  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: `capdaemon dispatch` on hostile task files (alias bomb, deep nesting, huge lists).

Run: `.venv/bin/python bench/bench_taskfile_inputs.py [--runs N] [--code DIR]`. Each input is
dispatched by a real subprocess; the table gives input size, median wall time, the ratio to
a benign task file, peak RSS of the child and the exit code (1: refused). `--code DIR` runs
another checkout's capdaemon package (e.g. an older commit exported with `git archive`) to
compare before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench_scope_guard import measure

BENIGN = """\
task_id: bench-{n}
title: benchmark task
level: 1
allowed_resources:
  paths: ["src/**", "docs/**", "tests/**"]
  forbidden_paths: [".github/**", "config/**"]
  commands: ["pytest", "python3 -m py_compile"]
  merge_policy: tiered
  ttl_hours: 48
"""


def alias_bomb(levels: int) -> str:
    """merge_policy is a tree of aliases that expands to 9**levels strings."""
    rows = ["  - &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        rows.append(f"  - &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return (
        "task_id: bomb-1\nallowed_resources:\n  paths: [docs/**]\n  merge_policy:\n"
        + "\n".join(rows)
        + "\n"
    )


def nested(depth: int) -> str:
    """paths nested `depth` lists deep."""
    return f"task_id: deep-1\nallowed_resources:\n  paths: {'[' * depth}{']' * depth}\n"


def globs(count: int) -> str:
    """`count` globs, one a line."""
    rows = "".join(f"    - dir{i:06d}/sub/**\n" for i in range(count))
    return f"task_id: globs-1\nallowed_resources:\n  paths:\n{rows}"


CASES = [
    ("benign task file (baseline)", BENIGN.format(n=1)),
    ("alias bomb, 7 levels (4.8M strings expanded)", alias_bomb(7)),
    ("alias bomb, 8 levels (43M strings expanded)", alias_bomb(8)),
    ("alias bomb, 9 levels (387M strings expanded)", alias_bomb(9)),
    ("nested 900 deep (under the C parser's limit)", nested(900)),
    ("nested 2,000 deep", nested(2000)),
    ("1,000 globs (the per-list limit: accepted)", globs(1000)),
    ("1,001 globs (over the limit)", globs(1001)),
    ("200,000 globs, 4.8 MB", globs(200_000)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--code", metavar="DIR", help="a checkout whose capdaemon package to run")
    ap.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="TEXT",
        help="skip cases whose label has TEXT",
    )
    args = ap.parse_args()
    env = dict(os.environ)
    if args.code:
        env["PYTHONPATH"] = str(Path(args.code).resolve())
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        rows = []
        base = 0.0
        for i, (label, text) in enumerate(CASES):
            if any(t in label for t in args.skip):
                continue
            path = tmp / f"task{i}.yml"
            path.write_text(text, encoding="utf-8")
            state = tmp / f"state{i}"
            cmd = [sys.executable, "-m", "capdaemon.cli", "dispatch", str(path), "--state"]
            times: list[float] = []
            peak = code = 0
            for r in range(args.runs):
                t, rss, code = measure([*cmd, str(state / str(r))], 1, tmp, env)
                times += t
                peak = max(peak, rss)
            med = statistics.median(times)
            base = base or med
            rows.append((label, len(text.encode()), med, med / base, peak, code))
    print(f"## dispatch on hostile task files ({args.runs} runs each)\n")
    print("| input | bytes | median ms | vs benign | peak RSS MiB | exit |")
    print("|---|---|---|---|---|---|")
    for label, size, med, ratio, peak, code in rows:
        print(
            f"| {label} | {size:,} | {med * 1000:.1f} | {ratio:.2f}x | {peak / 1024:.1f} | {code} |"
        )


if __name__ == "__main__":
    main()

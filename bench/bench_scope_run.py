"""Benchmark: what `scope-guard run` adds over running a program directly, and over check + run.

Run: `.venv/bin/python bench/bench_scope_run.py [--runs N] [--files N] [--before DIR] [--cpu]`
(`--before DIR`: the `run` cases also with that checkout's code, in the same rounds).
A checkout with N files under src/, docs/, tests/ and a 20,000-entry audit log (as in
bench_scope_guard.py); two tasks: forbidden globs anchored (folders granted whole after a
hard-link scan: few rules) and one with `*.pem` (no folder can be granted whole: every
in-scope file is checked and stat'ed, then each folder gets one rule for its existing files).
Prints a Markdown table (median / p90 wall or CPU time over N interleaved runs, peak RSS of
the child).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_scope_guard import (
    BEFORE,
    CPU,
    _capdaemon,
    bench_args,
    bench_parser,
    grow_log,
    make_repo,
    round_robin,
)

TASK = """\
task_id: {id}
allowed_resources:
  paths: ["src/**", "docs/**", "tests/**"]
  forbidden_paths: [".github/**", "memory/events/*.cron-*", "config/**", "{pem}"]
  commands: ["true", "git status --short"]
  enforcement: {enforcement}
"""


def main() -> int:
    """Build the fixtures, measure, print the table."""
    args = bench_args(bench_parser(__doc__, 30, "scope-guard run"))
    tmp = Path(tempfile.mkdtemp(prefix="capdaemon-bench-run-"))
    try:
        state = tmp / "bot-state"
        repo = make_repo(tmp, args.files)
        cap = _capdaemon()
        for task_id, pem, level in (
            ("anchored", "/*.pem", "kernel"),
            ("any-depth", "*.pem", "kernel"),
            ("unconfined", "/*.pem", "check-only"),
        ):
            path = tmp / f"{task_id}.yml"
            path.write_text(TASK.format(id=task_id, pem=pem, enforcement=level))
            subprocess.run([*cap, "dispatch", str(path), "--state", str(state)], check=True,
                           capture_output=True)  # fmt: skip
        grow_log(state, 20000)

        def guard(task: str, *rest: str) -> list[str]:
            sub = ["run"] if rest[:1] == ("run",) else []
            return [*cap, "scope-guard", *sub, "--task", task, "--state", str(state),
                    *rest[len(sub):]]  # fmt: skip

        check_then = ["sh", "-c", '"$@" && exec true', "sh",
                      *guard("anchored", "--command", "true")]  # fmt: skip
        cases = [
            ("`true` directly (baseline)", ["true"]),
            ("`python3 -c pass`", [sys.executable, "-c", "pass"]),
            ("`scope-guard --command true` (check only)", guard("anchored", "--command", "true")),
            ("check, then `true` (today's two steps)", check_then),
            ("`run -- true`, check-only task (no Landlock)",
             guard("unconfined", "run", "--", "true")),
            ("`run -- true`, anchored task", guard("anchored", "run", "--", "true")),
            ("`run -- true`, `*.pem` task", guard("any-depth", "run", "--", "true")),
            ("`git status` directly", ["git", "status", "--short"]),
            ("`run -- git status`, anchored task",
             guard("anchored", "run", "--", "git", "status", "--short")),
        ]  # fmt: skip
        if BEFORE:
            cases += [(f"{name} [before]", cmd) for name, cmd in cases if "run --" in name]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")  # as installed: bytecode cached
        round_robin(cases, 1, repo, env)  # warm the caches (bytecode of both trees)
        res = round_robin(cases, args.runs, repo, env)
        base = statistics.median(res[cases[0][0]][0])
        check = statistics.median(res[cases[3][0]][0])
        what = "CPU time (user+system)" if CPU else "wall time"
        print(f"## scope-guard run, {args.files}-file checkout, {args.runs} interleaved runs, "
              f"{what}\n")  # fmt: skip
        print("| command | median ms | p90 ms | over `true` | over check + `true` | peak RSS MiB "
              "| exit |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, _ in cases:
            times, rss, code = res[name]
            med = statistics.median(times)
            p90 = sorted(times)[max(0, int(len(times) * 0.9) - 1)]
            over = f"+{(med - base) * 1000:.1f} ms"
            over_check = f"{(med - check) * 1000:+.1f} ms" if "run --" in name else "—"
            print(f"| {name} | {med * 1000:.1f} | {p90 * 1000:.1f} | {over} | {over_check} "
                  f"| {rss / 1024:.1f} | {code} |")  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

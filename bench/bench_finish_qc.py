"""Benchmark: finish-task on an N-file branch, without QC and with one sandboxed QC command.

Run: `.venv/bin/python bench/bench_finish_qc.py [--runs N] [--files N] [--before DIR] [--cpu]`
(`--before DIR`: the same cases with that checkout's code, in the same rounds). The QC
command is `true`: what is measured is what finish-task adds around it (the sandbox's set-up,
the checkout compared before and after QC). Prints a Markdown table.
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
    make_repo,
    round_robin,
)
from bench_scope_run import TASK


def main() -> int:
    """Build the fixtures, measure, print the table."""
    args = bench_args(bench_parser(__doc__, 10, "finish-task"))
    tmp = Path(tempfile.mkdtemp(prefix="capdaemon-bench-qc-"))
    try:
        state, conf = tmp / "bot-state", tmp / "conf"
        conf.mkdir()
        repo = make_repo(tmp, args.files)
        cap = _capdaemon()
        for task_id, qc in (("no-qc", ""), ("qc-true", '  qc: ["true"]\n')):
            path = tmp / f"{task_id}.yml"
            path.write_text(TASK.format(id=task_id, pem="/*.pem", enforcement="kernel") + qc)
            cmd = [*cap, "dispatch", str(path), "--state", str(state), "--repo", str(repo)]
            subprocess.run([*cmd, "--base", "main"], check=True, capture_output=True)

        def finish(task: str) -> list[str]:
            return [*cap, "finish-task", "--task", task, "--repo", str(repo), "--state",
                    str(state), "--config", str(conf)]  # fmt: skip

        cases = [
            ("`true` directly (baseline)", ["true"]),
            ("finish-task, no QC", finish("no-qc")),
            ("finish-task, QC `true`", finish("qc-true")),
        ]
        if BEFORE:
            cases += [(f"{name} [before]", cmd) for name, cmd in cases[1:]]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        round_robin(cases, 1, repo, env)
        res = round_robin(cases, args.runs, repo, env)
        what = "CPU time (user+system)" if CPU else "wall time"
        print(f"## finish-task, {args.files}-file branch, {args.runs} interleaved runs, {what}\n")
        print("| command | median ms | p90 ms | exit |")
        print("|---|---:|---:|---:|")
        for name, _ in cases:
            times, _rss, code = res[name]
            med, p90 = statistics.median(times), sorted(times)[max(0, int(len(times) * 0.9) - 1)]
            print(f"| {name} | {med * 1000:.1f} | {p90 * 1000:.1f} | {code} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

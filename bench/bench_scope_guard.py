"""Benchmark: scope-guard start-up cost vs bare Python, finish-task on a 3,000-file branch vs git.

Run: `.venv/bin/python bench/bench_scope_guard.py [--runs N] [--files N]`. Prints Markdown tables
(wall time median / p90 over N runs of a real subprocess, peak RSS of the child).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TASK = """\
task_id: bench-1
title: benchmark task
level: 1
allowed_resources:
  paths: ["src/**", "docs/**", "tests/**"]
  forbidden_paths: [".github/**", "memory/events/*.cron-*", "config/**", "*.pem"]
  commands: ["pytest", "python3 -m py_compile"]
  merge_policy: tiered
  ttl_hours: 48
"""


def _capdaemon() -> list[str]:
    script = Path(sys.executable).with_name("capdaemon")
    return [str(script)] if script.exists() else [sys.executable, "-m", "capdaemon.cli"]


def measure(
    cmd: list[str], runs: int, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[list[float], int, int]:
    """Wall times (s; with --cpu the child's user+system CPU time), peak RSS (KiB, max over
    runs) and the last exit code of `cmd`."""
    times = []
    peak = 0
    code = 0
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        times.append(usage.ru_utime + usage.ru_stime if CPU else wall)
        proc.returncode = os.waitstatus_to_exitcode(status)
        code = proc.returncode
        peak = max(peak, usage.ru_maxrss)
    return times, peak, code


def round_robin(
    cases: list[tuple[str, list[str]]], runs: int, cwd: Path, env: dict[str, str]
) -> dict[str, tuple[list[float], int, int]]:
    """Measure every case once per round, `runs` rounds, so load drift hits all cases alike.

    A case named "… [before]" runs the `--before` tree's code (PYTHONPATH) in the same rounds.
    """
    out: dict[str, tuple[list[float], int, int]] = {name: ([], 0, 0) for name, _ in cases}
    before = {**env, "PYTHONPATH": BEFORE[0]} if BEFORE else env
    for _ in range(runs):
        for name, cmd in cases:
            t, rss, code = measure(cmd, 1, cwd, before if name.endswith("[before]") else env)
            times, peak, _ = out[name]
            out[name] = (times + t, max(peak, rss), code)
    return out


BEFORE: list[str] = []  # `--before DIR`: a checkout of the code to compare with
CPU: list[bool] = []  # `--cpu`: CPU time instead of wall time (steadier on a loaded machine)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def make_repo(root: Path, files: int) -> Path:
    """main with a few files; branch `task` adds `files` files under src/, docs/, tests/."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.invalid")
    git(repo, "config", "user.name", "bench")
    (repo / "README.md").write_text("bench\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    git(repo, "checkout", "-qb", "task")
    tops = ("src", "docs", "tests")
    for i in range(files):
        d = repo / tops[i % 3] / f"pkg{i % 50:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i:05d}.py").write_text(f"VALUE = {i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many files")
    return repo


def grow_log(state: Path, n: int) -> None:
    """Append `n` properly chained merge records to actions.jsonl (no fsync: bench fixture)."""
    import json

    from capdaemon.audit import entry_hash
    from capdaemon.state import canonical_json

    log = state / "actions.jsonl"
    last = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    with open(log, "a", encoding="utf-8") as fh:
        for i in range(n):
            rec = {"action": "merge", "pr": f"o/r#{i}", "ts": last["ts"]}
            rec["seq"], rec["prev"] = last["seq"] + 1, last["hash"]
            rec["hash"] = entry_hash(rec)
            fh.write(canonical_json(rec) + "\n")
            last = rec
    (state / "actions.jsonl.head").write_text(
        json.dumps({"seq": last["seq"], "hash": last["hash"]})
    )


def dispatch_pre_matchers(state: Path) -> None:
    """Dispatch `bench-old` as capdaemon did before snapshots stored glob regexes (`matchers`).

    scope-guard then falls back to compiling GlobSets with pathspec: the cost for snapshots
    written by older versions (or after a pathspec upgrade).
    """
    from datetime import UTC, datetime

    from yaml import safe_load

    from capdaemon.capability.snapshot import build_snapshot, content_hash
    from capdaemon.capability.taskfile import parse_task
    from capdaemon.stores import registry

    def old_build(cap: Any, now: datetime) -> dict[str, Any]:
        body = build_snapshot(cap, now)
        body.pop("matchers", None)
        body["sha256"] = content_hash(body)
        return body

    cap = parse_task(safe_load(TASK.replace("bench-1", "bench-old")))
    real, registry.build_snapshot = registry.build_snapshot, old_build
    try:
        registry.dispatch(state, cap, datetime.now(UTC))
    finally:
        registry.build_snapshot = real


def row(name: str, times: list[float], rss: int, base: float | None, code: int) -> str:
    med = statistics.median(times)
    p90 = sorted(times)[max(0, int(len(times) * 0.9) - 1)]
    ratio = f"{med / base:.2f}x" if base else "1.00x"
    return f"| {name} | {med * 1000:.1f} | {p90 * 1000:.1f} | {ratio} | {rss / 1024:.1f} | {code} |"


def bench_parser(doc: str | None, runs: int, what: str) -> argparse.ArgumentParser:
    """The options every scope benchmark takes: --runs, --files, --before DIR, --cpu."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--before", metavar="DIR", help=f"also run this checkout's {what}")
    ap.add_argument("--cpu", action="store_true", help="measure CPU time, not wall time")
    return ap


def bench_args(ap: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse, and apply --cpu and --before to the measuring helpers."""
    args = ap.parse_args()
    if args.cpu:
        CPU.append(True)
    if args.before:
        BEFORE.append(str(Path(args.before).resolve()))
    return args


def main() -> int:
    """Build the fixtures in a temp dir, run the measurements, print the tables."""
    ap = bench_parser(__doc__, 30, "scope-guard")
    ap.add_argument("--pre-matchers-fixture", metavar="STATE", help=argparse.SUPPRESS)
    args = bench_args(ap)
    if args.pre_matchers_fixture:  # run in a child: the parent's RSS would inflate the children's
        dispatch_pre_matchers(Path(args.pre_matchers_fixture))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="capdaemon-bench-"))
    try:
        state = tmp / "bot-state"
        task = tmp / "task.yml"
        task.write_text(TASK)
        repo = make_repo(tmp, args.files)
        cap = _capdaemon()
        subprocess.run([*cap, "dispatch", str(task), "--state", str(state), "--repo", str(repo)],
                       check=True, capture_output=True)  # fmt: skip
        subprocess.run([sys.executable, __file__, "--pre-matchers-fixture", str(state)], check=True)
        grow_log(state, 20000)  # a log as after weeks of running: 20,000 other actions
        guard = [
            *cap,
            "scope-guard",
            "--task",
            "bench-1",
            "--state",
            str(state),
            "--repo",
            str(repo),
        ]
        paths100 = [f"src/pkg{i % 50:02d}/mod{i:05d}.py" for i in range(0, 300, 3)]
        options = "pytest -q -x --maxfail=1 -k mod tests/pkg00 src/pkg00/mod00000.py"
        cases = [
            ("python3 -c pass (baseline)", [sys.executable, "-c", "pass"]),
            ("scope-guard, 1 path", [*guard, "src/pkg00/mod00000.py"]),
            ("scope-guard, 100 paths", [*guard, *paths100]),
            ("scope-guard, 1 command", [*guard, "--command", "pytest -q tests/ && pytest -x"]),
            ("scope-guard, 1 command, options and 2 path words", [*guard, "--command", options]),
            (
                "scope-guard, 1 path, pre-`matchers` snapshot",
                [*guard[:3], "bench-old", *guard[4:], "src/pkg00/mod00000.py"],
            ),
        ]
        if BEFORE:
            cases += [(f"{name} [before]", cmd) for name, cmd in cases[1:5]]
        cold = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
        cold["PYTHONDONTWRITEBYTECODE"] = "1"
        warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        warm["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")  # bytecode cache outside the tree
        for _name, cmd in cases:  # fill the cache
            measure(cmd, 1, repo, warm)
        for label, env in (
            ("with a bytecode cache (as installed: pip compiles .pyc)", warm),
            ("without bytecode (PYTHONDONTWRITEBYTECODE=1: every module compiled)", cold),
        ):
            print(f"## scope-guard {label}\n")
            what = "CPU time (user+system)" if CPU else "wall time"
            print(f"`{' '.join(cap)}`, {args.runs} interleaved runs, 20,002-entry audit log, "
                  f"{what}\n")  # fmt: skip
            print("| command | median ms | p90 ms | vs baseline | peak RSS MiB | exit |")
            print("|---|---|---|---|---|---|")
            res = round_robin(cases, args.runs, repo, env)
            base = statistics.median(res[cases[0][0]][0])
            for name, _ in cases:
                times, rss, code = res[name]
                print(row(name, times, rss, None if name == cases[0][0] else base, code))
            print()

        runs = max(3, args.runs // 5)
        finish = [
            *cap,
            "finish-task",
            "--task",
            "bench-1",
            "--repo",
            str(repo),
            "--state",
            str(state),
        ]
        gitcmd = ["git", "-C", str(repo), "diff", "--name-status", "-z", "-M", "-C", "main...task"]
        n = len(git(repo, "diff", "--name-only", "main...task").splitlines())
        print(f"## finish-task on a {n}-file branch ({runs} runs, bytecode cache)\n")
        print("| command | median ms | p90 ms | vs git | peak RSS MiB | exit |")
        print("|---|---|---|---|---|---|")
        times, rss, code = measure(gitcmd, runs, env=warm)
        gbase = statistics.median(times)
        print(row("git diff --name-status main...task", times, rss, None, code))
        times, rss, code = measure(finish, runs, env=warm)
        print(row("capdaemon finish-task", times, rss, gbase, code))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

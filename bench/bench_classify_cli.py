"""Benchmark: `capdaemon classify` wall time and peak RSS vs `git diff --name-status` and Python.

Run: .venv/bin/python bench/bench_classify_cli.py [--sizes 10,300,3000] [--repeat 5]
Prints a table; the aim is that the CLI adds no more than the interpreter's start-up over git.
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

ROOT = Path(__file__).resolve().parents[1]
DEMO_CONFIG = ROOT / "capdaemon" / "demo" / "config"  # the demo's classifier config
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
# Peak RSS of one child (and its own children) measured in a fresh helper process.
_RSS_HELPER = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
    "check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], env=GIT_ENV, check=True, capture_output=True)


def build_repo(root: Path, n: int) -> Path:
    """A repo where `feat` changes n files (a mix of docs, examples, tests, app code) vs `main`."""
    repo = root / f"repo-{n}"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    kinds = ["docs/guide/p{i}.md", "examples/e{i}.py", "tests/test_{i}.py", "app/m{i}.py"]
    paths = [kinds[i % len(kinds)].format(i=i) for i in range(n)]
    for p in paths:
        f = repo / p
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("".join(f"line {k}\n" for k in range(30)))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "switch", "-q", "-c", "feat")
    for i, p in enumerate(paths):
        f = repo / p
        text = f.read_text()
        if p.endswith(".md"):
            text = text.replace("line 3\n", "lnie 3\n")  # a typo-sized edit
        elif p.startswith("tests/"):
            text += "def test_more():\n    assert True\n"
        else:
            text = text.replace("line 5\n", f"# comment {i}\nline 5\n")
        f.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "change\n\nAgent-Session: bench/model-1/session-0001")
    return repo


def _py_env(tmp: Path) -> dict[str, str]:
    """Child environment with byte-code caching on (in a temp prefix, never in the tree)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def timed(cmd: list[str], repeat: int, cwd: Path) -> float:
    """Median wall time of `cmd` in seconds (output discarded; must exit 0; one warm-up run)."""
    times = []
    env = _py_env(cwd)
    subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=True)
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)  # fmt: skip
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_rss_mib(cmd: list[str], cwd: Path) -> float:
    """Peak RSS (MiB) of `cmd` and its children, from a fresh helper process."""
    out = subprocess.run([sys.executable, "-c", _RSS_HELPER, *cmd], cwd=cwd, check=True,
                         env=_py_env(cwd), capture_output=True, text=True).stdout  # fmt: skip
    return int(out.strip()) / 1024


def main(argv: list[str] | None = None) -> int:
    """Build the repos, time the commands, print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="10,300,3000")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="capdaemon-bench-"))
    try:
        bare = timed([sys.executable, "-c", "pass"], args.repeat * 2, tmp)
        imp = timed([sys.executable, "-c", "import capdaemon.cli"], args.repeat * 2, tmp)
        print(f"python -c pass: {bare * 1000:.1f} ms;  import capdaemon.cli: {imp * 1000:.1f} ms")
        print()
        hdr = (f"{'files':>6} {'git diff':>10} {'git diff -p':>12} {'classify':>10} {'ratio':>7} "
               f"{'over git':>10} {'over git-py':>12} {'peak RSS':>10}")  # fmt: skip
        print(hdr)
        print("-" * len(hdr))
        for n in sizes:
            repo = build_repo(tmp, n)
            git_cmd = ["git", "-C", str(repo), "diff", "--name-status", "main...feat"]
            cli = [sys.executable, "-m", "capdaemon.cli", "classify", "--repo", str(repo),
                   "--base", "main", "--head", "feat", "--config", str(DEMO_CONFIG),
                   "--json"]  # fmt: skip
            t_git = timed(git_cmd, args.repeat, tmp)
            t_patch = timed([*git_cmd[:4], "-p", "-M", "-C", "main...feat"], args.repeat, tmp)
            t_cli = timed(cli, args.repeat, tmp)
            rss = peak_rss_mib(cli, tmp)
            over = t_cli - t_git
            print(
                f"{n:>6} {t_git * 1000:>8.1f}ms {t_patch * 1000:>10.1f}ms {t_cli * 1000:>8.1f}ms "
                f"{t_cli / t_git:>6.1f}x "
                f"{over * 1000:>8.1f}ms {(over - bare) * 1000:>10.1f}ms {rss:>8.1f}MiB"
            )
        print()
        print("git diff = `git diff --name-status base...head`; git diff -p = the patches alone")
        print("over git = classify - git diff; over git-py = that minus `python -c pass`")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

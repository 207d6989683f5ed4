"""Shared set-up of the cron benchmarks (bench_cron_tick, bench_protected_costs): an older
tree unpacked, a seeded sandbox with its config, `tick --once` processes and `run`-style ones."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tick import seed_repo, write_config  # noqa: E402

from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402

# the write budget lifted (like for like with a tree that predates it)
UNLIMITED: dict[str, Any] = {"writes_per_hour": 10**9, "writes_per_minute": 10**9}


def github_limits(gh: dict[str, Any]) -> None:
    """A config's `github:` section with GitHub's write limits (500 an hour, 80 a minute)."""
    for limit in ("writes_per_hour", "writes_per_minute"):
        gh.pop(limit, None)


def spawn(tree: Path, script: str, config: Path, state: Path) -> subprocess.Popen[str]:
    """A Python process from `tree` running `script` with the config and state dirs as
    arguments, its stdin and stdout as text pipes."""
    return subprocess.Popen(
        [sys.executable, "-c", script, str(config), str(state)],
        cwd=str(tree),
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def unpack(ref: str, into: Path) -> Path:
    """`git archive ref` of this repository, unpacked into `into`; the tree's root."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "capdaemon", "schemas"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def tick_once(tree: Path, config: Path, state: Path) -> tuple[float, float, int, dict[str, Any]]:
    """Run one `capdaemon tick --once` from `tree`: (wall s, peak RSS MiB, exit code, summary)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "capdaemon.cli",
            "tick",
            "--once",
            *("--config", str(config), "--state", str(state), "--log-level", "error"),
        ],
        cwd=str(tree),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()  # the summary line (logs at level error only: stderr stays small)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(err.decode("utf-8", "replace")[-2000:], file=sys.stderr)
        return wall, usage.ru_maxrss / 1024, proc.returncode, {}
    summary = json.loads(out)
    summary["classified"] = len(summary.get("classified", ()))
    summary["backlog"] = summary.get("backlog_left", 0)
    return wall, usage.ru_maxrss / 1024, proc.returncode, summary


@contextlib.contextmanager
def seeded(
    repos: int, prs: int, keys: Any, edit: Callable[[dict[str, Any]], None]
) -> Iterator[tuple[Sandbox, Path, Path]]:
    """A fresh sandbox with `repos` × `prs` open PRs and a config for them (its `github:`
    section passed through `edit`): (sandbox, config dir, temporary dir)."""
    with tempfile.TemporaryDirectory() as tmp:
        key, _ = std.write_keys(keys, Path(tmp) / "keys")
        sb = Sandbox.start(Path(tmp) / "sb", std.standard_seed(keys, rate_limit=10_000_000))
        try:
            names = [seed_repo(sb, f"bench{r}", prs) for r in range(repos)]
            config = Path(tmp) / "config"
            write_config(config, sb, key, names)
            data = yaml.safe_load((config / "capdaemon.yml").read_text(encoding="utf-8"))
            edit(data["github"])
            (config / "capdaemon.yml").write_text(yaml.safe_dump(data), encoding="utf-8")
            yield sb, config, Path(tmp)
        finally:
            sb.stop()


# One daemon process ticking at the times given on stdin (ISO 8601), one per line.
CLOCKED = """
import argparse, json, sys
from datetime import datetime
from pathlib import Path
from capdaemon.commands._common import load_config_and_rules
from capdaemon.daemon.service.runner import open_ticker
from capdaemon.logging import configure_logging
configure_logging("json", "error")
config, rules = load_config_and_rules(argparse.Namespace(config=sys.argv[1]))
with open_ticker(config, Path(sys.argv[2]), rules=rules) as ticker:
    for line in sys.stdin:
        report = ticker.tick(datetime.fromisoformat(line.strip()))
        left = getattr(report, "backlog_left", 0)
        print(json.dumps({"classified": len(report.classified), "backlog": left}), flush=True)
"""


def merge_base() -> str:
    """The commit this branch started from on main (the default "before")."""
    out = subprocess.run(
        ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True
    )
    return out.stdout.strip() or "HEAD~1"

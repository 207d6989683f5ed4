"""Benchmark the forge's GitHub cost: counted requests, 304s, wall time, peak memory per scenario.

Run: .venv/bin/python bench/bench_forge.py [--prs 100] [--files 20]
Scenarios (against the sandbox, through the real PyGithub over HTTP):
  (a) gather one changed PR's snapshot (cold process, then after a push to the PR);
  (b) re-poll N unchanged open PRs (list + full snapshot of each);
  (c) the same right after an installation-token rotation, and once more after it.
Reference: Mergify users report 10-15 API calls per PR event.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capdaemon.config import GitHubConfig  # noqa: E402
from capdaemon.forge.client import Forge  # noqa: E402
from ghsandbox import CommitSpec, Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402


def measure(sb: Sandbox, fn: Callable[[], Any]) -> dict[str, Any]:
    """Run `fn` once; sandbox counters, wall time and peak Python memory."""
    sb.reset_counters()
    tracemalloc.start()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    total = sb.counters()["total"]
    return {
        "requests": total["requests"],
        "counted": total["counted"],
        "not_modified": total["not_modified"],
        "wall_ms": wall * 1000,
        "peak_kib": peak / 1024,
    }


def row(name: str, m: dict[str, Any], per: int = 1) -> str:
    """One table line."""
    per_pr = f"{m['counted'] / per:.2f}" if per > 1 else str(m["counted"])
    return (
        f"| {name:<52} | {m['requests']:>8} | {m['counted']:>7} | {per_pr:>9} | "
        f"{m['not_modified']:>5} | {m['wall_ms']:>9.1f} | {m['peak_kib']:>9.0f} |"
    )


def main() -> int:
    """Build the scenario, run the three measurements, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prs", type=int, default=100, help="open PRs for (b) and (c)")
    ap.add_argument("--files", type=int, default=20, help="files changed by the PR of (a)")
    args = ap.parse_args()
    from capdaemon.logging import configure_logging

    configure_logging(level="warning")  # the table, not one event per snapshot

    keys = std.generate_keys()
    with tempfile.TemporaryDirectory() as tmp:
        key_path, _ = std.write_keys(keys, Path(tmp) / "keys")
        sb = Sandbox.start(Path(tmp) / "sb", std.standard_seed(keys, rate_limit=100_000))
        try:
            repo = std.REPO
            sb.commit_files(repo, "main", {".capdaemon.yml": "owners: [alice]\n"}, "policy")
            cfg = GitHubConfig(
                base_url=sb.base_url,
                app_id=std.APP_ID,
                private_key_file=str(key_path),
                installation_id=std.INSTALLATION_ID,
            )
            forge = Forge.from_config(cfg, write_interval=0)
            _ = forge.login  # App identity is resolved once per process

            # (a) one changed PR: a typical agent PR touching `--files` files incl. one config file
            files: dict[str, Any] = {
                f"src/widgets/m{i:03d}.py": f"X = {i}\n" for i in range(args.files - 1)
            }
            files["config/app.yml"] = "retries: 3\n"
            sb.commit_files(
                repo,
                "agent/one",
                files,
                "Change\n\nAgent-Session: claude/opus/s-00000001\n",
                author="agent-1",
                parent_branch="main",
            )
            n = sb.open_pr(repo, "agent/one", "main", "one", "", "agent-1")
            lines = []
            lines.append(
                row(
                    f"(a) snapshot of a new {args.files}-file PR (cold process)",
                    measure(sb, lambda: forge.snapshot(repo, n)),
                )
            )
            sb.commit_files(repo, "agent/one", {"src/widgets/m000.py": "X = -1\n"}, "fix")
            forge.new_tick()
            lines.append(
                row(
                    "(a) same PR after a push (warm process)",
                    measure(sb, lambda: forge.snapshot(repo, n)),
                )
            )

            # (b) N unchanged open PRs
            main = sb.branch_sha(repo, "main")
            who = sb.backend.person("agent-2")
            specs = [
                CommitSpec(
                    branch=f"agent/b{i:03d}",
                    files={f"docs/guide/p{i:03d}.md": f"page {i}\n"},
                    message=f"page {i}",
                    author=who,
                    when=sb.now(),
                    parent=main,
                )
                for i in range(args.prs - 1)
            ]
            sb.bulk_commits(repo, specs)
            for i in range(args.prs - 1):
                sb.open_pr(repo, f"agent/b{i:03d}", "main", f"page {i}", "", "agent-2")

            def poll() -> None:
                forge.new_tick()
                for pr in forge.list_open_prs(repo):
                    forge.snapshot(repo, pr.number)

            poll()  # first sight of all of them (fills the caches)
            lines.append(
                row(
                    f"(b) re-poll {args.prs} unchanged PRs (list + snapshots)",
                    measure(sb, poll),
                    per=args.prs,
                )
            )
            assert forge.installations is not None
            forge.installations.invalidate_all()  # the hourly rotation, made to happen now
            lines.append(
                row(
                    f"(c) re-poll {args.prs} PRs right after a token rotation",
                    measure(sb, poll),
                    per=args.prs,
                )
            )
            lines.append(
                row(
                    f"(c) re-poll {args.prs} PRs once more (new token, warm)",
                    measure(sb, poll),
                    per=args.prs,
                )
            )
            forge.close()
        finally:
            sb.stop()

    print(
        "| scenario                                             | requests | counted | per PR    |"
        "  304s | wall (ms) | peak KiB  |"
    )
    print(
        "|------------------------------------------------------|---------:|--------:|----------:|"
        "------:|----------:|----------:|"
    )
    for line in lines:
        print(line)
    print(
        "\n`counted` = requests that spend the hourly rate limit (sandbox counters; 304s are free)."
    )
    print("Reference: Mergify users report 10-15 API calls per PR event.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark one daemon tick: all-new PRs, then a steady state, over 1×100 and 10×100 open PRs.

Run: .venv/bin/python bench/bench_tick.py [--prs 100] [--repos 1,10]
The sandbox runs in this process; the daemon (one Ticker, as `capdaemon run` keeps it) runs in a
fresh spawned process so its peak RSS is its own. Mode shadow keeps every PR open, so the second
tick really sees the same N open PRs (a quarter each of quadrants A, B, C, D). In a steady tick
the D PRs (ballot pending) cost nothing per PR, their ballots one issue-list page per 100
issues; A/B/C PRs read their check runs and statuses (304s: a check could still raise them).
Columns: wall time, requests sent, requests counted against the rate limit, 304s, peak RSS;
then requests per endpoint (sandbox counters) for the first and the steady tick.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capdaemon.sandbox import CommitSpec, Person, Sandbox  # noqa: E402
from capdaemon.sandbox import testing as std  # noqa: E402

BASE = {
    "src/multiagent_protocol/__init__.py": '"""Bot."""\n',
    **{f"examples/ex{i}.py": f"print({i})\n" for i in range(100)},
}


def pr_files(i: int) -> dict[str, str | None]:
    """The change of PR i: A (guide page), B (bot source), C (delete an example), D (workflow)."""
    kind = i % 4
    if kind == 0:
        return {f"docs/guide/page{i}.md": f"# Page {i}\n"}
    if kind == 1:
        return {f"src/multiagent_protocol/mod{i}.py": f"VALUE = {i}\n"}
    if kind == 2:
        return {f"examples/ex{i}.py": None}
    return {f".github/workflows/w{i}.yml": f"name: w{i}\n"}


def seed_repo(sb: Sandbox, name: str, prs: int) -> str:
    """Create acme/<name> with the base files and `prs` open PRs (one fast-import, then PRs)."""
    full = sb.create_repo(std.ORG, name, files={"README.md": f"# {name}\n", **BASE})
    main = sb.branch_sha(full, "main")
    who = Person("agent-1", "agent-1@agents.example.com")
    when = datetime.now(UTC)
    specs = [
        CommitSpec(
            branch=f"agent-1/pr{i}",
            files=pr_files(i),
            parent=main,
            author=who,
            when=when,
            message=f"Change {i}\n\nAgent-Session: claude-code/claude-opus-4/sess-{i:08d}\n",
        )
        for i in range(prs)
    ]
    sb.bulk_commits(full, specs)
    for i in range(prs):
        sb.open_pr(full, f"agent-1/pr{i}", "main", f"Change {i}", None, "agent-1")
    return full


def write_config(directory: Path, sb: Sandbox, key: Path, repos: list[str]) -> None:
    """A shadow-mode config supervising `repos`."""
    directory.mkdir(parents=True, exist_ok=True)
    data = {
        "github": {
            "base_url": sb.base_url,
            "app_id": std.APP_ID,
            "private_key_file": str(key),
            "installation_id": std.INSTALLATION_ID,
        },
        "bot": {"login": "capdaemon[bot]", "own_repo": std.BOT_REPO},
        "owners": [std.OWNER],
        "mode": "shadow",
        "repos": [{"name": r} for r in repos],
    }
    (directory / "capdaemon.yml").write_text(yaml.safe_dump(data), encoding="utf-8")


def daemon_child(config_dir: str, state_dir: str, conn: Any) -> None:
    """In a fresh process: build the Ticker as `capdaemon run` does, tick three times, report."""
    import argparse as _ap

    from capdaemon.commands._common import load_config_and_rules
    from capdaemon.daemon.runner import open_ticker
    from capdaemon.logging import configure_logging

    configure_logging("json", "error")  # the table only (an unprotected bench repo warns)

    config, rules = load_config_and_rules(_ap.Namespace(config=config_dir))
    with open_ticker(config, Path(state_dir), rules=rules) as ticker:
        conn.send("ready")
        for _ in range(3):
            conn.recv()
            t0 = time.perf_counter()
            report = ticker.tick()
            wall = time.perf_counter() - t0
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            conn.send(
                {
                    "wall": wall,
                    "rss_mib": rss,
                    "prs": report.prs_seen,
                    "classified": len(report.classified),
                    "errors": report.errors[:3],
                }
            )
    conn.close()


def run_scenario(repos: int, prs: int, keys: Any) -> list[dict[str, Any]]:
    """Seed the sandbox, run the ticks in a child process, return one measurement per tick."""
    with tempfile.TemporaryDirectory() as tmp:
        key, _ = std.write_keys(keys, Path(tmp) / "keys")
        sb = Sandbox.start(Path(tmp) / "sb", std.standard_seed(keys, rate_limit=10_000_000))
        if hasattr(sb, "set_fidelity"):  # a benchmark is not a paced client: no 403s for bursts
            sb.set_fidelity(points_per_minute=0)
        try:
            t0 = time.perf_counter()
            names = [seed_repo(sb, f"bench{r}", prs) for r in range(repos)]
            seeded = time.perf_counter() - t0
            write_config(Path(tmp) / "config", sb, key, names)
            ctx = mp.get_context("spawn")
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=daemon_child,
                args=(str(Path(tmp) / "config"), str(Path(tmp) / "state"), child),
            )
            proc.start()
            assert parent.recv() == "ready"
            rows = []
            for label in (
                "first tick (all new)",
                "second tick (no change)",
                "steady tick (no change)",
            ):
                sb.reset_counters()
                parent.send("go")
                m = parent.recv()
                counters = sb.counters()
                total = counters["total"]
                m.update(
                    endpoints={
                        k: (v["requests"], v["counted"], v["not_modified"])
                        for k, v in counters["endpoints"].items()
                        if v["requests"]
                    },
                    label=label,
                    requests=total["requests"],
                    counted=total["counted"],
                    not_modified=total["not_modified"],
                    seeded=seeded,
                )
                rows.append(m)
            proc.join(60)
            return rows
        finally:
            sb.stop()


def main() -> int:
    """Run the scenarios and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prs", type=int, default=100, help="open PRs per repo")
    ap.add_argument("--repos", default="1,10", help="comma-separated repo counts")
    args = ap.parse_args()
    keys = std.generate_keys()
    print(
        "| scenario | tick | PRs | classified | wall s | requests | counted | 304 | peak RSS MiB |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    per_endpoint: dict[tuple[int, str], dict[str, tuple[int, int, int]]] = {}
    for repos in (int(x) for x in args.repos.split(",")):
        for m in run_scenario(repos, args.prs, keys):
            print(
                f"| {repos} × {args.prs} | {m['label']} | {m['prs']} | {m['classified']} | "
                f"{m['wall']:.2f} | {m['requests']} | {m['counted']} | {m['not_modified']} | "
                f"{m['rss_mib']:.0f} |",
                flush=True,
            )
            if m["errors"]:
                print(f"|   errors: {m['errors']} |")
            if not m["label"].startswith("second"):
                per_endpoint[(repos, m["label"].split(" (")[0])] = m["endpoints"]
    for (repos, label), endpoints in per_endpoint.items():
        print(f"\n{label.capitalize()}, {repos} × {args.prs}: requests per endpoint")
        print("| endpoint | requests | counted | 304 |")
        print("|---|---:|---:|---:|")
        for name, (req, counted, nm) in sorted(endpoints.items(), key=lambda kv: -kv[1][0]):
            print(f"| {name} | {req} | {counted} | {nm} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

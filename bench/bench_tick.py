"""Benchmark one daemon tick: all-new PRs, then a steady state, over 1×100 and 10×100 open PRs.

Run: .venv/bin/python bench/bench_tick.py [--prs 100] [--repos 1,10] [--mode enforce]
     [--compare] [--latency-ms 100]
The sandbox runs in this process; the daemon (one Ticker, as `capdaemon run` keeps it) runs in a
fresh spawned process so its peak RSS is its own. Mode shadow keeps every PR open, so the second
tick really sees the same N open PRs (a quarter each of quadrants A, B, C, D). In a steady tick
the D PRs (ballot pending) cost nothing per PR, their ballots one issue-list page per 100
issues; A/B/C PRs take their checks from the GraphQL page of open PRs (a check could still
raise them). In the first tick a new PR costs its compare, its trees and its writes: the PR
itself, its checks and its mergeability come with that page too.
Columns: wall time, requests sent, requests counted against the rate limit, counted requests
per PR seen, 304s, GraphQL points, peak RSS, prs.journal appends (each one fsync) and their
bytes; then requests per endpoint (sandbox counters) for the first and the steady tick.

`--mode enforce` supervises in enforce mode with an extra required check `ci` that a CI App
reports `in_progress` on every head (nothing merges: every A/B/C PR waits on it). `--compare`
runs each scenario twice, without batch gathering (the REST PR list and per-PR check reads)
and with it, side by side. `--latency-ms` delays every request of the second and third ticks
by the sandbox's `delay` fault (the network of a real GitHub).
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

from ghsandbox import CommitSpec, Person, Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402

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


def pending_ci(sb: Sandbox, full: str) -> None:
    """An in_progress `ci` check run from the CI App (the evil-app seed) on every open PR head."""
    b = sb.backend
    with b.lock:
        repo = b.repo(full)
        suites = repo.setdefault("check_suites", {})
        now = b.now()
        for rec in repo["issues"].values():
            pull = rec.get("pull")
            if not pull or rec["state"] != "open":
                continue
            sha = pull["head_sha"]
            run_id = b.store.new_id()
            repo["check_runs"][str(run_id)] = {
                "id": run_id,
                "head_sha": sha,
                "app_id": std.EVIL_APP_ID,
                "status": "in_progress",
                "conclusion": None,
                "started_at": now,
                "completed_at": None,
                "output": {},
                "check_suite_id": suites.setdefault(f"{std.EVIL_APP_ID}:{sha}", b.store.new_id()),
                "created_at": now,
                "name": "ci",
            }
        b.store.save()


def write_config(
    directory: Path, sb: Sandbox, key: Path, repos: list[str], mode: str = "shadow"
) -> None:
    """A config supervising `repos` (enforce: an extra required check `ci` keeps merges waiting)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = {
        "github": {
            "base_url": sb.base_url,
            "app_id": std.APP_ID,
            "private_key_file": str(key),
            "installation_id": std.INSTALLATION_ID,
            # the whole backlog in the first tick (the cold-start budget is measured elsewhere)
            "writes_per_hour": 10**6,
            "writes_per_minute": 10**6,
        },
        "bot": {"login": "capdaemon[bot]", "own_repo": std.BOT_REPO},
        "owners": [std.OWNER],
        "mode": mode,
        "repos": [
            {"name": r, **({"extra_checks": ["ci"]} if mode == "enforce" else {})} for r in repos
        ],
    }
    (directory / "capdaemon.yml").write_text(yaml.safe_dump(data), encoding="utf-8")


def daemon_child(config_dir: str, state_dir: str, conn: Any, batch: bool = True) -> None:
    """In a fresh process: build the Ticker as `capdaemon run` does, tick three times, report."""
    import argparse as _ap

    from capdaemon.commands._common import load_config_and_rules
    from capdaemon.daemon.service.runner import open_ticker
    from capdaemon.forge.pacing import ContentPacer
    from capdaemon.logging import configure_logging

    configure_logging("json", "error")  # the table only (an unprotected bench repo warns)

    config, rules = load_config_and_rules(_ap.Namespace(config=config_dir))
    with open_ticker(config, Path(state_dir), rules=rules) as ticker:
        ticker.forge.batch_gathering = batch
        # measurement only: the whole backlog in the first tick, not paced to GitHub's 80
        # content-creating requests a minute (bench_cron_tick measures the paced cold start)
        ticker.forge.transport.pacer = ContentPacer(per_minute=10**6, per_hour=10**6)
        journal = _count_journal(ticker.prs)
        conn.send("ready")
        for _ in range(3):
            conn.recv()
            t0 = time.perf_counter()
            report = ticker.tick()
            wall = time.perf_counter() - t0
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            appends, appended = journal.pop("appends", 0), journal.pop("bytes", 0)
            conn.send(
                {
                    "appends": appends,
                    "journal_bytes": appended,
                    "wall": wall,
                    "rss_mib": rss,
                    "prs": report.prs_seen,
                    "classified": len(report.classified),
                    "errors": report.errors[:3],
                }
            )
    conn.close()


def _count_journal(store: Any) -> dict[str, int]:
    """Count the store's journal appends and their bytes (the file grows by one line each)."""
    counts: dict[str, int] = {}
    save = store.save

    def counted(rec: Any) -> None:
        before = store.journal.stat().st_size if store.journal.exists() else 0
        save(rec)
        counts["appends"] = counts.get("appends", 0) + 1
        counts["bytes"] = counts.get("bytes", 0) + store.journal.stat().st_size - before

    store.save = counted
    return counts


def run_scenario(
    repos: int,
    prs: int,
    keys: Any,
    *,
    mode: str = "shadow",
    batch: bool = True,
    latency_ms: float = 0.0,
) -> list[dict[str, Any]]:
    """Seed the sandbox, run the ticks in a child process, return one measurement per tick."""
    with tempfile.TemporaryDirectory() as tmp:
        key, _ = std.write_keys(keys, Path(tmp) / "keys")
        sb = Sandbox.start(Path(tmp) / "sb", std.standard_seed(keys, rate_limit=10_000_000))
        if hasattr(sb, "set_fidelity"):  # a benchmark is not a paced client: no 403s for bursts
            sb.set_fidelity(points_per_minute=0, content_per_minute=0, content_per_hour=0)
        try:
            t0 = time.perf_counter()
            names = [seed_repo(sb, f"bench{r}", prs) for r in range(repos)]
            if mode == "enforce":
                for name in names:
                    pending_ci(sb, name)
            seeded = time.perf_counter() - t0
            write_config(Path(tmp) / "config", sb, key, names, mode)
            ctx = mp.get_context("spawn")
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=daemon_child,
                args=(str(Path(tmp) / "config"), str(Path(tmp) / "state"), child, batch),
            )
            proc.start()
            assert parent.recv() == "ready"
            rows = []
            for label in (
                "first tick (all new)",
                "second tick (no change)",
                "steady tick (no change)",
            ):
                if latency_ms and not label.startswith("first"):
                    sb.clear_faults()
                    sb.faults("*", ".*", kind="delay", delay=latency_ms / 1000, count=10**9)
                sb.reset_counters()
                sb.app.graphql.reset()
                parent.send("go")
                m = parent.recv()
                m["points"] = sb.app.graphql.total_points()
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
    ap.add_argument("--mode", choices=("shadow", "enforce"), default="shadow")
    ap.add_argument("--compare", action="store_true", help="without and with batch gathering")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="delay of ticks 2 and 3")
    args = ap.parse_args()
    keys = std.generate_keys()
    print(
        "| scenario | batch | tick | PRs | classified | wall s | requests | counted | "
        "counted per PR | 304 | GraphQL points | peak RSS MiB | journal appends | journal KiB |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    per_endpoint: dict[tuple[int, str, str], dict[str, tuple[int, int, int]]] = {}
    for repos in (int(x) for x in args.repos.split(",")):
        for batch in (False, True) if args.compare else (True,):
            on = "on" if batch else "off"
            rows = run_scenario(
                repos, args.prs, keys, mode=args.mode, batch=batch, latency_ms=args.latency_ms
            )
            for m in rows:
                print(
                    f"| {repos} × {args.prs} {args.mode} | {on} | {m['label']} | {m['prs']} | "
                    f"{m['classified']} | {m['wall']:.2f} | {m['requests']} | {m['counted']} | "
                    f"{m['counted'] / max(1, m['prs']):.2f} | "
                    f"{m['not_modified']} | {m['points']} | {m['rss_mib']:.0f} | "
                    f"{m['appends']} | {m['journal_bytes'] / 1024:.1f} |",
                    flush=True,
                )
                if m["errors"]:
                    print(f"|   errors: {m['errors']} |")
                if not m["label"].startswith("second"):
                    per_endpoint[(repos, on, m["label"].split(" (")[0])] = m["endpoints"]
    for (repos, on, label), endpoints in per_endpoint.items():
        print(f"\n{label.capitalize()}, {repos} × {args.prs}, batch {on}: requests per endpoint")
        print("| endpoint | requests | counted | 304 |")
        print("|---|---:|---:|---:|")
        for name, (req, counted, nm) in sorted(endpoints.items(), key=lambda kv: -kv[1][0]):
            print(f"| {name} | {req} | {counted} | {nm} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

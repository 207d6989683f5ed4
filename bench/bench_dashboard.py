"""Benchmark the dashboard on one year of synthetic state: read-model build and page renders.

Run: .venv/bin/python bench/bench_dashboard.py [--prs 20000] [--per-pr 10] [--runs 5]
     [--before REV]

The state is written in the audit writer's exact format (canonical JSON, seq/prev/hash chain,
`.head` pointer: `capdaemon audit verify` accepts it) without its per-entry fsync, so a year
(~200,000 entries for 20,000 PRs) builds in well under a minute. Each PR gets two classified
heads and the actions a tick records for it (tier, issue, merge attempted/done, probe, ...);
prs.json holds the PRs as the daemon's PRRecord writes them.

Each phase runs in its own fresh process so its peak RSS is its own:
- baseline: read both JSONL files once with `json.loads` per line;
- model:    build the read model (both logs read and their chains verified, all state files);
- pages:    after start-up, median render time of the Overview, the first PRs page, a PRs
            search, the full (all-rows) PRs table the static export writes, and one story.
- rebuild:  the server's life, before and after in one run: build the model, append one
            audit entry, rebuild as the server does while the old model is still served (the
            code of `--before`, default `main`, exported with `git archive`, rebuilds from
            scratch; this tree continues the old model), then render the served pages; the
            rebuild time and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# `--code DIR` (the rebuild phase of the old tree): that package, not this tree's
CODE = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else str(ROOT)
sys.path.insert(0, CODE)

from capdaemon.audit import GENESIS  # noqa: E402
from capdaemon.canon import canonical_json, entry_hash  # noqa: E402
from capdaemon.config import Config, RepoConfig  # noqa: E402
from capdaemon.filenames import ACTIONS_LOG, CLASSIFIER_LOG  # noqa: E402
from capdaemon.state import atomic_write_json  # noqa: E402
from capdaemon.stores.botstate import PRS_VERSION, PRRecord  # noqa: E402
from capdaemon.timefmt import utc_iso  # noqa: E402

RULES = (
    "published_verdict",
    "bot_self_repo",
    "empty_pr",
    "auto_revert_marker",
    "agent_session_invalid",
    "classifier_publisher_invalid",
    "file_list_incomplete",
    "todo_prod",
    "secrets_in_diff",
    "dependency_change",
    "schema_change",
    "workflow_change",
    "migration",
    "repo_policy",
)
REPOS = tuple(f"acme/service-{i}" for i in range(8))
END = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class ChainWriter:
    """Appends entries as capdaemon.audit.AuditLog.append does, minus the lock and fsync."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self.seq, self.prev = 0, GENESIS

    def append(self, body: dict[str, Any]) -> None:
        self.seq += 1
        body["seq"], body["prev"] = self.seq, self.prev
        body["hash"] = self.prev = entry_hash(body)
        self.fh.write(canonical_json(body) + "\n")

    def close(self) -> None:
        self.fh.close()
        atomic_write_json(
            self.path.with_name(self.path.name + ".head"), {"seq": self.seq, "hash": self.prev}
        )


def _classification(ref: str, head: str, q: str, ts: str, rnd: random.Random) -> dict[str, Any]:
    files = [
        {
            "path": f"src/pkg{rnd.randrange(40)}/mod{rnd.randrange(500)}.py",
            "status": "modified",
            "quadrant": q,
            "ir": "reversible",
            "cr": "critical" if q in "BD" else "non-critical",
            "reasons": ["revertable file edit", "source file"],
        }
        for _ in range(rnd.randint(1, 4))
    ]
    rules = [{"rule": "path_classifier_default", "result": "vote", "vote": q, "reason": "files"}]
    rules += [{"rule": r, "result": "abstain", "match": False} for r in RULES]
    return {
        "pr": ref,
        "ts": ts,
        "head_sha": head,
        "base_sha": "b" * 40,
        "quadrant": q,
        "reasoning": f"{files[0]['path']} modified; revertable file edit (reversible)",
        "rules_fired": rules,
        "files": files,
        "findings": [],
        "blocking": [],
        "fingerprint": head[:32],
        "capability": {"enforced": False, "legacy": False, "task_id": None, "violations": []},
    }


def build_state(state: Path, prs: int, per_pr: int) -> dict[str, int]:
    """Write a year of state for `prs` PRs (about `per_pr` audit entries each)."""
    rnd = random.Random(7)
    state.mkdir(parents=True, exist_ok=True)
    cl = ChainWriter(state / CLASSIFIER_LOG)
    ac = ChainWriter(state / ACTIONS_LOG)
    records: dict[str, Any] = {}
    step = timedelta(days=365) / prs
    for i in range(prs):
        at = END - timedelta(days=365) + step * i
        repo = REPOS[i % len(REPOS)]
        ref = f"{repo}#{i + 1}"
        q = "ABCD"[rnd.randrange(4)]
        heads = [f"{rnd.getrandbits(160):040x}" for _ in range(2)]
        n = 0
        for k, head in enumerate(heads):
            ts = utc_iso(at + timedelta(minutes=10 * k))
            cl.append(_classification(ref, head, q, ts, rnd))
            ac.append({"action": "tier", "pr": ref, "ts": ts, "tier": 1, "head_sha": head})
            n += 2
        ts = utc_iso(at + timedelta(minutes=30))
        kind = "ballot" if q == "D" else "review"
        issue = f"acme/capdaemon-bot#{i + 1}"
        ac.append({"action": "issue_opened", "pr": ref, "ts": ts, "issue": issue, "kind": kind})
        if q == "D":
            ac.append({"action": "vote_counted", "pr": ref, "ts": ts, "user": "alice"})
            ac.append(
                {
                    "action": "ballot",
                    "pr": ref,
                    "ts": ts,
                    "status": "approved",
                    "decided_by": "alice",
                    "issue": issue,
                }
            )
            n += 2
        ac.append({"action": "merge", "pr": ref, "ts": ts, "status": "attempted", "quadrant": q})
        ac.append({"action": "merge", "pr": ref, "ts": ts, "status": "done", "merge_sha": "m" * 40})
        ac.append({"action": "probe.watch", "pr": ref, "ts": ts, "merge_sha": "m" * 40})
        n += 4
        while n < per_pr:
            ac.append({"action": "probe.healthy", "pr": ref, "ts": ts, "merge_sha": "m" * 40})
            n += 1
        rec = PRRecord.from_dict(  # its JSON form read back: the same under any revision
            {
                "repo": repo,
                "number": i + 1,
                "head_sha": heads[-1],
                "quadrant": q,
                "state": "merged",
                "title": f"Change number {i + 1} to the service",
                "author": f"agent-{i % 5}",
            }
        )
        records[ref] = rec.to_dict()
    cl.close()
    ac.close()
    atomic_write_json(state / "prs.json", {"version": PRS_VERSION, "prs": records})
    atomic_write_json(  # as the safety steps leave it: every PR's tier, nothing pending
        state / "safety.json",
        {
            "version": 1,
            "cursor": {"seq": ac.seq, "offset": (state / ACTIONS_LOG).stat().st_size},
            "tiers": {},
            "one_tap": {},
            "protection": {r: {"seen_ok": True, "drift": None} for r in REPOS},
        },
    )
    atomic_write_json(
        state / "tick_metrics.json",
        {"last_tick_at": utc_iso(END), "last_tick_seconds": 1.2, "ticks": 525600},
    )
    return {"classifier": cl.seq, "actions": ac.seq}


def _rss_mb() -> float:
    """This process's peak RSS in MiB (VmHWM: unlike ru_maxrss it does not carry the parent's
    peak across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _config() -> Config:
    return Config(repos=tuple(RepoConfig(name=r) for r in REPOS), owners=("alice", "bob"))


def phase_baseline(state: str, conn: Any) -> None:
    """Read both logs with json.loads per line."""
    t0, c0 = time.perf_counter(), time.process_time()
    n = 0
    for name in (CLASSIFIER_LOG, ACTIONS_LOG):
        with open(Path(state) / name, "rb") as fh:
            for line in fh:
                json.loads(line)
                n += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    conn.send({"seconds": (wall, cpu), "rss": _rss_mb(), "entries": n})


def phase_model(state: str, runs: int, conn: Any) -> None:
    """Build the read model, then time page renders."""
    from capdaemon.dashboard.readmodel import build
    from capdaemon.dashboard.site import render, story_href, story_index

    t0, c0 = time.perf_counter(), time.process_time()
    model = build(Path(state), _config(), END)
    built = (time.perf_counter() - t0, time.process_time() - c0)
    assert not model.problems, model.problems
    rss_model = _rss_mb()
    slugs = story_index(model)
    story = story_href(model.prs[len(model.prs) // 2].ref)
    pages = {
        "overview": {"path": "index.html"},
        "PRs (first page)": {"path": "prs.html"},
        "PRs search 'service-3 D'": {"path": "prs.html", "query": "service-3 D"},
        "PRs (all rows, export)": {"path": "prs.html", "static": True},
        "story of one PR": {"path": story},
    }
    times = {}
    for name, kw in pages.items():
        walls, cpus = [], []
        for _ in range(runs):
            t, c = time.perf_counter(), time.process_time()
            result = render(model, slugs=slugs, **kw)  # type: ignore[arg-type]
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
            assert result.status == 200
        times[name] = ((statistics.median(walls), statistics.median(cpus)), len(result.body))
    conn.send(
        {
            "build": built,
            "rss_model": rss_model,
            "times": times,
            "rss": _rss_mb(),
            "prs": len(model.prs),
        }
    )


def phase_rebuild(state: str) -> dict[str, Any]:
    """Start-up build, one appended entry, a rebuild beside the served model, page renders
    (run in a process of its own, with the package `--code` names)."""
    import capdaemon
    from capdaemon.audit import AuditLog
    from capdaemon.dashboard import readmodel
    from capdaemon.dashboard.site import render, story_href, story_index

    where = Path(capdaemon.__file__).resolve()
    assert where.is_relative_to(Path(CODE).resolve()), (where, CODE)
    model = readmodel.build(Path(state), _config(), END)
    rss_built = _rss_mb()
    AuditLog(Path(state) / ACTIONS_LOG).append(
        {"action": "probe.healthy", "pr": "acme/service-0#1", "merge_sha": "m" * 40}, now=END
    )
    incremental = "previous" in readmodel.build.__code__.co_varnames
    kw = {"previous": model} if incremental else {}
    t0, c0 = time.perf_counter(), time.process_time()
    new = readmodel.build(Path(state), _config(), END, **kw)
    rebuilt = (time.perf_counter() - t0, time.process_time() - c0)
    assert not new.problems, new.problems
    slugs = story_index(new)
    story = story_href(new.prs[len(new.prs) // 2].ref)
    for path in ("index.html", "prs.html", story):
        assert render(new, path, slugs=slugs).status == 200
    out = {"rebuild": rebuilt, "rss_built": rss_built, "rss": _rss_mb()}
    if incremental:  # the server's periodic full check of both chains
        t0, c0 = time.perf_counter(), time.process_time()
        again = readmodel.build(Path(state), _config(), END, previous=new, recheck=True)
        out["recheck"] = (time.perf_counter() - t0, time.process_time() - c0)
        assert again.fold.resumed and not again.problems
        out["rss_recheck"] = _rss_mb()
    return out


def _rebuild_with(code: Path, state: Path) -> dict[str, Any]:
    """phase_rebuild in a fresh interpreter whose `capdaemon` is the one under `code`."""
    out = subprocess.run(
        [sys.executable, __file__, "--code", str(code), "--rebuild-only", str(state)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out.splitlines()[-1]))


def _old_tree(rev: str, into: Path) -> Path:
    """The capdaemon package at git revision `rev`, exported under `into`."""
    into.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "capdaemon"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _child(target: Any, *args: Any) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=target, args=(*args, child))
    proc.start()
    child.close()  # a child that dies makes recv() raise instead of waiting forever
    out = parent.recv()
    proc.join()
    return out


def main() -> int:
    """Build the state, run the phases, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prs", type=int, default=20000)
    ap.add_argument("--per-pr", type=int, default=10, help="audit entries per PR (about)")
    ap.add_argument("--runs", type=int, default=5, help="renders per page (median)")
    ap.add_argument("--before", default="main", help="git revision to compare the rebuild with")
    ap.add_argument("--code", help=argparse.SUPPRESS)
    ap.add_argument("--rebuild-only", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rebuild_only:
        print(json.dumps(phase_rebuild(args.rebuild_only)))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as tmp:
        state = Path(tmp) / "bot-state"
        t0 = time.perf_counter()
        counts = build_state(state, args.prs, args.per_pr)
        made = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in state.iterdir()) / 1e6
        entries = counts["classifier"] + counts["actions"]
        print(
            f"state: {args.prs} PRs, {entries} audit entries ({counts['classifier']} "
            f"classifications, {counts['actions']} actions), {size:.0f} MB; written in {made:.1f} s"
        )
        base = _child(phase_baseline, str(state))
        res = _child(phase_model, str(state), args.runs)
        old = _rebuild_with(_old_tree(args.before, Path(tmp) / "old"), state)
        new = _rebuild_with(ROOT, state)
    bw, bc = base["seconds"]
    print()
    print(
        f"| {'step':34} | {'input':>16} | {'wall':>9} | {'CPU':>9} | {'CPU × baseline':>14} "
        f"| {'peak RSS':>9} |"
    )
    print(f"|{'-' * 36}|{'-' * 18}|{'-' * 11}|{'-' * 11}|{'-' * 16}|{'-' * 11}|")

    def row(step: str, inp: str, secs: tuple[float, float], rss: str) -> None:
        wall, cpu = secs
        print(
            f"| {step:34} | {inp:>16} | {wall * 1000:>7.0f}ms | {cpu * 1000:>7.0f}ms "
            f"| {cpu / bc:>13.2f}× | {rss:>9} |"
        )

    row("baseline: json.loads per line", f"{entries} entries", (bw, bc), f"{base['rss']:.0f} MB")
    row(
        "read model build (start-up)",
        f"{entries} entries",
        res["build"],
        f"{res['rss_model']:.0f} MB",
    )
    for name, (secs, nbytes) in res["times"].items():
        row(f"render {name}", f"{nbytes / 1024:.0f} KB html", secs, "")
    print(f"\npeak RSS of the dashboard process after all renders: {res['rss']:.0f} MB")
    print()
    print(
        f"| {'rebuild after one appended entry':34} | {'wall':>9} | {'CPU':>9} "
        f"| {'× before':>8} | {'RSS after start-up':>18} | {'peak RSS':>9} |"
    )
    print(f"|{'-' * 36}|{'-' * 11}|{'-' * 11}|{'-' * 10}|{'-' * 20}|{'-' * 11}|")
    for label, r in ((f"before ({args.before}, from scratch)", old), ("after (this tree)", new)):
        wall, cpu = r["rebuild"]
        ratio = cpu / old["rebuild"][1]
        print(
            f"| {label:34} | {wall * 1000:>7.0f}ms | {cpu * 1000:>7.0f}ms | {ratio:>7.2f}× "
            f"| {r['rss_built']:>14.0f} MiB | {r['rss']:>5.0f} MiB |"
        )
    wall, cpu = new["recheck"]
    print(
        f"| {'after, hourly full chain check':34} | {wall * 1000:>7.0f}ms | {cpu * 1000:>7.0f}ms "
        f"| {cpu / old['rebuild'][1]:>7.2f}× | {'':>18} | {new['rss_recheck']:>5.0f} MiB |"
    )
    goal = new["rebuild"][1] <= 0.2 and new["rss_recheck"] <= 150
    print(f"goal rebuild ≤ 200 ms (CPU), peak RSS ≤ 150 MiB: {'met' if goal else 'NOT met'}")
    worst = max(res["times"][k][0][1] for k in ("overview", "PRs (first page)"))
    print(f"goal ≤ 300 ms (CPU) per page after start-up: {'met' if worst <= 0.3 else 'NOT met'}")
    print("(wall includes waiting for the CPU on a shared machine; CPU is the process's own)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

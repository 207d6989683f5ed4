"""Benchmark what a PR's whole life costs on GitHub: a stream of new PRs through the real
`capdaemon run`, counted requests and points per PR from its opening to the end of its
post-merge window, by endpoint family.

Run: .venv/bin/python bench/bench_lifecycle.py [--per-hour 300] [--minutes 10] [--window 5]
     [--repos 3] [--tick 60] [--latency 0.1] [--tree REF] [--keep DIR] [--trace FILE]
Full: --minutes 60 --window 30 (an hour of stream, GitHub's 30-minute probe window).
Smoke: .venv/bin/python bench/bench_lifecycle.py --minutes 2 --window 2 --per-hour 120

A fresh sandbox in this process holds `repos` repositories in enforce mode, each requiring a
`ci` check from a pinned CI App (bench_tick.write_config), and the decision repo. `capdaemon
run` starts as a subprocess (60 s ticks, the change detector on, `post_merge.window_minutes:
window`) from this tree or from `git archive REF` (`--tree`), and `latency` s are injected
before every answer. For `minutes`, new PRs open at `per-hour` (A/B/C/D in turn,
bench_tick.pr_files), each with CI in progress; CI completes 60–120 s later; an owner votes on
each D ballot (`/approve A` or 👍, in turn, over HTTP) 20 s after it appears. When a PR merges,
the CI App runs `ci` on its merge commit in every other repository (the others run no CI on
main), green 90 s later. The run ends when every PR merged and the last window is over (plus
two ticks); compressing the window (`--window`) shortens the probe's part of a life in
proportion, the header says so.

Traffic is capdaemon's only (the owner's clicks left out): REST requests by family (the request
path: one naming a merge commit is the post-merge probe's), counted ones (not 304, not
/rate_limit), GraphQL queries and points; per PR = over the whole run / PRs opened. Points a
minute: REST as GitHub's secondary limit counts them (GET/HEAD/OPTIONS 1, other methods 5, 304s
included) and GraphQL points, p50 / max over the run's whole minutes.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cron_world  # noqa: E402
from bench_event_stream import count, peak_rss_mib, wait_for  # noqa: E402
from bench_tick import BASE, pr_files, write_config  # noqa: E402
from event_world import (  # noqa: E402
    AGENT,
    TRAILER,
    ballot_issues,
    ci_run,
    complete_ci,
    stream_sandbox,
)

from capdaemon.decide.reaction import percentile  # noqa: E402
from capdaemon.logging import configure_logging  # noqa: E402
from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402

FAMILIES = (
    "PR reads",
    "checks reads",
    "check-run/status writes",
    "issue reads",
    "issue writes",
    "merges",
    "post-merge probe",
    "feeds and listings",
    "repo, git and settings",
    "other",
)
SHA = re.compile(r"[0-9a-f]{40}")


def family(method: str, path: str, merge_shas: set[str]) -> str:
    """The endpoint family of one REST request (a path whose last sha is a merge commit: the
    probe and the base check after a merge; a compare from a merge commit to a PR head is
    the classification of a PR opened on it)."""
    shas = SHA.findall(path)  # the probed commit is the last sha named (compare: the head)
    if shas and shas[-1] in merge_shas:
        return "post-merge probe"
    write = method not in ("GET", "HEAD", "OPTIONS")
    if path.endswith("/merge") and "/pulls/" in path:
        return "merges"
    if "/check-runs" in path or "/status" in path or "/check-suites" in path:
        return "check-run/status writes" if write else "checks reads"
    if "/pulls" in path:
        return "PR reads" if not write else "other"
    if "/issues" in path or "/labels" in path:
        return "issue writes" if write else "issue reads"
    if "/events" in path or path.endswith("/repos") or "/installation" in path:
        return "feeds and listings"
    if path.startswith("/repos/"):
        return "repo, git and settings"
    return "other"


def template(path: str) -> str:
    """A request path with its repository, numbers and shas as placeholders."""
    path = re.sub(r"^/repos/[^/]+/[^/]+", "/repos/{o}/{r}", path)
    return re.sub(r"/[0-9]+(?=/|$)", "/{n}", SHA.sub("{sha}", path))


class Tally:
    """capdaemon's REST requests seen by the sandbox (a wrapper of its REST handler): by
    family, counted, and REST points a minute of the run."""

    def __init__(self, sb: Sandbox, owner_token: str) -> None:
        self.sb = sb
        self.owner = owner_token
        self.lock = threading.Lock()
        self.merge_shas: set[str] = set()
        self.requests: Counter[str] = Counter()
        self.counted: Counter[str] = Counter()
        self.endpoints: Counter[str] = Counter()  # "family: METHOD /templated/path" → counted
        self.points: Counter[int] = Counter()  # minute of the run → REST points
        self.gql_points: dict[int, int] = {}  # minute → GraphQL total at its end
        self.trace: list[str] = []  # "seconds METHOD path?query status" (--trace)
        self.t0 = time.time()
        real = sb.app.rest

        def rest(req: Any, path: str, urls: Any, *more: Any) -> Any:
            resp = real(req, path, urls, *more)
            if self.owner not in (req.headers.get("Authorization") or ""):
                self.add(req.method, path, resp.status_code)
                query = req.query_string.decode()
                with self.lock:
                    self.trace.append(
                        f"{time.time() - self.t0:8.1f} {req.method} {path}"
                        f"{'?' + query if query else ''} {resp.status_code}"
                    )
            return resp

        sb.app.rest = rest  # type: ignore[method-assign]

    def add(self, method: str, path: str, status: int) -> None:
        """Count one of capdaemon's requests."""
        with self.lock:
            fam = family(method, path, self.merge_shas)
            self.requests[fam] += 1
            if status not in (304, 401) and path != "/rate_limit":
                self.counted[fam] += 1
                self.endpoints[f"{fam}: {method} {template(path)}"] += 1
            minute = int((time.time() - self.t0) // 60)
            self.points[minute] += 1 if method in ("GET", "HEAD", "OPTIONS") else 5

    def start(self) -> None:
        """Zero the run's clock (after the daemon's first tick)."""
        with self.lock:
            self.requests.clear()
            self.counted.clear()
            self.endpoints.clear()
            self.points.clear()
            self.trace.clear()
            self.t0 = time.time()
        self.gql0 = self.sb.app.graphql.total_points()

    def sample_graphql(self) -> None:
        """The GraphQL points so far, at this minute of the run."""
        minute = int((time.time() - self.t0) // 60)
        self.gql_points[minute] = self.sb.app.graphql.total_points() - self.gql0

    def graphql_queries(self, before: dict[str, int]) -> int:
        """GraphQL requests capdaemon sent since `before` (the owner sends none)."""
        return sum(self.graphql_by_operation(before).values())

    def graphql_by_operation(self, before: dict[str, int]) -> dict[str, int]:
        """GraphQL requests since `before`, by operation name."""
        now = {k: v["requests"] for k, v in self.sb.counters()["endpoints"].items()}
        return {
            k.removeprefix("POST /graphql").strip() or "(unnamed)": n - before.get(k, 0)
            for k, n in now.items()
            if k.startswith("POST /graphql") and n > before.get(k, 0)
        }


class Life:
    """One PR through its life: opened, CI done, voted (D), merged, CI on its merge commit."""

    def __init__(self, repo: str, number: int, sha: str, quadrant: str, at: float) -> None:
        self.repo, self.number, self.sha, self.quadrant = repo, number, sha, quadrant
        self.opened = at
        self.ci_at = at + random.uniform(60, 120)
        self.ci_done = False
        self.voted = False
        self.merged_at: float | None = None
        self.merge_sha = ""
        self.main_ci_done = False


def write_run_config(sb: Sandbox, key: Path, tmp: Path, names: list[str], args: Any) -> Path:
    """Enforce, `ci` required on every repo, the tick at `args.tick`, the probe window."""
    cfg_dir = tmp / "config"
    write_config(cfg_dir, sb, key, names, "enforce")
    cfg_file = cfg_dir / "capdaemon.yml"
    data = yaml.safe_load(cfg_file.read_text(encoding="utf-8"))
    data["schedule"] = {"tick_seconds": int(args.tick)}
    data["post_merge"] = {"window_minutes": int(args.window)}
    cfg_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    return cfg_dir


def start_daemon(tree: Path, cfg_dir: Path, state: Path, log: Path) -> subprocess.Popen[bytes]:
    """`capdaemon run` from `tree` as a subprocess, its JSON log to `log`."""
    cmd = [sys.executable, "-m", "capdaemon.cli", "run", "--config", str(cfg_dir)]
    cmd += ["--state", str(state), "--log-format", "json", "--log-level", "info"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.Popen(
        cmd, cwd=str(tree), stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env
    )


def life_files(k: int) -> tuple[str, dict[str, str | None]]:
    """The quadrant and change of the k-th PR: A (a guide page), B (bot source), C (delete one
    of BASE's 100 examples), D (a workflow), in turn."""
    quadrant, n = "ABCD"[k % 4], 20_000 + k
    if quadrant == "C":
        return quadrant, {f"examples/ex{(k // 4) % 100}.py": None}
    return quadrant, pr_files(n - n % 4 + "ABCD".index(quadrant))


class World:
    """Drives the PRs' lives against the sandbox, once a second."""

    def __init__(self, sb: Sandbox, names: list[str], token: str, tally: Tally, args: Any):
        self.sb, self.names, self.tally, self.args = sb, names, tally, args
        self.owner = std.user_github(sb.base_url, token).get_repo(std.BOT_REPO)
        self.lives: list[Life] = []
        self.votes = 0

    def open_pr(self) -> None:
        """A new PR, CI in progress on its head."""
        k = len(self.lives)
        full = self.names[k % len(self.names)]
        quadrant, files = life_files(k)
        branch = f"{AGENT}/life{k}"
        sha = self.sb.commit_files(full, branch, files, f"Life {k}\n\n{TRAILER}", AGENT, "main")
        number = self.sb.open_pr(full, branch, "main", f"Life {k}", None, AGENT)
        ci_run(self.sb, full, sha, "in_progress")
        self.lives.append(Life(full, number, sha, quadrant, time.time()))

    def step(self) -> None:
        """Move every life on by what is due now."""
        now = time.time()
        ballots: dict[tuple[str, int], int] | None = None
        b = self.sb.backend
        for life in self.lives:
            if not life.ci_done and now >= life.ci_at:
                life.ci_done = complete_ci(self.sb, life.repo, life.sha)
            if not life.voted and life.ci_done and life.merged_at is None:  # a ballot: vote
                ballots = ballot_issues(self.sb) if ballots is None else ballots
                if (life.repo, life.number) in ballots:
                    self.vote(ballots[(life.repo, life.number)])
                    life.voted = True
            if life.merged_at is None:
                with b.lock:
                    pull = b.issue(life.repo, life.number)["pull"]
                    merged, sha = bool(pull.get("merged")), str(pull.get("merge_commit_sha") or "")
                if merged:
                    self.merged(life, sha, now)
            elif not life.main_ci_done and now >= life.merged_at + 90:
                life.main_ci_done = True
                if self.ci_on_main(life.repo):
                    complete_ci(self.sb, life.repo, life.merge_sha)

    def merged(self, life: Life, sha: str, now: float) -> None:
        life.merged_at, life.merge_sha = now, sha
        with self.tally.lock:
            self.tally.merge_shas.add(sha)
        if self.ci_on_main(life.repo):
            ci_run(self.sb, life.repo, sha, "in_progress")

    def ci_on_main(self, repo: str) -> bool:
        return self.names.index(repo) % 2 == 0

    def vote(self, issue_no: int) -> None:
        issue = self.owner.get_issue(issue_no)
        if self.votes % 2 == 0:
            issue.create_comment("/approve A")
        else:
            issue.create_reaction("+1")
        self.votes += 1

    def done(self, now: float) -> bool:
        """Every PR merged and its window (plus two ticks) over."""
        end = self.args.window * 60 + 2 * self.args.tick
        return all(x.merged_at is not None and now >= x.merged_at + end for x in self.lives)


def run(args: argparse.Namespace, tree: Path) -> dict[str, Any]:
    """One sandbox, `capdaemon run`, the stream and its drain; the measurements."""
    keys = std.generate_keys()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with stream_sandbox(keys, tmp) as (sb, key, token):
            names = [
                sb.create_repo(std.ORG, f"life{r}", files={"README.md": "# life\n", **BASE})
                for r in range(args.repos)
            ]
            tally = Tally(sb, token)
            cfg_dir = write_run_config(sb, key, tmp, names, args)
            state, log = tmp / "state", tmp / "daemon.log"
            if args.latency:
                sb.faults("*", ".", kind="delay", delay=args.latency, count=10**9)
            proc = start_daemon(tree, cfg_dir, state, log)
            try:
                if not wait_for(
                    lambda: count(log, "tick.done") >= 1 or proc.poll() is not None, 300
                ):
                    raise RuntimeError(
                        f"capdaemon run did not finish a tick: {log.read_text()[-2000:]}"
                    )
                if proc.poll() is not None:
                    raise RuntimeError(f"capdaemon run exited: {log.read_text()[-2000:]}")
                out = _measure(sb, names, token, tally, args)
                out["rss"] = peak_rss_mib(proc.pid)
                if args.trace:
                    Path(args.trace).write_text("\n".join(tally.trace) + "\n")
                out["errors"] = count(log, "tick.failed") + count(log, "detect.failed")
            finally:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(120)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                if args.keep:
                    Path(args.keep).mkdir(parents=True, exist_ok=True)
                    (Path(args.keep) / f"lifecycle-{args.label}.log").write_bytes(log.read_bytes())
            return out


def _measure(
    sb: Sandbox, names: list[str], token: str, tally: Tally, args: argparse.Namespace
) -> dict[str, Any]:
    world = World(sb, names, token, tally, args)
    gql_before = {k: v["requests"] for k, v in sb.counters()["endpoints"].items()}
    tally.start()
    t0 = time.time()
    period = 3600.0 / args.per_hour
    next_pr = t0 + random.uniform(0, period)
    stream_end = t0 + args.minutes * 60
    deadline = stream_end + args.window * 60 + 2 * args.tick + 600
    while True:
        now = time.time()
        if now < stream_end and now >= next_pr:
            world.open_pr()
            next_pr += period
        world.step()
        tally.sample_graphql()
        if now >= stream_end and world.done(now):
            break
        if now > deadline:
            print("bench_lifecycle: drain timed out; figures cover what ended", file=sys.stderr)
            break
        time.sleep(1.0)
    wall = time.time() - t0
    minutes = int(wall // 60)
    gql = [0] + [tally.gql_points.get(m, 0) for m in range(minutes + 1)]
    gql_pm = [max(0, gql[m + 1] - gql[m]) for m in range(minutes)]
    rest_pm = [tally.points.get(m, 0) for m in range(minutes)]
    lives = world.lives
    return {
        "prs": len(lives),
        "merged": sum(1 for x in lives if x.merged_at is not None),
        "quadrants": Counter(x.quadrant for x in lives),
        "requests": dict(tally.requests),
        "counted": dict(tally.counted),
        "endpoints": dict(tally.endpoints.most_common()),
        "graphql_queries": tally.graphql_queries(gql_before),
        "graphql_ops": tally.graphql_by_operation(gql_before),
        "graphql_points": sb.app.graphql.total_points() - tally.gql0,
        "rest_pm": rest_pm,
        "gql_pm": gql_pm,
        "wall": wall,
        "merge_s": [x.merged_at - x.opened for x in lives if x.merged_at is not None],
    }


def _p(xs: list[int]) -> str:
    return f"{percentile([float(x) for x in xs], 50):.0f} / {max(xs)}" if xs else "—"


def table(r: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """The per-family table of one run."""
    prs = max(1, r["prs"])
    lines = ["| family | requests per PR | counted per PR |", "|---|---:|---:|"]
    for fam in FAMILIES:
        req, cnt = r["requests"].get(fam, 0), r["counted"].get(fam, 0)
        if req:
            lines.append(f"| {fam} | {req / prs:.2f} | {cnt / prs:.2f} |")
    total_req, total_cnt = sum(r["requests"].values()), sum(r["counted"].values())
    lines.append(f"| **REST total** | **{total_req / prs:.2f}** | **{total_cnt / prs:.2f}** |")
    lines.append(
        f"| GraphQL queries / points | {r['graphql_queries'] / prs:.2f} | "
        f"{r['graphql_points'] / prs:.2f} points |"
    )
    hours = r["wall"] / 3600
    lines += [
        "",
        f"PRs {r['prs']} ({dict(sorted(r['quadrants'].items()))}), merged {r['merged']}; "
        f"wall {r['wall'] / 60:.1f} min; daemon errors {r['errors']}; daemon peak RSS "
        f"{r['rss']:.0f} MiB",
        f"counted an hour over the run: {total_cnt / hours:.0f} "
        f"(per PR × {args.per_hour:g} PRs an hour: {total_cnt / prs * args.per_hour:.0f})",
        f"REST points a minute p50 / max: {_p(r['rest_pm'])}; GraphQL points a minute p50 / "
        f"max: {_p(r['gql_pm'])}",
    ]
    return lines


def main() -> int:
    """Run the stream and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-hour", type=float, default=300.0, help="new PRs an hour")
    ap.add_argument("--minutes", type=float, default=10.0, help="how long new PRs open")
    ap.add_argument("--window", type=float, default=5.0, help="post_merge.window_minutes")
    ap.add_argument("--repos", type=int, default=3)
    ap.add_argument("--tick", type=float, default=60.0, help="schedule.tick_seconds")
    ap.add_argument("--latency", type=float, default=0.1, help="injected per request (s)")
    ap.add_argument("--tree", help="git ref: run the daemon from `git archive REF`")
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--keep", help="a folder to copy the daemon log into")
    ap.add_argument("--endpoints", action="store_true", help="counted per PR by endpoint")
    ap.add_argument("--trace", help="a file to write each of capdaemon's REST requests to")
    args = ap.parse_args()
    if args.per_hour <= 0 or args.minutes <= 0 or args.window < 1:
        ap.error("--per-hour and --minutes must be > 0, --window ≥ 1")
    args.label = args.tree or "this-tree"
    random.seed(args.seed)
    configure_logging("json", "error")
    with tempfile.TemporaryDirectory() as tmp:
        tree = cron_world.unpack(args.tree, Path(tmp) / "tree") if args.tree else ROOT
        r = run(args, tree)
    print(
        f"PR lifecycle under `capdaemon run` ({args.label}): {args.repos} repos, enforce, "
        f"{1000 * args.latency:g} ms per request, a tick every {args.tick:g} s; new PRs at "
        f"{args.per_hour:g} an hour for {args.minutes:g} min; probe window {args.window:g} min"
    )
    print("\n".join(table(r, args)))
    if args.endpoints:
        prs = max(1, r["prs"])
        for k, v in r["endpoints"].items():
            print(f"  {v / prs:6.2f} counted per PR  {k}")
        for k, v in sorted(r["graphql_ops"].items(), key=lambda kv: -kv[1]):
            print(f"  {v / prs:6.2f} GraphQL queries per PR  {k}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

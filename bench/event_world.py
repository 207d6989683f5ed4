"""The world of bench_event_stream.py: seeded repos, a scripted stream of events against the
sandbox, and a watcher timing capdaemon's action on each event with the bench's own clock."""

from __future__ import annotations

import contextlib
import random
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tick import pr_files, seed_repo  # noqa: E402

from capdaemon.daemon.core.tickdata import BALLOT  # noqa: E402
from capdaemon.decide.reaction import percentile  # noqa: E402
from capdaemon.forge.markers import parse_marker  # noqa: E402
from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402

CI = "ci"  # the required check (repos' `extra_checks`), reported by the CI App
L1C3 = "L1.C3"
AGENT = "agent-1"
TRAILER = "Agent-Session: claude-code/claude-opus-4/sess-stream\n"
# kind → (what the bench times, events a minute over the whole fleet by default)
KINDS: dict[str, tuple[str, float]] = {
    "push": ("agent push → L1.C3 on the new head", 6.0),
    "new_pr": ("PR opened → L1.C3", 2.0),
    "check": ("`ci` completes → merge", 3.0),
    "approve": ("owner `/approve A` → merge", 1.0),
    "thumbs": ("owner 👍 on the ballot → merge", 1.0),
}


@dataclass
class Event:
    """One scripted event and, once seen, the time capdaemon acted on it."""

    kind: str
    repo: str
    number: int
    sha: str = ""  # push/new PR: the head L1.C3 must be published on
    at: float = 0.0  # time.time() when the event happened (the sandbox answered)
    acted: float | None = None

    @property
    def reaction(self) -> float | None:
        """Seconds from the event to the action (None: not acted on)."""
        return None if self.acted is None else self.acted - self.at


@dataclass
class Pools:
    """Seeded PRs each kind of event takes its targets from (disjoint: a PR gets one kind)."""

    push: list[tuple[str, int]] = field(default_factory=list)
    check: list[tuple[str, int]] = field(default_factory=list)
    vote: list[tuple[str, int]] = field(default_factory=list)


@contextlib.contextmanager
def stream_sandbox(keys: Any, tmp: Path) -> Iterator[tuple[Sandbox, Path, str]]:
    """A sandbox in this process for a stream under `capdaemon run`, GitHub's points and
    content limits off (the benches count them instead): (sandbox, App key file, the owner's
    token); stopped on exit."""
    key, _ = std.write_keys(keys, tmp / "keys")
    seed_data = std.standard_seed(keys, rate_limit=10_000_000)
    sb = Sandbox.start(tmp / "sb", seed_data)
    sb.set_fidelity(
        points_per_minute=0, rest_points_per_minute=0, content_per_minute=0, content_per_hour=0
    )
    token = next(u["token"] for u in seed_data["users"] if u["login"] == std.OWNER)
    try:
        yield sb, key, token
    finally:
        sb.stop()


def script(rates: dict[str, float], minutes: float, seed: int) -> list[tuple[float, str]]:
    """(offset s, kind) sorted: each kind at its rate, one event per period at a random point
    of the period (a jittered clock: bursts happen, no kind is missing from a short run)."""
    rng = random.Random(seed)
    out = []
    for kind, per_minute in rates.items():
        if per_minute <= 0:
            continue
        period = 60.0 / per_minute
        for j in range(int(minutes * per_minute)):
            out.append(((j + rng.random()) * period, kind))
    return sorted(out)


def ci_run(sb: Sandbox, full: str, sha: str, status: str) -> None:
    """A `ci` check run by the CI App on `sha`: in_progress, or completed with success."""
    b = sb.backend
    with b.lock:
        repo = b.repo(full)
        now = b.now()
        done = status == "completed"
        run_id = b.store.new_id()
        suite = repo.setdefault("check_suites", {}).setdefault(
            f"{std.EVIL_APP_ID}:{sha}", b.store.new_id()
        )
        repo["check_runs"][str(run_id)] = {
            "id": run_id,
            "head_sha": sha,
            "app_id": std.EVIL_APP_ID,
            "status": status,
            "conclusion": "success" if done else None,
            "started_at": now,
            "completed_at": now if done else None,
            "output": {},
            "check_suite_id": suite,
            "created_at": now,
            "name": CI,
        }
        b.store.save()


def complete_ci(sb: Sandbox, full: str, sha: str) -> bool:
    """The CI App's in-progress `ci` run on `sha` completes with success (False: none)."""
    b = sb.backend
    with b.lock:
        runs = [
            r
            for r in b.repo(full)["check_runs"].values()
            if r["name"] == CI and r["head_sha"] == sha and r["status"] != "completed"
        ]
        for run in runs:
            run.update(status="completed", conclusion="success", completed_at=b.now())
        b.store.save()
    return bool(runs)


def head_sha(sb: Sandbox, full: str, number: int) -> str:
    """The PR's head sha as the sandbox holds it."""
    return str(sb.backend.issue(full, number)["pull"]["head_sha"])


def seed(sb: Sandbox, repos: int, prs: int, rng: random.Random) -> tuple[list[str], Pools]:
    """`repos` × `prs` open PRs, a quarter each of A/B/C/D (bench_tick.pr_files). CI runs on
    every head: in progress on A/B/C (they wait on `ci`), passed on D (they wait on a vote)."""
    names = [seed_repo(sb, f"stream{r}", prs) for r in range(repos)]
    pools = Pools()
    waiting: list[tuple[str, int]] = []
    for full in names:
        for i in range(prs):
            number = i + 1
            kind = i % 4
            done = kind == 3
            ci_run(sb, full, head_sha(sb, full, number), "completed" if done else "in_progress")
            if done:
                pools.vote.append((full, number))
            elif kind < 2:  # A or B: an agent may push to it again
                pools.push.append((full, number))
            waiting.append((full, number))
    rng.shuffle(pools.push)
    half = len(pools.push) // 2
    pools.check = pools.push[half:] + [
        p for p in waiting if p not in set(pools.vote) and p not in set(pools.push)
    ]
    pools.push = pools.push[:half]
    rng.shuffle(pools.check)
    rng.shuffle(pools.vote)
    return names, pools


def ballot_issues(sb: Sandbox) -> dict[tuple[str, int], int]:
    """(repo, PR) → its open ballot issue in the decision repo (found by capdaemon's marker)."""
    out: dict[tuple[str, int], int] = {}
    b = sb.backend
    with b.lock:
        for rec in b.repo(std.BOT_REPO)["issues"].values():
            marker = parse_marker(rec.get("body"))
            if rec["state"] != "open" or not marker or marker.get("kind") != BALLOT:
                continue
            repo, _, n = str(marker.get("pr", "")).rpartition("#")
            if n.isdigit():
                out[(repo, int(n))] = int(rec["number"])
    return out


class Stream:
    """Drives the events of the script against the sandbox (agents and the CI App through the
    sandbox's backend, as their pushes land; owners over HTTP, as a browser's click would)."""

    def __init__(self, sb: Sandbox, names: list[str], pools: Pools, owner_token: str) -> None:
        self.sb = sb
        self.names = names
        self.pools = pools
        self.ballots = ballot_issues(sb)
        self.owner = std.user_github(sb.base_url, owner_token).get_repo(std.BOT_REPO)
        self.events: list[Event] = []
        self.skipped: dict[str, int] = {}
        self.opened = 0
        self.pushes = 0

    def fire(self, kind: str) -> None:
        """One event of `kind` (skipped, and counted, when its pool is empty)."""
        event = getattr(self, f"_{kind}")()
        if event is None:
            self.skipped[kind] = self.skipped.get(kind, 0) + 1
            return
        event.at = time.time()
        self.events.append(event)

    def _push(self) -> Event | None:
        if not self.pools.push:
            return None
        full, n = self.pools.push.pop()
        self.pushes += 1
        branch = f"{AGENT}/pr{n - 1}"
        change = {path: f"{text}# push {self.pushes}\n" for path, text in pr_files(n - 1).items()}
        msg = f"Rework {n}\n\n{TRAILER}"
        sha = self.sb.commit_files(full, branch, change, msg, AGENT)
        ci_run(self.sb, full, sha, "in_progress")  # CI starts on the new head
        return Event("push", full, n, sha)

    def _new_pr(self) -> Event | None:
        full = self.names[self.opened % len(self.names)]
        i = 10_000 + self.opened  # bench_tick.pr_files: A, B, C, D in turn
        self.opened += 1
        branch = f"{AGENT}/new{i}"
        sha = self.sb.commit_files(
            full, branch, pr_files(i), f"New {i}\n\n{TRAILER}", AGENT, "main"
        )
        n = self.sb.open_pr(full, branch, "main", f"New {i}", None, AGENT)
        ci_run(self.sb, full, sha, "in_progress")
        return Event("new_pr", full, n, sha)

    def _check(self) -> Event | None:
        while self.pools.check:
            full, n = self.pools.check.pop()
            if complete_ci(self.sb, full, head_sha(self.sb, full, n)):
                return Event("check", full, n)
        return None

    def _vote(self, kind: str) -> Event | None:
        while self.pools.vote:
            full, n = self.pools.vote.pop()
            issue_no = self.ballots.get((full, n))
            if issue_no is None:
                continue
            issue = self.owner.get_issue(issue_no)
            if kind == "approve":
                issue.create_comment("/approve A")
            else:
                issue.create_reaction("+1")
            return Event(kind, full, n)
        return None

    def _approve(self) -> Event | None:
        return self._vote("approve")

    def _thumbs(self) -> Event | None:
        return self._vote("thumbs")


class Watcher:
    """Looks at the sandbox every `every` s: an event is acted on when L1.C3 exists on its head
    (push, new PR) or its PR is merged (check, votes); the time it was first seen is kept."""

    def __init__(self, sb: Sandbox, events: list[Event], every: float = 0.25) -> None:
        self.sb = sb
        self.events = events
        self.every = every
        self.cursor: dict[str, int] = {}  # repo → check runs already scanned
        self.published: dict[str, float] = {}  # head sha → when L1.C3 was first seen on it
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.wait(self.every):
            self.look()

    def pending(self) -> list[Event]:
        """Events not acted on yet."""
        return [e for e in list(self.events) if e.acted is None]

    def look(self) -> None:
        """One look at every pending event."""
        pending = self.pending()
        now = time.time()
        b = self.sb.backend
        with b.lock:
            for full in {e.repo for e in pending if e.sha}:
                runs = list(b.repo(full)["check_runs"].values())
                for run in runs[self.cursor.get(full, 0) :]:
                    if run["name"] == L1C3:
                        self.published.setdefault(run["head_sha"], now)
                self.cursor[full] = len(runs)
            for e in pending:
                if e.sha:
                    seen = self.published.get(e.sha)
                    e.acted = None if seen is None else max(seen, e.at)
                elif b.issue(e.repo, e.number)["pull"].get("merged"):
                    e.acted = now


def figures(xs: list[float]) -> tuple[float, float, float] | None:
    """p50, p95 (nearest rank, as the daemon's metrics) and max, or None for no values."""
    if not xs:
        return None
    return percentile(xs, 50), percentile(xs, 95), max(xs)

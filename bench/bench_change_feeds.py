"""Benchmark the change feeds a detector between ticks could poll, on the sandbox.

Run: .venv/bin/python bench/bench_change_feeds.py [--repos 10] [--prs 100] [--polls 20]

Candidates, each polled `polls` times while nothing happens, then once after each kind of event:
- events: `GET /repos/{o}/{r}/events` per repo with `If-None-Match` (GitHub answers 304 while
  nothing changed, and a 304 is not counted; it asks for `X-Poll-Interval` seconds between polls);
- pulls: `GET /repos/{o}/{r}/pulls?sort=updated&direction=desc&per_page=1` per repo with
  `If-None-Match` (a free 304 while nothing changed; no documented lag or poll interval);
- graphql: one query, one alias per repo, of the 20 most recently updated open PRs
  (`orderBy: UPDATED_AT DESC`) — every query is counted in the GraphQL budget (no 304).
Columns: requests and counted requests per quiet poll, GraphQL points per quiet poll, mean
wall time per poll, the poll interval GitHub asks for, and which events each candidate sees
(a push onto a PR, an /approve comment, a PR opened, a check run completing, a 👍 on an issue).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tick import seed_repo  # noqa: E402

from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402

QUERY_PART = """r{i}: repository(owner: "acme", name: "{name}") {{
  pullRequests(states: OPEN, first: 20, orderBy: {{field: UPDATED_AT, direction: DESC}}) {{
    nodes {{ number updatedAt headRefOid }}
  }}
}}"""


class Events:
    """Poll each repo's events feed with its ETag; what is new since the last poll."""

    name = "events"

    def __init__(self, sb: Sandbox, session: requests.Session, repos: list[str]) -> None:
        self.sb, self.s, self.repos = sb, session, repos
        self.etags: dict[str, str] = {}
        self.last: dict[str, int] = {}
        self.interval = 0

    def poll(self) -> set[str]:
        seen: set[str] = set()
        for full in self.repos:
            headers = {"If-None-Match": self.etags[full]} if full in self.etags else {}
            r = self.s.get(f"{self.sb.base_url}/repos/{full}/events", headers=headers, timeout=30)
            self.interval = int(r.headers.get("X-Poll-Interval", 0))
            if r.status_code == 304:
                continue
            self.etags[full] = r.headers["ETag"]
            new = [e for e in r.json() if int(e["id"]) > self.last.get(full, 0)]
            if new:
                self.last[full] = max(int(e["id"]) for e in new)
            seen |= {e["type"] for e in new}
        return seen


class Pulls:
    """Each repo's open PR list, most recently updated first, one item, with its ETag: any
    push, comment or new PR puts a PR on top and changes the page; nothing changed is a 304."""

    name = "pulls"

    def __init__(self, sb: Sandbox, session: requests.Session, repos: list[str]) -> None:
        self.sb, self.s, self.repos = sb, session, repos
        self.etags: dict[str, str] = {}
        self.interval = 0

    def poll(self) -> set[str]:
        seen: set[str] = set()
        params = {"state": "open", "sort": "updated", "direction": "desc", "per_page": 1}
        for full in self.repos:
            headers = {"If-None-Match": self.etags[full]} if full in self.etags else {}
            url = f"{self.sb.base_url}/repos/{full}/pulls"
            r = self.s.get(url, headers=headers, params=params, timeout=30)
            if r.status_code == 304:
                continue
            if full in self.etags:
                seen.add("list changed")
            self.etags[full] = r.headers["ETag"]
        return seen


class GraphQL:
    """One aliased query of the most recently updated open PRs of every repo."""

    name = "graphql"

    def __init__(self, sb: Sandbox, session: requests.Session, repos: list[str]) -> None:
        self.sb, self.s = sb, session
        parts = [QUERY_PART.format(i=i, name=f.split("/")[1]) for i, f in enumerate(repos)]
        self.query = "{ rateLimit { cost } " + "\n".join(parts) + " }"
        self.state: dict[tuple[str, int], tuple[str, str]] = {}
        self.points = 0
        self.interval = 0

    def poll(self) -> set[str]:
        r = self.s.post(f"{self.sb.base_url}/graphql", json={"query": self.query}, timeout=30)
        data = r.json()["data"]
        self.points += int(data["rateLimit"]["cost"])
        changed: set[str] = set()
        for alias, repo in data.items():
            if alias == "rateLimit":
                continue
            for pr in repo["pullRequests"]["nodes"]:
                key = (alias, pr["number"])
                now = (pr["updatedAt"], pr["headRefOid"])
                if self.state.get(key) not in (None, now):
                    changed.add("PR updated")
                elif key not in self.state and self.state:
                    changed.add("PR new")
                self.state[key] = now
        return changed


def events_script(sb: Sandbox, full: str, n: int) -> list[tuple[str, Any]]:
    """One event of each kind, as callables."""

    def push() -> None:
        sb.advance_clock(2)
        sb.commit_files(full, f"agent-1/pr{n}", {"docs/more.md": "more\n"}, "more", "agent-1")

    def approve() -> None:
        sb.advance_clock(2)
        sb.backend.add_comment(full, n, "/approve", std.OWNER)

    def opened() -> None:
        sb.advance_clock(2)
        sb.commit_files(full, "agent-1/new", {"docs/new.md": "new\n"}, "new", "agent-1", "main")
        sb.open_pr(full, "agent-1/new", "main", "New", None, "agent-1")

    def check() -> None:
        sb.advance_clock(2)
        head = sb.branch_sha(full, f"agent-1/pr{n + 1}")
        token = sb.installation_token(std.INSTALLATION_ID)
        body = {"name": "ci", "head_sha": head, "status": "completed", "conclusion": "success"}
        r = requests.post(
            f"{sb.base_url}/repos/{full}/check-runs",
            json=body,
            headers={"Authorization": f"token {token}"},
            timeout=30,
        )
        r.raise_for_status()

    def thumbs() -> None:
        sb.advance_clock(2)
        sb.backend.add_reaction(full, "issue", n + 2, "+1", std.OWNER)

    return [
        ("push", push),
        ("/approve", approve),
        ("PR opened", opened),
        ("check done", check),
        ("👍 reaction", thumbs),
    ]


def measure(sb: Sandbox, poller: Any, polls: int, script: list[tuple[str, Any]]) -> dict[str, Any]:
    poller.poll()  # prime (ETags, last ids, state)
    before = sb.counters()["total"]
    t0 = time.perf_counter()
    for _ in range(polls):
        poller.poll()
    quiet = time.perf_counter() - t0
    after = sb.counters()["total"]
    points0 = getattr(poller, "points", 0)
    sees = []
    for label, act in script:
        try:
            act()
        except Exception as exc:  # a kind the sandbox cannot script: say so
            sees.append(f"{label}: n/a ({type(exc).__name__})")
            continue
        sees.append(f"{label}: {'yes' if poller.poll() else 'no'}")
    del points0
    return {
        "requests": (after["requests"] - before["requests"]) / polls,
        "counted": (after["counted"] - before["counted"]) / polls,
        "points": getattr(poller, "points", 0),
        "ms": 1000 * quiet / polls,
        "interval": poller.interval,
        "sees": sees,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=10)
    ap.add_argument("--prs", type=int, default=100)
    ap.add_argument("--polls", type=int, default=20)
    args = ap.parse_args()
    keys = std.generate_keys()
    rows = []
    for cls in (Events, Pulls, GraphQL):
        with tempfile.TemporaryDirectory() as tmp:
            sb = Sandbox.start(Path(tmp) / "sb", std.standard_seed(keys, rate_limit=10_000_000))
            sb.set_fidelity(points_per_minute=0, content_per_minute=0, content_per_hour=0)
            try:
                names = [seed_repo(sb, f"feed{r}", args.prs) for r in range(args.repos)]
                s = requests.Session()
                s.headers["Authorization"] = f"token {std.token_for(std.OWNER)}"
                poller = cls(sb, s, names)
                points0 = 0
                if isinstance(poller, GraphQL):
                    poller.poll()
                    points0 = poller.points
                row = measure(sb, poller, args.polls, events_script(sb, names[0], 1))
                if isinstance(poller, GraphQL):
                    row["points"] = (poller.points - points0) / (args.polls + 1 + 5)
                rows.append((cls.name, row))
            finally:
                sb.stop()
    print(f"change feeds at {args.repos} repos × {args.prs} open PRs, {args.polls} quiet polls")
    print(
        f"{'feed':<8} {'req/poll':>8} {'counted/poll':>12} {'points/poll':>11} "
        f"{'ms/poll':>8} {'interval s':>10}  sees"
    )
    for name, r in rows:
        print(
            f"{name:<8} {r['requests']:>8.1f} {r['counted']:>12.1f} {r['points']:>11.1f} "
            f"{r['ms']:>8.1f} {r['interval']:>10}  {'; '.join(r['sees'])}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

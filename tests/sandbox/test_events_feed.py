"""The repository events feed: GitHub's order, ETag/304 (free), X-Poll-Interval, cap, lag, loss."""

from __future__ import annotations

from typing import Any

import requests

REPO = "acme/widgets"
FEED = f"/repos/{REPO}/events"


def _get(sb: Any, path: str, etag: str | None = None, **params: Any) -> requests.Response:
    headers = {"Authorization": f"token {sb.tokens['alice']}"}
    if etag:
        headers["If-None-Match"] = etag
    return requests.get(f"{sb.base_url}{path}", headers=headers, params=params, timeout=10)


def _pr(sb: Any, branch: str = "feat") -> int:
    sb.commit_files(REPO, branch, {f"src/{branch}.py": "x = 1\n"}, "add", "agent-1", "main")
    return int(sb.open_pr(REPO, branch, "main", f"PR {branch}", "", "agent-1"))


def test_the_feed_lists_pushes_prs_and_comments_newest_first(sandbox: Any) -> None:
    """A push, a PR opened, a comment: three events, newest first, with GitHub's payloads."""
    before = sandbox.branch_sha(REPO, "main")
    sandbox.commit_files(REPO, "main", {"docs/a.md": "a\n"}, "docs", "alice")
    n = _pr(sandbox)
    sandbox.backend.add_comment(REPO, n, "/approve", "alice")
    r = _get(sandbox, FEED)
    assert r.status_code == 200 and r.headers["X-Poll-Interval"] == "60"
    events = r.json()
    assert [e["type"] for e in events] == [
        "IssueCommentEvent",
        "PullRequestEvent",
        "PushEvent",  # the PR's branch
        "PushEvent",  # main
    ]
    comment, opened = events[0], events[1]
    assert comment["payload"]["comment"]["body"] == "/approve"
    assert comment["payload"]["issue"]["number"] == n
    assert (opened["payload"]["action"], opened["payload"]["number"]) == ("opened", n)
    main_push = next(e for e in events if e["payload"].get("ref") == "refs/heads/main")
    assert main_push["payload"]["before"] == before
    assert main_push["payload"]["head"] == sandbox.branch_sha(REPO, "main")
    ids = [int(e["id"]) for e in events]
    assert ids == sorted(ids, reverse=True)


def test_an_unchanged_feed_answers_304_and_is_not_counted(sandbox: Any) -> None:
    """Polling with the ETag costs nothing while nothing happens; a new event answers 200."""
    _pr(sandbox)
    first = _get(sandbox, FEED)
    counted = sandbox.counters()["total"]["counted"]
    again = _get(sandbox, FEED, etag=first.headers["ETag"])
    assert again.status_code == 304
    assert sandbox.counters()["total"]["counted"] == counted
    assert int(again.headers["X-RateLimit-Used"]) == int(first.headers["X-RateLimit-Used"])
    _pr(sandbox, "second")
    changed = _get(sandbox, FEED, etag=first.headers["ETag"])
    assert changed.status_code == 200 and changed.json()[0]["type"] == "PullRequestEvent"
    assert sandbox.counters()["total"]["counted"] == counted + 1


def test_the_feed_keeps_the_newest_300_events(sandbox: Any) -> None:
    """310 comments: three pages of 100 hold the newest 300; the fourth page is empty."""
    n = _pr(sandbox)
    for i in range(310):
        sandbox.backend.add_comment(REPO, n, f"comment {i}", "alice")
    pages = [_get(sandbox, FEED, per_page=100, page=p).json() for p in (1, 2, 3, 4)]
    assert [len(p) for p in pages] == [100, 100, 100, 0]
    bodies = [e["payload"]["comment"]["body"] for p in pages for e in p]
    assert bodies[0] == "comment 309" and bodies[-1] == "comment 10"


def test_a_lagging_feed_shows_an_event_only_after_the_lag(sandbox: Any) -> None:
    """events_lag_seconds holds events back, as GitHub's feed lags (30 s to hours)."""
    sandbox.set_fidelity(events_lag_seconds=30)
    n = _pr(sandbox)
    assert all(e["payload"].get("number") != n for e in _get(sandbox, FEED).json())
    sandbox.advance_clock(31)
    assert _get(sandbox, FEED).json()[0]["payload"]["number"] == n


def test_a_lossy_feed_drops_events_silently(sandbox: Any) -> None:
    """events_drop_every=2: every second event never appears (the feed is not guaranteed)."""
    sandbox.set_fidelity(events_drop_every=2)
    n = _pr(sandbox)
    for i in range(4):
        sandbox.backend.add_comment(REPO, n, f"c{i}", "alice")
    bodies = [
        e["payload"]["comment"]["body"]
        for e in _get(sandbox, FEED).json()
        if e["type"] == "IssueCommentEvent"
    ]
    assert len(bodies) == 2


def test_a_private_repositorys_feed_is_hidden_from_outsiders(sandbox: Any) -> None:
    """mallory asks for a private repo's events (its pushes name branches and shas): 404,
    the same answer as for a repo that does not exist; its owner sees them."""
    secret = sandbox.create_repo("acme", "secret", files={"README.md": "# s\n"}, private=True)
    sandbox.commit_files(secret, "main", {"plan.md": "launch\n"}, "plan", "alice")
    path = f"/repos/{secret}/events"
    outsider = requests.get(
        f"{sandbox.base_url}{path}",
        headers={"Authorization": f"token {sandbox.tokens['mallory']}"},
        timeout=10,
    )
    assert outsider.status_code == 404
    assert "PushEvent" not in outsider.text
    assert _get(sandbox, path).json()[0]["type"] == "PushEvent"

"""HTTP behaviour like GitHub's: pagination, ETags and 304s, rate limits."""

from __future__ import annotations

from typing import Any

import github
import pytest
import requests

from .helpers import gh


def _auth(sb: Any, login: str) -> dict[str, str]:
    return {"Authorization": f"token {sb.tokens[login]}", "Accept": "application/vnd.github+json"}


def _many_issues(sb: Any, n: int) -> None:
    with sb.backend.store.batch():
        for i in range(n):
            sb.backend.create_issue("acme/widgets", f"issue {i}", None, "agent-1")


def test_pagination_link_headers_are_absolute_and_complete(sandbox: Any) -> None:
    """Page 2 of 45 issues at 20 per page links prev, next, last and first with absolute URLs."""
    _many_issues(sandbox, 45)
    url = f"{sandbox.base_url}/repos/acme/widgets/issues"
    r = requests.get(
        url, params={"per_page": 20, "page": 2}, headers=_auth(sandbox, "alice"), timeout=5
    )
    assert r.status_code == 200
    assert len(r.json()) == 20
    links = {rel: link for link, rel in _parse_links(r.headers["Link"])}
    assert set(links) == {"prev", "next", "last", "first"}
    repo_id = sandbox.backend.repo("acme/widgets")["id"]  # GitHub links by repository id
    assert links["next"].startswith(f"{sandbox.base_url}/repositories/{repo_id}/issues?")
    assert "page=3" in links["next"] and "per_page=20" in links["next"]
    last = requests.get(links["last"], headers=_auth(sandbox, "alice"), timeout=5)
    assert len(last.json()) == 5
    assert "next" not in dict((rel, 1) for _, rel in _parse_links(last.headers["Link"]))


def test_per_page_defaults_to_30_and_caps_at_100(sandbox: Any) -> None:
    """Without per_page a page holds 30 items; per_page=500 is clamped to 100."""
    _many_issues(sandbox, 120)
    url = f"{sandbox.base_url}/repos/acme/widgets/issues"
    assert len(requests.get(url, headers=_auth(sandbox, "alice"), timeout=5).json()) == 30
    big = requests.get(url, params={"per_page": 500}, headers=_auth(sandbox, "alice"), timeout=5)
    assert len(big.json()) == 100


def test_pygithub_walks_every_page(sandbox: Any) -> None:
    """PyGithub's PaginatedList follows Link headers to all 75 issues and knows the total."""
    _many_issues(sandbox, 75)
    issues = gh(sandbox, "alice", per_page=10).get_repo("acme/widgets").get_issues(state="all")
    assert issues.totalCount == 75
    assert sorted(i.number for i in issues) == list(range(1, 76))


def test_api_v3_prefix_serves_the_same_api(sandbox: Any) -> None:
    """GHES-style clients with base_url .../api/v3 get URLs that keep the prefix."""
    client = github.Github(
        base_url=sandbox.api_v3_url,
        auth=github.Auth.Token(sandbox.tokens["bob"]),
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
    repo = client.get_repo("acme/widgets")
    assert repo.url == f"{sandbox.base_url}/api/v3/repos/acme/widgets"
    assert repo.get_branch("main").name == "main"


def test_etag_304_is_not_counted_against_the_rate_limit(sandbox: Any) -> None:
    """A conditional GET answering 304 leaves X-RateLimit-Remaining unchanged."""
    url = f"{sandbox.base_url}/repos/acme/widgets/pulls"
    first = requests.get(url, headers=_auth(sandbox, "alice"), timeout=5)
    etag = first.headers["ETag"]
    assert etag.startswith('W/"')
    remaining = int(first.headers["X-RateLimit-Remaining"])
    sandbox.reset_counters()
    again = requests.get(url, headers={**_auth(sandbox, "alice"), "If-None-Match": etag}, timeout=5)
    assert again.status_code == 304
    assert again.content == b""
    assert int(again.headers["X-RateLimit-Remaining"]) == remaining
    row = sandbox.counters()["endpoints"]["GET /repos/{owner}/{repo}/pulls"]
    assert row == {"requests": 1, "counted": 0, "not_modified": 1, "errors": 0, "faults": 0}


def test_etag_changes_with_content_and_with_the_token(sandbox: Any) -> None:
    """The ETag differs per Authorization and after the resource changes (then a 200 comes back)."""
    url = f"{sandbox.base_url}/repos/acme/widgets/issues"
    alice = requests.get(url, headers=_auth(sandbox, "alice"), timeout=5).headers["ETag"]
    bob = requests.get(url, headers=_auth(sandbox, "bob"), timeout=5).headers["ETag"]
    assert alice != bob
    sandbox.backend.create_issue("acme/widgets", "new", None, "agent-1")
    r = requests.get(url, headers={**_auth(sandbox, "alice"), "If-None-Match": alice}, timeout=5)
    assert r.status_code == 200 and r.headers["ETag"] != alice


def test_every_response_has_github_headers(sandbox: Any) -> None:
    """Responses carry the request id, rate-limit headers and the JSON content type."""
    r = requests.get(f"{sandbox.base_url}/user", headers=_auth(sandbox, "agent-1"), timeout=5)
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    assert r.headers["X-GitHub-Request-Id"]
    assert r.headers["X-RateLimit-Limit"] == "5000"
    assert r.headers["X-RateLimit-Used"] == "1"
    assert r.headers["X-RateLimit-Resource"] == "core"
    assert int(r.headers["X-RateLimit-Reset"]) > 0


def test_rate_limit_exhaustion_gives_githubs_403(sandbox: Any) -> None:
    """After the hourly budget is spent the next call is GitHub's 403 with remaining 0."""
    sandbox.set_rate_limit(3)
    url = f"{sandbox.base_url}/repos/acme/widgets"
    for expected in (2, 1, 0):
        r = requests.get(url, headers=_auth(sandbox, "agent-2"), timeout=5)
        assert r.status_code == 200 and r.headers["X-RateLimit-Remaining"] == str(expected)
    r = requests.get(url, headers=_auth(sandbox, "agent-2"), timeout=5)
    assert r.status_code == 403
    assert r.json()["message"].startswith("API rate limit exceeded for user ID")
    assert r.headers["X-RateLimit-Remaining"] == "0"
    other = requests.get(url, headers=_auth(sandbox, "agent-1"), timeout=5)
    assert other.status_code == 200, "budgets are per token"
    with pytest.raises(github.RateLimitExceededException):
        gh(sandbox, "agent-2").get_repo("acme/widgets")


def test_rate_limit_endpoint_is_free_and_reports_usage(sandbox: Any) -> None:
    """GET /rate_limit reports used/remaining for the caller and does not consume budget itself."""
    client = gh(sandbox, "bob")
    client.get_repo("acme/widgets")
    first = client.get_rate_limit().rate
    second = client.get_rate_limit().rate
    assert (first.limit, first.remaining) == (5000, 4999)
    assert second.remaining == 4999


def test_secondary_limit_from_seed_config(sandbox: Any) -> None:
    """With secondary_per_minute set, a burst gets 403 'secondary rate limit' with Retry-After."""
    sandbox.backend.data["rate_limit"]["secondary_per_minute"] = 2
    url = f"{sandbox.base_url}/repos/acme/widgets"
    codes = [requests.get(url, headers=_auth(sandbox, "bob"), timeout=5) for _ in range(3)]
    assert [c.status_code for c in codes] == [200, 200, 403]
    assert codes[2].headers["Retry-After"] == "60"
    assert "secondary rate limit" in codes[2].json()["message"]


def _parse_links(header: str) -> list[tuple[str, str]]:
    out = []
    for part in header.split(","):
        url, rel = part.split(";")
        out.append((url.strip()[1:-1], rel.split("=")[1].strip('"')))
    return out

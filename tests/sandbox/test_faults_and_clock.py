"""Reliability hooks: scripted faults, counters per endpoint template, and the settable clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import github
import pytest
import requests

from .helpers import gh


def _auth(sb: Any, login: str = "alice") -> dict[str, str]:
    return {"Authorization": f"token {sb.tokens[login]}"}


def test_status_faults_fail_the_next_n_matching_requests(sandbox: Any) -> None:
    """Two scripted 502s hit the next two matching GETs; the third succeeds."""
    sandbox.faults("GET", r"^/repos/acme/widgets/pulls$", status=502, count=2)
    url = f"{sandbox.base_url}/repos/acme/widgets/pulls"
    other = requests.get(
        f"{sandbox.base_url}/repos/acme/widgets", headers=_auth(sandbox), timeout=5
    )
    assert other.status_code == 200
    codes = [requests.get(url, headers=_auth(sandbox), timeout=5).status_code for _ in range(3)]
    assert codes == [502, 502, 200]
    assert sandbox.pending_faults() == []
    assert sandbox.counters()["total"]["faults"] == 2


def test_pygithub_retries_through_a_transient_502(sandbox: Any) -> None:
    """With PyGithub's default retry policy a single 502 is invisible to the caller."""
    sandbox.faults("GET", r"/repos/acme/widgets$", status=502, count=1)
    client = github.Github(
        base_url=sandbox.base_url,
        auth=github.Auth.Token(sandbox.tokens["bob"]),
        retry=github.GithubRetry(total=3, backoff_factor=0.01),
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
    assert client.get_repo("acme/widgets").name == "widgets"
    assert sandbox.counters()["total"]["faults"] == 1


def test_dropped_connection_and_delay(sandbox: Any) -> None:
    """A 'drop' fault closes the connection without an answer; a 'delay' fault answers late."""
    url = f"{sandbox.base_url}/repos/acme/widgets/issues"
    sandbox.faults("GET", r"/issues$", kind="drop")
    with pytest.raises(requests.ConnectionError):
        requests.get(url, headers=_auth(sandbox), timeout=5)
    sandbox.faults("GET", r"/issues$", kind="delay", delay=0.3)
    start = time.monotonic()
    assert requests.get(url, headers=_auth(sandbox), timeout=5).status_code == 200
    assert time.monotonic() - start >= 0.3


def test_secondary_limit_fault_has_retry_after(sandbox: Any) -> None:
    """A 'secondary' fault answers 403 with GitHub's secondary-limit message and Retry-After."""
    sandbox.faults("POST", r"/issues$", kind="secondary", retry_after=7)
    with pytest.raises(github.GithubException) as exc:
        gh(sandbox, "alice").get_repo("acme/widgets").create_issue("x")
    assert exc.value.status == 403
    assert exc.value.headers["retry-after"] == "7"
    assert github.Requester.Requester.isSecondaryRateLimitError(exc.value.data["message"])
    sandbox.faults("GET", r"/issues$", kind="secondary", status=429, retry_after=3)
    r = requests.get(
        f"{sandbox.base_url}/repos/acme/widgets/issues", headers=_auth(sandbox), timeout=5
    )
    assert (r.status_code, r.headers["Retry-After"]) == (429, "3")


def test_counters_by_endpoint_template_and_reset(sandbox: Any) -> None:
    """Requests are counted per route template and per identity; reset_counters zeroes them."""
    repo = gh(sandbox, "alice").get_repo("acme/widgets")
    assert repo.get_issues().totalCount == 0
    repo.get_branch("main")
    c = sandbox.counters()
    assert c["endpoints"]["GET /repos/{owner}/{repo}"]["requests"] == 1
    assert c["endpoints"]["GET /repos/{owner}/{repo}/branches/{branch}"]["counted"] == 1
    assert c["identities"]["user:alice"]["requests"] == c["total"]["requests"] == 3
    sandbox.reset_counters()
    assert sandbox.counters()["total"]["requests"] == 0


def test_admin_endpoints_over_http(sandbox: Any) -> None:
    """The /_sandbox API scripts faults, reads counters and sets the clock, and is never counted."""
    base = f"{sandbox.base_url}/_sandbox"
    r = requests.post(
        f"{base}/faults", json={"method": "GET", "path": "/user$", "status": 503}, timeout=5
    )
    assert r.status_code == 201
    assert (
        requests.get(f"{sandbox.base_url}/user", headers=_auth(sandbox), timeout=5).status_code
        == 503
    )
    clock = requests.post(f"{base}/clock", json={"now": "2026-01-01T00:00:00Z"}, timeout=5).json()
    assert clock == {
        "now": "2026-01-01T00:00:00Z",
        "frozen": True,
        "offset_seconds": 0.0,
        "skew_seconds": 0.0,
    }
    assert (
        requests.post(f"{base}/clock", json={"advance": 90}, timeout=5).json()["now"]
        == "2026-01-01T00:01:30Z"
    )
    # the server's wall clock (Date, App JWT window, token expiry) skews apart from object times
    skewed = requests.post(f"{base}/clock", json={"skew": -3600}, timeout=5)
    assert skewed.json()["skew_seconds"] == -3600.0
    assert skewed.json()["now"] == "2026-01-01T00:01:30Z"
    served = parsedate_to_datetime(skewed.headers["Date"])
    assert abs((datetime.now(UTC) - served).total_seconds() - 3600) <= 2
    requests.post(f"{base}/clock", json={"skew": 0}, timeout=5)
    counters = requests.get(f"{base}/counters", timeout=5).json()
    assert counters["total"]["requests"] == 1
    requests.post(f"{base}/counters/reset", timeout=5)
    assert sandbox.counters()["total"]["requests"] == 0


def test_clock_stamps_objects_and_moves_forward(sandbox: Any) -> None:
    """Issues, comments, reactions and label events use the sandbox clock, which can move."""
    sandbox.set_clock(datetime(2026, 1, 1, tzinfo=UTC))
    repo = gh(sandbox, "alice").get_repo("acme/widgets")
    issue = repo.create_issue("ballot", labels=["decision:pending-owner"])
    comment = issue.create_comment("/approve A")
    assert issue.created_at == datetime(2026, 1, 1, tzinfo=UTC)
    sandbox.advance_clock(7 * 86400)
    comment.edit("/approve B")
    assert comment.created_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert comment.updated_at == datetime(2026, 1, 8, tzinfo=UTC)
    reaction = issue.create_reaction("+1")
    assert reaction.created_at == datetime(2026, 1, 8, tzinfo=UTC)
    labeled = issue.get_events()[0]
    assert (labeled.event, labeled.created_at) == ("labeled", datetime(2026, 1, 1, tzinfo=UTC))
    assert sandbox.now() == datetime(2026, 1, 8, tzinfo=UTC)
    sandbox.set_clock(None)
    assert abs((sandbox.now() - datetime.now(UTC)).total_seconds()) < 5


def test_sandbox_admin_client_drives_a_running_sandbox(sandbox: Any) -> None:
    """SandboxAdmin (for `sandbox serve` in another process) scripts faults and moves the clock."""
    from ghsandbox import SandboxAdmin

    admin = SandboxAdmin(sandbox.base_url)
    admin.faults("GET", r"/user$", status=500)
    assert (
        requests.get(f"{sandbox.base_url}/user", headers=_auth(sandbox), timeout=5).status_code
        == 500
    )
    assert admin.counters()["total"]["faults"] == 1
    admin.reset_counters()
    assert admin.set_clock(datetime(2026, 3, 1, tzinfo=UTC))["now"] == "2026-03-01T00:00:00Z"
    assert admin.advance_clock(60)["now"] == "2026-03-01T00:01:00Z"
    assert sandbox.now() == datetime(2026, 3, 1, 0, 1, tzinfo=UTC)


def test_parallel_requests_are_all_answered(sandbox: Any) -> None:
    """The threaded server answers 16 concurrent clients consistently."""
    from concurrent.futures import ThreadPoolExecutor

    repo = "acme/widgets"

    def work(i: int) -> int:
        client = gh(sandbox, "agent-1" if i % 2 else "agent-2")
        issue = client.get_repo(repo).create_issue(f"parallel {i}")
        issue.create_comment("hi")
        return issue.number

    with ThreadPoolExecutor(max_workers=16) as pool:
        numbers = list(pool.map(work, range(16)))
    assert sorted(numbers) == list(range(1, 17))
    assert sum(len(i["comment_ids"]) for i in sandbox.backend.repo(repo)["issues"].values()) == 16


def test_call_fault_acts_between_two_requests(sandbox: Any) -> None:
    """A 'call' fault runs its action (another user's API request) before the Nth matching
    request is answered: a retarget lands exactly between two reads of a PR."""
    sandbox.commit_files("acme/widgets", "release", {"R": "1\n"}, "release", parent_branch="main")
    sandbox.commit_files("acme/widgets", "topic", {"T": "1\n"}, "topic", parent_branch="main")
    number = sandbox.open_pr("acme/widgets", "topic", "main", "t", "b", "agent-1")
    url = f"{sandbox.base_url}/repos/acme/widgets/pulls/{number}"

    def retarget() -> None:
        r = requests.patch(url, json={"base": "release"}, headers=_auth(sandbox, "agent-1"))
        assert r.status_code == 200

    sandbox.faults("GET", rf"/pulls/{number}$", kind="delay", delay=0.0, count=1)
    sandbox.faults("GET", rf"/pulls/{number}$", kind="call", action=retarget)
    bases = [
        requests.get(url, headers=_auth(sandbox), timeout=5).json()["base"]["ref"] for _ in range(2)
    ]
    assert bases == ["main", "release"]
    assert sandbox.pending_faults() == []
    with pytest.raises(ValueError, match="needs an action"):
        sandbox.faults("GET", r"/x$", kind="call")


def test_reopen_and_delete_comment_like_github(sandbox: Any) -> None:
    """PATCH pulls/{n} {"state": "open"} reopens a closed PR (200); DELETE issues/comments/{id}
    answers 204 and the comment is gone from the issue."""
    sandbox.commit_files("acme/widgets", "topic", {"T": "1\n"}, "topic", parent_branch="main")
    number = sandbox.open_pr("acme/widgets", "topic", "main", "t", "b", "agent-1")
    api = f"{sandbox.base_url}/repos/acme/widgets"
    agent = _auth(sandbox, "agent-1")
    assert requests.patch(f"{api}/pulls/{number}", json={"state": "closed"}, headers=agent).ok
    r = requests.patch(f"{api}/pulls/{number}", json={"state": "open"}, headers=agent)
    assert r.status_code == 200 and r.json()["state"] == "open"
    c = requests.post(
        f"{api}/issues/{number}/comments", json={"body": "/reject"}, headers=_auth(sandbox)
    ).json()
    r = requests.delete(f"{api}/issues/comments/{c['id']}", headers=_auth(sandbox))
    assert r.status_code == 204
    listed = requests.get(f"{api}/issues/{number}/comments", headers=_auth(sandbox)).json()
    assert all(x["id"] != c["id"] for x in listed)

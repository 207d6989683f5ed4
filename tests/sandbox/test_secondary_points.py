"""GitHub's secondary limit as one points budget a minute per identity, across every REST
endpoint (GraphQL's apart), refused the way GitHub documents: each test fails on the old
sandbox, which kept a budget per endpoint only and never limited GraphQL."""

from __future__ import annotations

import threading
from typing import Any

import requests

REPO = "acme/widgets"
QUERY = {"query": 'query Repo { repository(owner: "acme", name: "widgets") { name } }'}


def _call(sb: Any, method: str, path: str, body: Any = None) -> requests.Response:
    headers = {"Authorization": f"token {sb.tokens['alice']}"}
    return requests.request(method, f"{sb.base_url}{path}", headers=headers, json=body, timeout=10)


def test_points_are_one_budget_across_endpoints(sandbox: Any) -> None:
    """Ten points spread over ten endpoints spend the minute: the eleventh request, to an
    endpoint not used yet, is refused with 403, Retry-After and GitHub's message."""
    sandbox.set_fidelity(rest_points_per_minute=10)
    paths = [f"/repos/{REPO}", f"/repos/{REPO}/labels", f"/repos/{REPO}/pulls", "/user"]
    for i in range(10):
        assert _call(sandbox, "GET", paths[i % len(paths)]).status_code == 200
    refused = _call(sandbox, "GET", f"/repos/{REPO}/branches")
    assert refused.status_code == 403
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    message = refused.json()["message"]
    assert message.startswith("You have exceeded a secondary rate limit")
    assert refused.headers["X-GitHub-Request-Id"] in message
    assert refused.json()["documentation_url"].endswith("#about-secondary-rate-limits")
    sandbox.advance_clock(61)
    assert _call(sandbox, "GET", f"/repos/{REPO}/branches").status_code == 200
    stats = sandbox.secondary_stats()["user:alice"]
    assert stats["refused"] == {"points": 1} and stats["rest_points_max_minute"] == 10


def test_a_write_costs_five_points_and_a_conditional_read_one(sandbox: Any) -> None:
    """Two label writes (5 each) fill a 10-point minute; even a conditional GET is then
    refused (GitHub does not say a 304 is free of the secondary limit)."""
    first = _call(sandbox, "GET", f"/repos/{REPO}")
    sandbox.advance_clock(61)  # a fresh minute
    sandbox.set_fidelity(rest_points_per_minute=10)
    for name in ("one", "two"):
        assert _call(sandbox, "POST", f"/repos/{REPO}/labels", {"name": name}).status_code == 201
    headers = {"Authorization": f"token {sandbox.tokens['alice']}"}
    headers["If-None-Match"] = first.headers["ETag"]
    again = requests.get(f"{sandbox.base_url}/repos/{REPO}", headers=headers, timeout=10)
    assert again.status_code == 403 and "Retry-After" in again.headers


def test_a_world_may_answer_429(sandbox: Any) -> None:
    """`secondary_status: 429`: the refusal is a 429 with the same message and Retry-After."""
    sandbox.set_fidelity(rest_points_per_minute=1, secondary_status=429)
    assert _call(sandbox, "GET", "/user").status_code == 200
    refused = _call(sandbox, "GET", "/user")
    assert refused.status_code == 429 and "Retry-After" in refused.headers
    assert "secondary rate limit" in refused.json()["message"]


def test_graphql_has_a_points_budget_of_its_own(sandbox: Any) -> None:
    """GraphQL queries (1 point each) have their own minute: spending it does not stop REST,
    and spending REST's does not stop GraphQL."""
    sandbox.set_fidelity(graphql_points_per_minute=2, rest_points_per_minute=1)
    assert _call(sandbox, "GET", "/user").status_code == 200
    assert _call(sandbox, "GET", "/user").status_code == 403
    for _ in range(2):
        assert _call(sandbox, "POST", "/graphql", QUERY).status_code == 200
    refused = _call(sandbox, "POST", "/graphql", QUERY)
    assert refused.status_code == 403 and "Retry-After" in refused.headers
    assert "secondary rate limit" in refused.json()["message"]
    assert sandbox.secondary_stats()["user:alice"]["graphql_points_max_minute"] == 2


def test_the_sandbox_counts_requests_in_flight_at_once(sandbox: Any) -> None:
    """Three requests held open together: the peak in flight for that token is 3."""
    sandbox.reset_counters()
    sandbox.faults("GET", r"^/repos/acme/widgets$", kind="delay", delay=0.5, count=3)
    threads = [
        threading.Thread(target=_call, args=(sandbox, "GET", f"/repos/{REPO}")) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sandbox.secondary_stats()["user:alice"]["peak_inflight"] == 3

"""HTTP through the real PyGithub: retries, rate limits, the wait budget, conditional requests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from structlog.testing import capture_logs

from capdaemon.forge.client import Forge
from capdaemon.forge.errors import RateLimited, Transient
from ghsandbox import Sandbox


@pytest.fixture(autouse=True)
def _rest_pr_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests drive the REST transport through the REST PR list (no GraphQL batch)."""
    monkeypatch.setattr(Forge, "batch_gathering", False)


def test_transient_502s_are_retried(
    sandbox: Sandbox, make_forge: Callable[..., Forge], sleeps: list[float]
) -> None:
    """Two 502s on a GET are retried with growing backoff, and the third attempt succeeds."""
    f = make_forge()
    sandbox.faults("GET", r"^/repos/acme/widgets/pulls$", status=502, count=2)
    with capture_logs() as logs:
        assert f.list_open_prs(sandbox.repo) == []
    assert len(sleeps) == 2 and sleeps[0] < sleeps[1]
    assert [e["event"] for e in logs if e["event"] == "forge.retry"] == [
        "forge.retry",
        "forge.retry",
    ]


def test_dropped_connection_is_retried(
    sandbox: Sandbox, make_forge: Callable[..., Forge], sleeps: list[float]
) -> None:
    """A connection closed mid-request is retried like a 5xx."""
    f = make_forge()
    sandbox.faults("GET", r"^/repos/acme/widgets/pulls$", kind="drop", count=1)
    assert f.list_open_prs(sandbox.repo) == []
    assert len(sleeps) == 1


def test_persistent_502_raises_transient_after_bounded_attempts(
    sandbox: Sandbox, make_forge: Callable[..., Forge], sleeps: list[float]
) -> None:
    """Four failed attempts end in Transient (three backoff waits), never an endless loop."""
    f = make_forge()
    sandbox.faults("GET", r"^/repos/acme/widgets/pulls$", status=503, count=10)
    with pytest.raises(Transient):
        f.list_open_prs(sandbox.repo)
    assert len(sleeps) == 3


def test_post_502_is_not_blindly_repeated(
    sandbox: Sandbox, make_forge: Callable[..., Forge], sleeps: list[float]
) -> None:
    """A 502 on an issue POST raises Transient at once (the next idempotent write reconciles)."""
    f = make_forge()
    sandbox.faults("POST", r"/issues$", status=502, count=1)
    with pytest.raises(Transient):
        f.ensure_issue(sandbox.bot_repo, {"kind": "x", "key": "1"}, "t", "b", [])
    assert sleeps == []


def test_secondary_limit_with_retry_after_is_waited_out(
    sandbox: Sandbox, make_forge: Callable[..., Forge], sleeps: list[float]
) -> None:
    """A secondary limit with Retry-After: 30 is waited out (sleeper records 30 s), then works."""
    f = make_forge()
    sandbox.faults("GET", r"^/repos/acme/widgets/pulls$", kind="secondary", retry_after=30, count=1)
    with capture_logs() as logs:
        assert f.list_open_prs(sandbox.repo) == []
    assert sleeps == [30.0]
    assert any(e["event"] == "forge.rate_wait" and e["kind"] == "secondary" for e in logs)
    assert f.budget.spent == 30.0


def test_secondary_limit_beyond_the_tick_budget_raises(
    sandbox: Sandbox, make_forge: Callable[..., Forge], sleeps: list[float]
) -> None:
    """A Retry-After longer than the tick's wait budget left raises RateLimited without sleeping."""
    f = make_forge(wait=20.0)
    sandbox.faults("GET", r"^/repos/acme/widgets/pulls$", kind="secondary", retry_after=30, count=1)
    with pytest.raises(RateLimited):
        f.list_open_prs(sandbox.repo)
    assert sleeps == []
    f.new_tick()
    assert f.budget.remaining == 20.0


def test_exhausted_primary_budget_raises_rate_limited(
    sandbox: Sandbox, make_forge: Callable[..., Forge], sleeps: list[float]
) -> None:
    """Hourly budget spent: waiting for x-ratelimit-reset exceeds the tick: RateLimited, logged."""
    f = make_forge()
    sandbox.set_rate_limit(3)
    with capture_logs() as logs, pytest.raises(RateLimited) as info:
        for login in ("agent-1", "agent-2", "bob", "alice"):  # distinct URLs: no 304s
            f.permission(sandbox.repo, login)
    assert sleeps == [] and info.value.wait_seconds > 120
    assert f.rate_budget()["remaining"] == 0
    ev = [e for e in logs if e["event"] == "forge.rate_limited"]
    assert ev and ev[0]["kind"] == "primary" and "exhausted" in ev[0]["why"]
    fresh = make_forge()  # knows nothing yet: GitHub's 403 with x-ratelimit-remaining 0 says so
    with capture_logs() as logs, pytest.raises(RateLimited):
        fresh.list_open_prs(sandbox.repo)
    assert [e["kind"] for e in logs if e["event"] == "forge.rate_limited"] == ["primary"]
    assert sleeps == []


def test_unchanged_resources_are_revalidated_for_free(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int]
) -> None:
    """Re-polling an unchanged PR sends only conditional requests: all 304s, none counted."""
    sandbox.commit_files(sandbox.repo, "main", {".capdaemon.yml": "owners: [alice]\n"}, "policy")
    n = open_pr({"README.md": "# g\n"})
    forge.list_open_prs(sandbox.repo)
    assert forge.snapshot(sandbox.repo, n).mergeable is None  # GitHub is still computing
    forge.new_tick()
    first = forge.snapshot(sandbox.repo, n)
    assert first.mergeable is True
    sandbox.reset_counters()
    forge.new_tick()
    forge.list_open_prs(sandbox.repo)
    again = forge.snapshot(sandbox.repo, n)
    total = sandbox.counters()["total"]
    assert again == first
    assert total["counted"] == 0 and total["not_modified"] == total["requests"] > 0

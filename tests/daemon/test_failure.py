"""What ends a tick (TickAbort) and what only fails one item (ForgeError), and where each goes."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from capdaemon.config import GitHubConfig
from capdaemon.daemon.core.failure import per_item
from capdaemon.daemon.core.tickdata import TickReport, _Stopped
from capdaemon.daemon.service.preflight import CredentialsError, forge_errors
from capdaemon.forge.errors import ForgeError, RateLimited, TickAbort, Transient
from capdaemon.timefmt import parse_utc

NOW = parse_utc("2026-01-05T10:00:00Z", "now")


def _limited() -> RateLimited:
    return RateLimited("secondary rate limit", wait_seconds=600.0)


def test_a_rate_limit_and_a_stop_request_end_the_tick_and_are_no_forge_error() -> None:
    """An `except ForgeError` around one item's work can never swallow them."""
    for exc in (_limited(), _Stopped()):
        assert isinstance(exc, TickAbort) and not isinstance(exc, ForgeError)


def test_a_forge_error_on_one_item_is_reported_and_the_loop_goes_on() -> None:
    report = TickReport(started_at=NOW)
    done: list[str] = []
    with capture_logs() as logs:
        for ref in ("acme/w#1", "acme/w#2"):
            with per_item(report, "merge.check_failed", ref, pr=ref) as item:
                if ref == "acme/w#1":
                    raise Transient("GitHub GET /pulls/1: HTTP 502")
                done.append(ref)
            assert item.failed is (ref == "acme/w#1")
    assert done == ["acme/w#2"]
    assert report.errors == ["acme/w#1: GitHub GET /pulls/1: HTTP 502"]
    assert [(e["event"], e["pr"]) for e in logs] == [("merge.check_failed", "acme/w#1")]


@pytest.mark.parametrize("exc", [_limited(), _Stopped(), KeyError("a bug")])
def test_a_tick_abort_or_a_bug_leaves_the_item_loop_unreported(exc: BaseException) -> None:
    report = TickReport(started_at=NOW)
    done: list[str] = []
    with pytest.raises(type(exc)):
        for ref in ("acme/w#1", "acme/w#2"):
            with per_item(report, "merge.check_failed", ref, pr=ref):
                if ref == "acme/w#1":
                    raise exc
                done.append(ref)
    assert done == [] and report.errors == []


def test_a_rate_limit_while_starting_up_is_still_one_named_startup_error() -> None:
    """A caller that is not a tick (start-up, commands) still catches a rate limit beside the
    ForgeErrors: one clear error, never a traceback."""
    github = GitHubConfig(base_url="https://ghe.example:8443/api/v3")
    with pytest.raises(CredentialsError, match="secondary rate limit"), forge_errors(github):
        raise _limited()

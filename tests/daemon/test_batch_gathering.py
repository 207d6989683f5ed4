"""Batch gathering in a live daemon: checks come with the page of open PRs, not per PR."""

from __future__ import annotations

import pytest

from .conftest import Harness
from .test_steady import _app_github, _requests, _settle

pytestmark = pytest.mark.slow

CHECK_RUNS = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"
STATUS = "GET /repos/{owner}/{repo}/commits/{ref}/status"
BATCH = "POST /graphql CapdaemonOpenPulls"


def test_rollup_turning_green_merges_next_tick_without_per_pr_check_reads(
    daemon: Harness,
) -> None:
    """Three A PRs wait for an extra `ci` check: a steady tick reads one GraphQL page and no
    check runs or statuses per PR. `ci` turns green on one of them; the next tick merges it
    on the batch rollup (the merge call is bound to the head sha) and reads no check run or
    status of any PR."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    numbers = [daemon.open_pr({f"docs/p{i}.md": f"# {i}\n"}) for i in range(3)]
    _settle(daemon)
    daemon.sb.reset_counters()
    report = daemon.tick()
    assert report.errors == [] and report.merged == []
    seen = _requests(daemon)
    assert seen.get(BATCH) == 1 and CHECK_RUNS not in seen and STATUS not in seen, seen
    heads = {n: daemon.pull(n).head.sha for n in numbers}
    _app_github(daemon, daemon.sb.evil_installation_id).get_repo(daemon.sb.repo).create_check_run(
        name="ci", head_sha=heads[numbers[1]], status="completed", conclusion="success"
    )
    daemon.sb.reset_counters()
    recorded = daemon.sb.record_responses()
    report = daemon.tick()
    daemon.sb.record_responses(False)
    assert report.merged == [f"acme/widgets#{numbers[1]}"]
    assert _requests(daemon).get(BATCH) == 1
    read = {
        run["head_sha"]
        for endpoint, _status, body, _headers in recorded
        if endpoint in (CHECK_RUNS, STATUS)
        for run in body.get("check_runs") or body.get("statuses") or ()
    }
    assert not read & set(heads.values()), read  # no PR head's checks read, merged or not
    assert [daemon.pull(n).merged for n in numbers] == [False, True, False]


def test_a_failed_batch_still_gathers_through_rest(daemon: Harness) -> None:
    """GraphQL down (502 after the retries): the tick falls back to the REST list and per-PR
    check reads, and still merges a PR whose checks are green."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    n = daemon.open_pr({"docs/p.md": "# p\n"})
    _settle(daemon)
    head = daemon.pull(n).head.sha
    _app_github(daemon, daemon.sb.evil_installation_id).get_repo(daemon.sb.repo).create_check_run(
        name="ci", head_sha=head, status="completed", conclusion="success"
    )
    daemon.sb.faults("POST", r"^/graphql#", status=502, count=10_000)
    daemon.sb.reset_counters()
    report = daemon.tick()
    assert report.merged == [f"acme/widgets#{n}"]
    assert _requests(daemon).get(CHECK_RUNS, 0) >= 1

"""The post-merge probe reads every merge commit due a read in one GraphQL query, and still
notices a check failing late on one of them; commit statuses and a failed query use REST."""

from __future__ import annotations

from typing import Any

from capdaemon.forge.markers import parse_marker
from tests.daemon.test_steady import _app_github

from .conftest import SafetyHarness

MERGES = 3


def _merged(safe: SafetyHarness, i: int) -> int:
    n = safe.open_pr({f"examples/batch{i}.py": "print('x')\n"}, title=f"change {i}")
    safe.tick()
    assert safe.pull(n).merged
    return n


def _outside_ci(safe: SafetyHarness) -> Any:
    """The repo as the outside CI App (another App than capdaemon) sees it."""
    return _app_github(safe, safe.sb.evil_installation_id).get_repo(safe.sb.repo)


def _reads(safe: SafetyHarness) -> tuple[int, int]:
    """(REST reads of a commit's checks or statuses, merge-check GraphQL queries) since the
    last counter reset."""
    ends = safe.sb.counters()["endpoints"]
    rest = sum(v["requests"] for k, v in ends.items() if k.startswith("GET ") and "/commits/" in k)
    gql = sum(v["requests"] for k, v in ends.items() if "CapdaemonMergeChecks" in k)
    return rest, gql


def _running_ci(safe: SafetyHarness) -> tuple[list[int], list[Any]]:
    """MERGES merged PRs, the outside CI's `ci` running on each merge commit."""
    numbers = [_merged(safe, i) for i in range(MERGES)]
    ci = _outside_ci(safe)
    runs = [
        ci.create_check_run(name="ci", head_sha=safe.merge_sha(n), status="in_progress")
        for n in numbers
    ]
    return numbers, runs


def test_one_query_reads_every_merge_commit_and_a_late_failure_is_an_incident(
    safe: SafetyHarness,
) -> None:
    """Three merge commits with CI running: each probe step reads them all in one GraphQL
    query and no REST commit read (before: a check-run and a status-history GET per merge per
    step). When CI fails on one, the next step fails that probe as before (audited, an
    incident issue, one breaker incident); the other two stay watched."""
    safe.configure(post_merge={"window_minutes": 10})
    numbers, runs = _running_ci(safe)
    safe.step7()
    assert len(safe.safety()["watches"]) == MERGES
    safe.sb.reset_counters()
    for _ in range(2):
        safe.advance(minutes=1)
        safe.step7()
    assert _reads(safe) == (0, 2)
    assert not safe.actions("probe.failed")
    runs[1].edit(status="completed", conclusion="failure")
    safe.advance(minutes=1)
    safe.step7()
    failed = safe.actions("probe.failed")
    assert [r["pr"] for r in failed] == [f"{safe.sb.repo}#{numbers[1]}"]
    assert failed[0]["failed_checks"] == ["ci"] and failed[0]["revert"] == "incident_only"
    issues = [i for i in safe.issues("incident") if (parse_marker(i.body) or {}).get("pr")]
    assert len(issues) == 1 and f"#{numbers[1]}" in issues[0].title
    assert [i.kind.value for i in safe.breaker().incidents] == ["probe_failed"]
    assert {w["pr"] for w in safe.safety()["watches"]} == {numbers[0], numbers[2]}


def test_a_failed_batch_query_falls_back_to_rest_and_still_sees_the_failure(
    safe: SafetyHarness,
) -> None:
    """GraphQL answers 502 to the batched query: each merge commit is read through REST as
    before, and a failed check is still an incident."""
    safe.configure(post_merge={"window_minutes": 10})
    numbers, runs = _running_ci(safe)
    safe.step7()
    runs[0].edit(status="completed", conclusion="failure")
    safe.sb.faults("POST", "graphql#CapdaemonMergeChecks", status=502, count=10)
    safe.sb.reset_counters()
    safe.advance(minutes=1)
    safe.step7()
    rest, _ = _reads(safe)
    assert rest >= MERGES
    assert [r["pr"] for r in safe.actions("probe.failed")] == [f"{safe.sb.repo}#{numbers[0]}"]


def test_a_red_status_painted_green_is_still_read_from_its_history(safe: SafetyHarness) -> None:
    """The owner's CI posts a red status, then a green one of the same name: GraphQL shows only
    the green one, so the commit is read through REST, whose history keeps the red (failed)."""
    safe.configure(post_merge={"window_minutes": 10})
    n = _merged(safe, 0)
    sha = safe.merge_sha(n)
    safe.ci(sha, "failure")
    safe.ci(sha, "success")
    safe.step7()
    failed = safe.actions("probe.failed", n)
    assert len(failed) == 1 and failed[0]["failed_checks"] == ["ci/build"]


def test_a_merge_commit_is_watched_without_reading_it_again(safe: SafetyHarness) -> None:
    """The compare that checks the merge commit is on the approved base carries its parents:
    the probe's watch counts them (one, a squash merge) with no read of the commit."""
    safe.configure()
    safe.sb.reset_counters()
    n = _merged(safe, 0)
    safe.step7()
    ends = safe.sb.counters()["endpoints"]
    assert not [k for k in ends if "/git/commits/" in k]
    (watch,) = safe.safety()["watches"]
    assert watch["pr"] == n and watch["parents_count"] == 1


def test_a_probe_read_through_rest_waits_while_the_hour_is_down_to_the_reserve(
    safe: SafetyHarness,
) -> None:
    """A merge commit with a red commit status (read through REST, for its history) while
    another client of the installation has left only 150 of the hour's requests: the probe
    does not spend the reserve kept for merges and votes (no REST read, the watch kept, no
    verdict). Once GitHub's hour has room again, the next step reads it and fails it."""
    safe.configure(post_merge={"window_minutes": 120})
    n = _merged(safe, 0)
    safe.ci(safe.merge_sha(n), "failure")
    sb = safe.sb
    key = f"installation:{sb.installation_id}"
    bucket = sb.app.limiter.bucket(key, 5000)
    sb.spend_rate_limit(key, 5000 - bucket.used - 150)
    safe.ticker.forge.rate_limit_core()  # what is left, as a tick's first answer says
    sb.reset_counters()
    safe.step7()
    assert _reads(safe)[0] == 0
    assert [w["pr"] for w in safe.safety()["watches"]] == [n]
    assert not safe.actions("probe.failed", n)
    sb.app.limiter.reset_all()  # GitHub's hour rolls over (its windows are on the real clock)
    safe.advance(minutes=1)
    safe.ticker.forge.rate_limit_core()
    safe.step7()
    assert _reads(safe)[0] >= 1
    assert [r["pr"] for r in safe.actions("probe.failed")] == [f"{sb.repo}#{n}"]

"""Batch gathering in a live daemon: checks come with the page of open PRs, not per PR."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from capdaemon.daemon.merging.mergewait import RETRY_AFTER

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


PULL = "GET /repos/{owner}/{repo}/pulls/{number}"


def _change(i: int) -> dict[str, str | None]:
    """A quarter each: A (a guide page), B (bot source), C (a deleted example), D (a workflow)."""
    return [
        {f"docs/guide/page{i}.md": f"# Page {i}\n"},
        {f"src/multiagent_protocol/mod{i}.py": f"VALUE = {i}\n"},
        {"examples/old.py": None},
        {f".github/workflows/w{i}.yml": f"name: w{i}\n"},
    ][i % 4]


def test_a_cold_start_costs_at_most_four_counted_requests_per_new_pr(daemon: Harness) -> None:
    """Twelve new PRs (three per quadrant) waiting on a `ci` check: the tick that takes them
    on reads no PR, check run or status per PR (the page of open PRs carries them) and spends
    at most 4 counted requests per PR, its writes (L1.C3, passive reviews, ballots) and the
    tick's own list reads included (before: 7.8 per PR)."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    for i in range(4):  # a first tick pays once: token, labels, the issue list
        daemon.open_pr(_change(100 + i))
    daemon.tick()
    numbers = [daemon.open_pr(_change(i)) for i in range(12)]
    daemon.sb.reset_counters()
    report = daemon.tick()
    assert report.errors == [] and report.merged == []
    assert {f"acme/widgets#{n}" for n in numbers} <= set(report.classified)
    quadrants = sorted(daemon.classifications(n)[-1]["quadrant"] for n in numbers)
    assert quadrants == sorted("ABCD" * 3), quadrants
    seen = _requests(daemon)
    assert PULL not in seen and CHECK_RUNS not in seen and STATUS not in seen, seen
    counted = {k: v["counted"] for k, v in daemon.sb.counters()["endpoints"].items()}
    assert sum(counted.values()) <= 4 * len(numbers), {k: v for k, v in counted.items() if v}


def test_a_conflicting_pr_is_not_merged(daemon: Harness) -> None:
    """An A PR that conflicts with main (the batch says CONFLICTING) is not merged, tick after
    tick, while a clean A PR opened with it merges."""
    clash = daemon.open_pr({"examples/old.py": "print('theirs')\n"})
    daemon.sb.commit_files(
        daemon.sb.repo, "main", {"examples/old.py": "print('ours')\n"}, "Ours", author="alice"
    )
    clean = daemon.open_pr({"docs/clean.md": "# clean\n"})
    merged: list[str] = []
    for _ in range(3):
        merged += daemon.tick().merged
    assert merged == [f"acme/widgets#{clean}"]
    assert not daemon.pull(clash).merged and daemon.pull(clash).mergeable is False
    assert not daemon.actions("merge", clash)  # never even attempted


def test_unknown_mergeability_waits_and_merges_on_a_later_tick(daemon: Harness) -> None:
    """GitHub has not computed mergeability for every read of a new PR in its first tick (the
    batch query, the merge gate's re-read and its re-reads after waiting): UNKNOWN is never
    mergeable, so nothing merges in that tick; the next tick's page says MERGEABLE and the
    PR merges."""
    daemon.sb.set_fidelity(mergeable_reads=2 + len(RETRY_AFTER))
    n = daemon.open_pr({"docs/late.md": "# late\n"})
    first = daemon.tick()
    assert first.errors == [] and first.merged == []
    assert not daemon.actions("merge", n)
    second = daemon.tick()
    assert second.merged == [f"acme/widgets#{n}"]


def test_a_push_between_the_decision_and_the_merge_call_is_refused(daemon: Harness) -> None:
    """The agent pushes onto a ready A PR just as capdaemon sends the merge call (after every
    read it decided on): GitHub refuses the call bound to the old head (409), nothing is
    merged on the stale view, and the next tick judges the new head before merging it."""
    n = daemon.open_pr({"docs/ready.md": "# ready\n"})
    old = daemon.pull(n).head.sha  # a read: GitHub has computed mergeability by the tick
    pushed: list[str] = []

    def push() -> None:
        pushed.append(daemon.push(n, {".github/workflows/sneaky.yml": "name: sneaky\n"}))

    daemon.sb.faults("PUT", rf"/pulls/{n}/merge$", kind="call", action=push)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert pushed and report.merged == []
    assert not daemon.pull(n).merged
    attempts = daemon.actions("merge", n)
    assert [(a["status"], a.get("reason"), a["head_sha"]) for a in attempts] == [
        ("attempted", None, old),
        ("failed", "head_moved", old),
    ]
    later = daemon.tick()
    assert later.merged == []  # the new head adds a workflow: quadrant D, an owner decides
    assert daemon.classifications(n)[-1]["head_sha"] == pushed[0]
    assert daemon.classifications(n)[-1]["quadrant"] == "D"
    assert not daemon.pull(n).merged


def test_a_partial_rollup_merges_through_rest_reads_of_that_pr_alone(daemon: Harness) -> None:
    """A head with more contexts than one page of the rollup holds (101 statuses): the merge
    gate reads that PR's checks and statuses through REST and merges it once `ci` is green;
    the other PR, still waiting on `ci`, costs no per-PR read."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    crowded = daemon.open_pr({"docs/crowded.md": "# crowded\n"})
    quiet = daemon.open_pr({"docs/quiet.md": "# quiet\n"})
    heads = {n: daemon.pull(n).head.sha for n in (crowded, quiet)}
    commit = daemon.gh("alice").get_repo(daemon.sb.repo).get_commit(heads[crowded])
    for i in range(101):
        commit.create_status(state="success", context=f"lint/{i}")
    _settle(daemon)
    _app_github(daemon, daemon.sb.evil_installation_id).get_repo(daemon.sb.repo).create_check_run(
        name="ci", head_sha=heads[crowded], status="completed", conclusion="success"
    )
    hits: dict[int, int] = {crowded: 0, quiet: 0}

    def counter(n: int) -> Callable[[], None]:
        return lambda: hits.__setitem__(n, hits[n] + 1)

    for n in (crowded, quiet):
        path = rf"/commits/{heads[n]}/(check-runs|status)$"
        daemon.sb.faults("GET", path, kind="call", action=counter(n), count=100)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert report.errors == [] and report.merged == [f"acme/widgets#{crowded}"]
    assert hits[crowded] >= 2 and hits[quiet] == 0, hits

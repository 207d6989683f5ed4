"""End to end through the sandbox: each quadrant from push to merge or ballot; a quiet 2nd tick."""

from __future__ import annotations

import json

import pytest

from .conftest import Harness

pytestmark = pytest.mark.slow

ROUTER = {
    "src/multiagent_protocol/router.py": "def route(msg, handlers):\n    return handlers(msg)\n"
}


def test_quadrant_a_merges_without_an_issue(daemon: Harness) -> None:
    """A README typo is A: L1.C3 success, merged at its head sha, counted, no decision issue.

    The random review sample is off (share 0): the sample is keyed on the head sha, which
    includes the commit time, so the default 10 % share would sometimes open an issue."""
    daemon.configure(random_review_share=0)
    n = daemon.open_pr({"README.md": "# widgets\n\nSupervised by capdaemon!\n"})
    head = daemon.pull(n).head.sha
    report = daemon.tick()
    assert report.merged == [f"acme/widgets#{n}"]
    assert daemon.pull(n).merged
    assert daemon.check(n).conclusion == "success"
    assert daemon.issues_about_prs() == []
    attempted, done = daemon.actions("merge", n)
    assert attempted["status"] == "attempted" and attempted["head_sha"] == head
    assert done["status"] == "done" and done["merge_sha"] and done["seq"] > attempted["seq"]
    metrics = json.loads((daemon.state_dir / "tick_metrics.json").read_text())
    assert metrics["quadrant_a_count"] == 1 and metrics["prs_seen"] == 1


def test_random_review_share_one_always_opens_the_random_review_issue(daemon: Harness) -> None:
    """With share 1.0 every auto-merged PR gets a passive `decision:random-review` issue."""
    daemon.configure(random_review_share=1.0)
    n = daemon.open_pr({"README.md": "# widgets\n\nSupervised by capdaemon, sampled.\n"})
    daemon.tick()
    assert daemon.pull(n).merged
    (issue,) = daemon.issues_about_prs()
    assert [lb.name for lb in issue.labels] == ["decision:random-review"]
    assert f"acme/widgets#{n}" in issue.body


def test_quadrant_b_merges_and_opens_a_passive_review(daemon: Harness) -> None:
    """A refactor in the bot source is B: merged, and an auto-approved-critical-reversible issue."""
    n = daemon.open_pr(ROUTER)
    daemon.tick()
    assert daemon.pull(n).merged
    issue = daemon.issue_for(n, "review")
    assert [lb.name for lb in issue.labels] == ["decision:auto-approved-critical-reversible"]
    assert f"acme/widgets#{n}" in issue.body and "reasoning" in issue.body


def test_quadrant_c_merges_and_opens_a_passive_review(daemon: Harness) -> None:
    """Deleting an example is C: merged, plus an auto-approved-irreversible-non-critical issue."""
    n = daemon.open_pr({"examples/old.py": None})
    daemon.tick()
    assert daemon.pull(n).merged
    issue = daemon.issue_for(n, "review")
    assert [lb.name for lb in issue.labels] == ["decision:auto-approved-irreversible-non-critical"]


def test_quadrant_d_opens_a_ballot_and_fails_the_check(daemon: Harness) -> None:
    """A workflow change is D: not merged, L1.C3 fails, one pending-owner ballot, four options."""
    n = daemon.open_pr(
        {".github/workflows/ci.yml": "name: ci\non: [push, pull_request]\njobs: {}\n"}
    )
    report = daemon.tick()
    assert report.merged == []
    assert not daemon.pull(n).merged
    check = daemon.check(n)
    assert check.conclusion == "failure"
    ballot = daemon.issue_for(n, "ballot")
    assert [lb.name for lb in ballot.labels] == ["decision:pending-owner"]
    for text in (
        "/approve A",
        "/approve B",
        "/approve C",
        "/reject",
        "👍",
        "👎",
        "<!-- capdaemon:",
    ):
        assert text in ballot.body
    assert daemon.pull(n).head.sha in ballot.body


def test_second_tick_writes_nothing(daemon: Harness) -> None:
    """A tick over unchanged PRs reclassifies nothing and sends no POST/PATCH/PUT/DELETE."""
    daemon.open_pr({".github/workflows/ci.yml": "name: ci2\n"})
    daemon.open_pr({"src/multiagent_protocol/router.py": "# router\n"}, title="B but blocked label")
    daemon.open_pr({"docs/guide.md": "# Guide\n\nMore.\n"}, user="agent-2")
    first = daemon.tick()
    assert len(first.classified) == 3
    # merging #2 moved main: GitHub recomputes #3's mergeability (null meanwhile); the tick
    # reads #3 again after a wait and merges it too; after that nothing changes
    assert first.merged == ["acme/widgets#2", "acme/widgets#3"]
    issues_before = [(i.number, i.body) for i in daemon.issues()]
    daemon.sb.reset_counters()
    second = daemon.tick()
    assert second.classified == [] and second.merged == []
    assert daemon.writes() == {}
    assert [(i.number, i.body) for i in daemon.issues()] == issues_before


def test_relabel_reclassifies_and_policy_change_too(daemon: Harness) -> None:
    """A label change or a new policy (config) changes the fingerprint: classified again."""
    n = daemon.open_pr({".github/workflows/ci.yml": "name: ci3\n"})
    daemon.tick()
    daemon.gh("agent-1").get_repo("acme/widgets").get_issue(n).add_to_labels("do-not-merge")
    assert daemon.tick().classified == [f"acme/widgets#{n}"]
    assert daemon.tick().classified == []
    daemon.configure(repo={"extra_checks": ["ci/lint"]})
    assert daemon.tick().classified == [f"acme/widgets#{n}"]
    assert len(daemon.classifications(n)) == 3

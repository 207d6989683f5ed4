"""Ballot rounds under attack: a rejection that comes back, a base retargeted (SPEC 3)."""

from __future__ import annotations

import pytest

from tests.daemon.conftest import Harness

pytestmark = pytest.mark.slow


def _d_pr(daemon: Harness) -> int:
    """A quadrant-D PR (a CI workflow change) by agent-1."""
    return daemon.open_pr(
        {".github/workflows/ci.yml": "name: ci\non: [pull_request]\n"}, title="change ci"
    )


def _ballot_comments(daemon: Harness, number: int) -> list[str]:
    return [c.body for c in daemon.ballot(number, "alice").get_comments()]


def test_reopened_after_rejection_is_a_new_round_even_with_the_reject_deleted(
    daemon: Harness,
) -> None:
    """bob `/approve A`, then alice `/reject`: closed. The agent deletes alice's comment and
    reopens the PR (GitHub's REST API) → a new round, bob's approval no longer counts, no merge;
    only a vote in the new round decides."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.advance(minutes=1)
    reject = daemon.ballot(n, "alice").create_comment("/reject")
    daemon.tick()
    assert daemon.pull(n).state == "closed"
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["rejected"]

    # the agent (a writer of the decision repo) deletes the rejection and reopens its PR
    agent = daemon.gh("agent-1")
    daemon.ballot(n, "agent-1").get_comment(reject.id).delete()
    assert all(c.id != reject.id for c in daemon.ballot(n, "alice").get_comments())
    agent.get_repo(daemon.sb.repo).get_pull(n).edit(state="open")
    daemon.advance(minutes=1)
    report = daemon.tick()
    daemon.tick()

    pull = daemon.pull(n)
    assert pull.state == "open" and not pull.merged
    assert report.merged == [] and daemon.actions("merge", n) == []
    (new_round,) = daemon.actions("ballot_round", n)
    assert new_round["reason"] == "reopened_after_rejection" and new_round["round"] == 2
    assert new_round["stale_votes"] >= 1  # bob's approval is on the issue: it belongs to round 1
    assert report.ballots[f"{daemon.sb.repo}#{n}"] == "pending"
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["rejected"]
    assert daemon.check(n).conclusion == "failure"
    assert daemon.issue_for(n, "ballot").state == "open"
    assert any("reopened after an owner's rejection" in b for b in _ballot_comments(daemon, n))

    # an owner's answer in the new round decides as usual
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.tick()
    assert daemon.pull(n).merged
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["rejected", "approved"]
    assert daemon.actions("ballot", n)[-1]["round"] == 2


def test_reopened_after_rejection_stays_pending_without_any_deletion(daemon: Harness) -> None:
    """alice `/reject` closes the PR; the agent reopens it: a new round, pending (not rejected
    again, not approved), and the PR is not closed a second time on the old vote."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/reject")
    daemon.tick()
    assert daemon.pull(n).state == "closed"
    daemon.gh("agent-1").get_repo(daemon.sb.repo).get_pull(n).edit(state="open")
    daemon.advance(minutes=1)
    report = daemon.tick()
    assert daemon.pull(n).state == "open" and not daemon.pull(n).merged
    assert report.ballots[f"{daemon.sb.repo}#{n}"] == "pending"
    assert [r["status"] for r in daemon.actions("close", n)] == ["attempted", "done"]
    assert [r["reason"] for r in daemon.actions("ballot_round", n)] == ["reopened_after_rejection"]

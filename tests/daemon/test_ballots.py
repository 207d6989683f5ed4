"""Ballot rules end to end: owners' commands and reactions on the ballot issue, real ticks."""

from __future__ import annotations

import pytest

from .conftest import Harness

pytestmark = pytest.mark.slow

WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}


def _d_pr(daemon: Harness, **kw: object) -> int:
    n = daemon.open_pr(WORKFLOW, **kw)  # type: ignore[arg-type]
    daemon.tick()
    daemon.advance(minutes=1)
    return n


def test_owner_approve_a_merges_at_the_ballot_sha(daemon: Harness) -> None:
    """`/approve A` by an owner turns L1.C3 green and the same tick merges at the bound head sha."""
    n = _d_pr(daemon)
    head = daemon.pull(n).head.sha
    daemon.ballot(n, "alice").create_comment("/approve A")
    report = daemon.tick()
    assert report.ballots[f"acme/widgets#{n}"] == "approved"
    assert daemon.pull(n).merged
    assert daemon.actions("merge", n)[-1]["status"] == "done"
    assert daemon.actions("merge", n)[0]["head_sha"] == head
    assert daemon.check(n).conclusion == "success"
    assert daemon.issue_for(n, "ballot").state == "closed"


def test_thumbs_up_from_owner_approves(daemon: Harness) -> None:
    """A 👍 reaction from an owner on the ballot issue approves as proposed."""
    n = _d_pr(daemon)
    daemon.ballot(n, "bob").create_reaction("+1")
    daemon.tick()
    assert daemon.pull(n).merged


def test_non_owner_vote_is_ignored_and_audited_once(daemon: Harness) -> None:
    """mallory's `/approve A` and 👍 do not count; each is audited once as vote_ignored."""
    n = _d_pr(daemon)
    daemon.ballot(n, "mallory").create_comment("/approve A")
    daemon.ballot(n, "mallory").create_reaction("+1")
    daemon.tick()
    daemon.tick()
    assert not daemon.pull(n).merged
    ignored = daemon.actions("vote_ignored", n)
    assert sorted(r["source"] for r in ignored) == ["comment", "reaction"]
    assert all(r["reason"] == "not an owner" and r["user"] == "mallory" for r in ignored)
    assert daemon.check(n).conclusion == "failure"


def test_pr_authors_own_thumbs_up_does_not_count(daemon: Harness) -> None:
    """bob is an owner, but on his own PR his 👍 is ignored: the author never counts."""
    n = _d_pr(daemon, user="bob")
    daemon.ballot(n, "bob").create_reaction("+1")
    daemon.tick()
    assert not daemon.pull(n).merged
    (ignored,) = daemon.actions("vote_ignored", n)
    assert ignored["reason"] == "the PR author never counts"


def test_edited_command_comment_does_not_count(daemon: Harness) -> None:
    """A command comment edited after posting is ignored (the edit could rewrite history)."""
    n = _d_pr(daemon)
    comment = daemon.ballot(n, "alice").create_comment("/approve C")
    daemon.advance(minutes=5)
    comment.edit("/approve A")
    daemon.tick()
    assert not daemon.pull(n).merged
    (ignored,) = daemon.actions("vote_ignored", n)
    assert ignored["reason"] == "edited after posting"


def test_push_after_approval_voids_it_and_opens_a_new_round(daemon: Harness) -> None:
    """Approval binds to the head: a push after it (before the merge) voids it; round 2."""
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/approve A")
    # the approval lands, but the repo requires a check that has not run: no merge yet
    daemon.sb.set_protection(
        "acme/widgets",
        "main",
        {"required_status_checks": {"strict": False, "contexts": ["ci/test"]}},
    )
    daemon.tick()
    assert not daemon.pull(n).merged
    assert daemon.actions("ballot", n)[-1]["status"] == "approved"
    daemon.advance(minutes=1)
    new_head = daemon.push(
        n, {".github/workflows/ci.yml": "name: ci\non: [merge_group]\njobs: {}\n"}
    )
    report = daemon.tick()
    assert report.classified == [f"acme/widgets#{n}"]
    assert daemon.actions("approval_voided", n)[0]["new_head_sha"] == new_head
    assert daemon.actions("ballot_round", n)[0]["round"] == 2
    ballot = daemon.issue_for(n, "ballot")
    comments = [c.body for c in ballot.get_comments()]
    assert any(f"New round for head {new_head}" in c and "is void" in c for c in comments)
    assert daemon.check(n).conclusion == "failure"
    assert "(round 2)" in ballot.body


def test_conflicting_reactions_stay_pending_until_a_command(daemon: Harness) -> None:
    """👍 from alice and 👎 from bob, no later command: pending; then `/approve A` wins."""
    n = _d_pr(daemon)
    daemon.ballot(n, "alice").create_reaction("+1")
    daemon.ballot(n, "bob").create_reaction("-1")
    report = daemon.tick()
    assert report.ballots[f"acme/widgets#{n}"] == "pending"
    assert daemon.pull(n).state == "open" and not daemon.pull(n).merged
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.tick()
    assert daemon.pull(n).merged


def test_defer_labels_then_a_later_approve_merges(daemon: Harness) -> None:
    """`/approve C` labels the ballot decision:deferred and blocks; a later `/approve A` merges."""
    n = _d_pr(daemon)
    daemon.ballot(n, "alice").create_comment("/approve C")
    daemon.tick()
    ballot = daemon.issue_for(n, "ballot")
    assert "decision:deferred" in [lb.name for lb in ballot.labels]
    assert not daemon.pull(n).merged and daemon.check(n).conclusion == "failure"
    daemon.advance(minutes=2)
    daemon.ballot(n, "alice").create_comment("/approve A")
    daemon.tick()
    assert daemon.pull(n).merged
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["deferred", "approved"]


def test_reject_closes_the_pr_with_a_comment_and_records_it(daemon: Harness) -> None:
    """`/reject` closes the PR (record before act), says why, and records a rejection."""
    n = _d_pr(daemon)
    daemon.ballot(n, "alice").create_comment("/reject")
    report = daemon.tick()
    pull = daemon.pull(n)
    assert pull.state == "closed" and not pull.merged
    assert report.closed == [f"acme/widgets#{n}"]
    assert [r["status"] for r in daemon.actions("close", n)] == ["attempted", "done"]
    assert daemon.actions("rejection", n)[0]["author"] == "agent-1"
    assert any("rejected" in c.body for c in pull.get_issue_comments())
    assert daemon.issue_for(n, "ballot").state == "closed"


@pytest.mark.parametrize("how", ["/reject", "-1"])
def test_a_rejected_pr_keeps_an_l1c3_that_says_who_rejected_it(daemon: Harness, how: str) -> None:
    """After `/reject` or a 👎 the PR is closed and never republished: its L1.C3 says
    "rejected by alice", not "waiting for an owner's ballot answer"."""
    n = _d_pr(daemon)
    assert "waiting for an owner" in daemon.check(n).output.title
    ballot = daemon.ballot(n, "alice")
    if how == "-1":
        ballot.create_reaction("-1")
    else:
        ballot.create_comment(how)
    daemon.tick()
    daemon.tick()
    assert daemon.pull(n).state == "closed"
    check = daemon.check(n)
    assert check.conclusion == "failure"
    assert "rejected by alice" in check.output.title, check.output.title
    assert "waiting" not in check.output.title and "waiting" not in check.output.summary


def test_unknown_command_is_answered_once(daemon: Harness) -> None:
    """An owner's `/aprove A` is audited as ignored and answered once with the valid commands."""
    n = _d_pr(daemon)
    daemon.ballot(n, "alice").create_comment("/aprove A")
    daemon.tick()
    daemon.tick()
    replies = [
        c for c in daemon.issue_for(n, "ballot").get_comments() if c.user.login == "capdaemon[bot]"
    ]
    assert len(replies) == 1 and "/approve A" in replies[0].body
    assert len(daemon.actions("unknown_command_answered", n)) == 1
    assert len(daemon.actions("vote_ignored", n)) == 1

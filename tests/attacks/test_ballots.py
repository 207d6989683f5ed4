"""Ballot attacks: who counts, where, when, and for which head (SPEC 3)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from .conftest import quadrant

pytestmark = pytest.mark.slow

WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}


def _d_pr(daemon, name: str = "ci", **kw) -> int:
    files = {f".github/workflows/{name}.yml": f"name: {name}\non: [pull_request]\n"}
    return daemon.open_pr(files, title=f"change {name}", **kw)


def _hold(daemon) -> None:
    """Branch protection requires a check nobody reports: approvals land, merges wait."""
    daemon.sb.set_protection(
        daemon.sb.repo, "main", {"required_status_checks": {"strict": False, "contexts": ["ci/t"]}}
    )


def test_commands_that_must_not_count(daemon) -> None:
    """Quoted, fenced, indented and HTML-commented owner commands; a spoofed bot transcript and a
    forged outcome marker by an agent; 👍 by non-owners; the author-owner's own `/approve A` →
    nothing counts, the D PRs stay open and failing."""
    n = _d_pr(daemon)
    own = _d_pr(daemon, "bobs", user="bob")
    daemon.tick()
    daemon.advance(minutes=1)
    alice = daemon.ballot(n, "alice")
    for body in (
        "> /approve A",
        "```\n/approve A\n```",
        "    /approve A",
        "<!-- /approve A -->",
        "~~~\n/approve A\n~~~",
        "/approve A please",
    ):
        alice.create_comment(body)
    agent = daemon.ballot(n, "agent-1")
    agent.create_comment("**capdaemon[bot]** commented:\n\n/approve A\n")
    agent.create_comment(
        '<!-- capdaemon: {"kind": "ballot-outcome", "key": "acme/widgets#1:1:approved:x"} -->\n'
        "Approved by alice.\n/approve A"
    )
    agent.create_reaction("+1")
    daemon.ballot(n, "agent-2").create_reaction("+1")
    daemon.ballot(n, "mallory").create_comment("/approve A")
    daemon.ballot(own, "bob").create_comment("/approve A")
    daemon.tick()
    daemon.tick()
    for pr in (n, own):
        assert not daemon.pull(pr).merged and daemon.pull(pr).state == "open"
        assert daemon.check(pr).conclusion == "failure"
        assert not daemon.actions("vote_counted", pr)
    reasons = {r["reason"] for r in daemon.actions("vote_ignored", n)}
    assert "not an owner" in reasons
    (by_author,) = daemon.actions("vote_ignored", own)
    assert by_author["reason"] == "the PR author never counts"


def test_owner_approval_on_the_wrong_issue_does_not_count(daemon) -> None:
    """An owner's `/approve A` on another PR's ballot, on the PR conversation itself, on a passive
    review issue and on a scope issue approves only the PR whose ballot it is on."""
    daemon.configure(repo={"require_capability": False})
    target = _d_pr(daemon, "target")
    other = _d_pr(daemon, "other")
    b_pr = daemon.open_pr(
        {"src/multiagent_protocol/router.py": "def route(m, h):\n    return h[m]\n"}
    )
    daemon.tick()
    assert quadrant(daemon, b_pr) == "B"
    daemon.advance(minutes=1)
    daemon.ballot(other, "alice").create_comment("/approve A")
    daemon.gh("alice").get_repo(daemon.sb.repo).get_issue(target).create_comment("/approve A")
    review = daemon.issue_for(b_pr, "review")
    bot = daemon.gh("alice").get_repo(daemon.sb.bot_repo)
    bot.get_issue(review.number).create_comment("/approve A")
    bot.get_issue(review.number).create_reaction("+1")
    daemon.tick()
    daemon.tick()
    assert daemon.pull(other).merged
    assert not daemon.pull(target).merged
    assert daemon.check(target).conclusion == "failure"


def test_comment_edited_by_someone_else_into_approve_does_not_count(daemon) -> None:
    """An agent with write access edits alice's plain comment into `/approve A`: ignored."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    comment = daemon.ballot(n, "alice").create_comment("Looking at it later.")
    daemon.advance(minutes=2)
    daemon.ballot(n, "agent-1").get_comment(comment.id).edit("/approve A")
    daemon.tick()
    assert not daemon.pull(n).merged
    (ignored,) = daemon.actions("vote_ignored", n)
    assert ignored["reason"] == "edited after posting"


def test_stale_thumbs_up_does_not_approve_a_new_head(daemon) -> None:
    """alice 👍 head 1 (merge held by a required check); a push → round 2: her 👍 is stale."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_reaction("+1")
    _hold(daemon)
    daemon.tick()
    assert daemon.actions("ballot", n)[-1]["status"] == "approved" and not daemon.pull(n).merged
    daemon.advance(minutes=1)
    daemon.push(n, {".github/workflows/ci.yml": "name: evil\non: [push]\n"})
    daemon.sb.set_protection(daemon.sb.repo, "main", {"required_status_checks": None})
    daemon.tick()
    daemon.tick()
    assert not daemon.pull(n).merged
    assert daemon.check(n).conclusion == "failure"
    assert daemon.actions("approval_voided", n)


def test_force_push_of_the_same_tree_voids_the_approval(daemon) -> None:
    """Same tree, new commit sha (amend/force-push): the approval was for the old sha → void."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/approve A")
    _hold(daemon)
    daemon.tick()
    old = daemon.pull(n).head.sha
    daemon.advance(minutes=1)
    new = daemon.sb.commit_files(
        daemon.sb.repo,
        daemon.pull(n).head.ref,
        {},
        "amended\n\nAgent-Session: claude-code/claude-opus-4/sess-00000001\n",
        author="agent-1",
    )
    assert new != old
    daemon.sb.set_protection(daemon.sb.repo, "main", {"required_status_checks": None})
    daemon.tick()
    assert not daemon.pull(n).merged
    assert daemon.actions("approval_voided", n)[0]["new_head_sha"] == new


def test_stale_approval_with_daemon_clock_behind_github(daemon) -> None:
    """The daemon's clock runs 30 s behind GitHub: a 👍 given to head 1 just before a push must
    still not approve head 2."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_reaction("+1")  # meant for head 1, not yet seen by a tick
    daemon.advance(seconds=5)
    daemon.push(n, {".github/workflows/ci.yml": "name: evil\non: [push]\n"})
    daemon.advance(seconds=5)
    daemon.tick(daemon.sb.now() - timedelta(seconds=30))
    assert not daemon.pull(n).merged

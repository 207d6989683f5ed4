"""Ballot edits: a command comment counts only when GitHub's edit record shows no edit."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def _d_pr(daemon) -> int:
    files = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\n"}
    return daemon.open_pr(files, title="change ci")


def test_same_second_edit_by_a_non_owner_does_not_count(daemon) -> None:
    """alice posts "Checking." on a D ballot; agent-1 (write access to the decision repo) edits
    it into `/approve A` within the same second, so REST shows updated_at == created_at. The
    edit record shows the edit: the vote is ignored and the D PR does not merge."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    comment = daemon.ballot(n, "alice").create_comment("Checking.")
    forged = daemon.ballot(n, "agent-1").get_comment(comment.id)
    forged.edit("/approve A")
    rest = daemon.ballot(n, "alice").get_comment(comment.id)
    assert rest.body == "/approve A" and rest.updated_at == rest.created_at  # REST cannot tell
    daemon.tick()
    daemon.tick()
    pull = daemon.pull(n)
    assert not pull.merged and pull.state == "open"
    assert daemon.check(n).conclusion == "failure"
    assert not daemon.actions("vote_counted", n)
    (ignored,) = daemon.actions("vote_ignored", n)
    assert ignored["user"] == "alice" and ignored["reason"] == "edited after posting"


def test_owner_edit_of_her_own_command_does_not_count_either(daemon) -> None:
    """alice posts `/reject`, then edits it herself into `/approve A` in the same second: an
    edited command never counts, whoever edited it; a fresh, unedited comment then does."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    ballot = daemon.ballot(n, "alice")
    mine = ballot.create_comment("/reject")
    ballot.get_comment(mine.id).edit("/approve A")
    daemon.tick()
    assert not daemon.pull(n).merged and daemon.pull(n).state == "open"
    (ignored,) = daemon.actions("vote_ignored", n)
    assert ignored["reason"] == "edited after posting"
    daemon.advance(minutes=1)
    ballot.create_comment("/approve A")
    daemon.tick()
    assert daemon.pull(n).merged


def test_without_graphql_no_command_comment_counts(daemon) -> None:
    """Where the GraphQL endpoint is missing (404) the forge reads comments through REST, which
    has no edit record: even an unedited `/approve A` does not count (fail closed); a 👍, which
    cannot be edited, still does."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.sb.faults("POST", r"^/graphql#", status=404, count=10_000)
    daemon.ballot(n, "alice").create_comment("/approve A")
    daemon.tick()
    assert not daemon.pull(n).merged
    (ignored,) = daemon.actions("vote_ignored", n)
    assert ignored["reason"] == "no edit record: an edit cannot be ruled out"
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_reaction("+1")
    daemon.tick()
    assert daemon.pull(n).merged


def test_graphql_failure_reads_nothing_and_merges_nothing(daemon) -> None:
    """A GraphQL 502 that outlasts the retries fails the ballot read: no merge this tick (an
    approval that could not be re-read never merges), and the next tick recovers."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/approve A")
    daemon.sb.faults("POST", r"^/graphql#", status=502, count=10_000)
    daemon.tick()
    assert not daemon.pull(n).merged
    daemon.sb.clear_faults()
    daemon.tick()
    assert daemon.pull(n).merged

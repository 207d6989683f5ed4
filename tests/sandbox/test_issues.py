"""Issues, comments, reactions, labels and events as capdaemon's ballots use them."""

from __future__ import annotations

from typing import Any

import github
import pytest

from .helpers import app_gh, gh


def test_issue_list_includes_prs_and_filters_by_label_and_state(sandbox: Any) -> None:
    """Like GitHub, the issue list also returns PRs; labels and state filter it."""
    sandbox.commit_files(
        "acme/widgets", "feat", {"f.txt": "f\n"}, "f", author="agent-1", parent_branch="main"
    )
    pr_number = sandbox.open_pr("acme/widgets", "feat", "main", "PR", "", "agent-1")
    repo = app_gh(sandbox).get_repo("acme/widgets")
    ballot = repo.create_issue("Ballot", labels=["decision:pending-owner"])
    other = repo.create_issue("Other")
    other.edit(state="closed")
    open_items = {i.number: i for i in repo.get_issues(state="open")}
    assert set(open_items) == {pr_number, ballot.number}
    assert open_items[pr_number].pull_request is not None
    assert open_items[ballot.number].pull_request is None
    labelled = repo.get_issues(state="all", labels=[repo.get_label("decision:pending-owner")])
    assert [i.number for i in labelled] == [ballot.number]
    assert [i.number for i in repo.get_issues(state="closed")] == [other.number]
    assert repo.get_issue(other.number).closed_by.login == "capdaemon[bot]"


def test_label_events_record_actor_and_label(sandbox: Any) -> None:
    """labeled/unlabeled events carry the actor and the label name and colour."""
    repo = gh(sandbox, "alice").get_repo("acme/widgets")
    repo.create_label("decision:auto-revert", "0e8a16")
    sandbox.commit_files(
        "acme/widgets", "revert", {"f.txt": "f\n"}, "f", author="agent-1", parent_branch="main"
    )
    number = sandbox.open_pr("acme/widgets", "revert", "main", "Revert", "", "agent-1")
    gh(sandbox, "agent-1").get_repo("acme/widgets").get_issue(number).add_to_labels(
        "decision:auto-revert"
    )
    issue = repo.get_issue(number)
    issue.remove_from_labels("decision:auto-revert")
    app_gh(sandbox).get_repo("acme/widgets").get_issue(number).add_to_labels("decision:auto-revert")
    events = [(e.event, e.actor.login, e.label.name, e.label.color) for e in issue.get_events()]
    assert events == [
        ("labeled", "agent-1", "decision:auto-revert", "0e8a16"),
        ("unlabeled", "alice", "decision:auto-revert", "0e8a16"),
        ("labeled", "capdaemon[bot]", "decision:auto-revert", "0e8a16"),
    ]


def test_reactions_on_issues_and_comments(sandbox: Any) -> None:
    """Reactions list the user and content; reacting twice returns the existing reaction (200)."""
    repo = app_gh(sandbox).get_repo("acme/widgets")
    issue = repo.create_issue("Ballot")
    alice_issue = gh(sandbox, "alice").get_repo("acme/widgets").get_issue(issue.number)
    first = alice_issue.create_reaction("+1")
    again = alice_issue.create_reaction("+1")
    assert first.id == again.id
    gh(sandbox, "mallory").get_repo("acme/widgets").get_issue(issue.number).create_reaction("-1")
    assert [(r.user.login, r.content) for r in issue.get_reactions()] == [
        ("alice", "+1"),
        ("mallory", "-1"),
    ]
    comment = issue.create_comment("Vote here")
    gh(sandbox, "bob").get_repo("acme/widgets").get_issue(issue.number).get_comment(
        comment.id
    ).create_reaction("rocket")
    assert [(r.user.login, r.content) for r in comment.get_reactions()] == [("bob", "rocket")]
    assert repo.get_issue(issue.number).raw_data["reactions"]["+1"] == 1
    with pytest.raises(github.GithubException) as exc:
        alice_issue.create_reaction("thumbsup")
    assert exc.value.status == 422


def test_only_the_author_or_writers_edit_comments(sandbox: Any) -> None:
    """mallory cannot edit the bot's comment; the bot can edit its own (updated_at moves)."""
    repo = app_gh(sandbox).get_repo("acme/widgets")
    issue = repo.create_issue("Ballot")
    comment = issue.create_comment("<!-- capdaemon: {} --> round 1")
    mallory_comment = (
        gh(sandbox, "mallory")
        .get_repo("acme/widgets")
        .get_issue(issue.number)
        .get_comment(comment.id)
    )
    with pytest.raises(github.GithubException) as exc:
        mallory_comment.edit("hijacked")
    assert exc.value.status == 403
    comment.edit("<!-- capdaemon: {} --> round 2")
    assert [c.body for c in issue.get_comments()] == ["<!-- capdaemon: {} --> round 2"]


def test_labels_need_triage_and_outsiders_labels_are_dropped(sandbox: Any) -> None:
    """mallory cannot add labels (403) and labels in her new issue are silently dropped."""
    mrepo = gh(sandbox, "mallory").get_repo("acme/widgets")
    issue = mrepo.create_issue("Hello", labels=["decision:pending-owner"])
    assert issue.labels == []
    with pytest.raises(github.GithubException) as exc:
        issue.add_to_labels("do-not-merge")
    assert exc.value.status == 403


def test_close_and_reopen_events(sandbox: Any) -> None:
    """Closing and reopening an issue records closed/reopened events with the actor."""
    repo = gh(sandbox, "bob").get_repo("acme/widgets")
    issue = repo.create_issue("Passive review")
    issue.edit(state="closed", state_reason="not_planned")
    issue.edit(state="open")
    assert [(e.event, e.actor.login) for e in issue.get_events()] == [
        ("closed", "bob"),
        ("reopened", "bob"),
    ]
    assert repo.get_issue(issue.number).state == "open"

"""Lazy mergeability as GitHub shows it: a write's answer is not the null read a GET sees."""

from __future__ import annotations

from typing import Any

from .helpers import gh

REPO = "acme/widgets"
PR_STATE = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) { pullRequest(number: $number) { mergeable } }
}
"""


def _branch(sb: Any, name: str, parent: str = "main") -> None:
    sb.commit_files(
        REPO, name, {f"src/{name}.py": "x = 1\n"}, "add", "agent-1", parent_branch=parent
    )


def _gql_mergeable(sb: Any, number: int) -> str:
    _h, data = gh(sb, "alice").requester.graphql_query(
        PR_STATE, {"owner": "acme", "name": "widgets", "number": number}
    )
    return str(data["data"]["repository"]["pullRequest"]["mergeable"])


def test_the_first_get_after_a_rest_open_answers_null(sandbox: Any) -> None:
    """POST /pulls answers null/unknown, and the client's first GET still answers null."""
    _branch(sandbox, "feat")
    repo = gh(sandbox, "agent-1").get_repo(REPO)
    created = repo.create_pull(base="main", head="feat", title="A change", body="")
    assert (created.mergeable, created.mergeable_state) == (None, "unknown")
    first = repo.get_pull(created.number)
    assert (first.mergeable, first.mergeable_state) == (None, "unknown")
    second = repo.get_pull(created.number)
    assert (second.mergeable, second.mergeable_state) == (True, "clean")


def test_graphql_and_rest_share_the_computing_window(sandbox: Any) -> None:
    """The first GraphQL read after the open is UNKNOWN; the REST read after it is computed."""
    _branch(sandbox, "feat")
    repo = gh(sandbox, "agent-1").get_repo(REPO)
    number = repo.create_pull(base="main", head="feat", title="A change", body="").number
    assert _gql_mergeable(sandbox, number) == "UNKNOWN"
    assert repo.get_pull(number).mergeable is True
    assert _gql_mergeable(sandbox, number) == "MERGEABLE"


def test_moving_the_base_with_patch_leaves_the_null_read_to_the_next_get(sandbox: Any) -> None:
    """PATCH base=... answers without spending the null read the next GET is owed."""
    _branch(sandbox, "feat")
    _branch(sandbox, "release")
    repo = gh(sandbox, "agent-1").get_repo(REPO)
    number = repo.create_pull(base="main", head="feat", title="A change", body="").number
    assert repo.get_pull(number).mergeable is None
    assert repo.get_pull(number).mergeable is True
    admin = gh(sandbox, "alice").get_repo(REPO)
    admin.get_pull(number).edit(base="release")
    moved = repo.get_pull(number)
    assert (moved.base.ref, moved.mergeable, moved.mergeable_state) == ("release", None, "unknown")
    assert repo.get_pull(number).mergeable is True

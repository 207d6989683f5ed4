"""The check rollup state of many heads in one GraphQL query per ROLLUP_SLOTS heads.

Each head is asked as ``repository(owner:, name:) { object(oid:) { ... on Commit { oid
statusCheckRollup { state } } } }`` under its own alias, several repositories in one query.
The answer is all or nothing: any GraphQL error, a state outside GitHub's ``StatusState``, or
a failed request raises (the caller then changes nothing). A head GitHub does not know (a
sha force-pushed away: ``object`` null), or whose answer names another sha, is left out.
A commit with no check run and no status has no rollup: its state is "" (not terminal).
"""

from __future__ import annotations

from collections.abc import Sequence

from capdaemon.forge.errors import ForgeError
from capdaemon.forge.gql import (
    ROLLUP_SLOTS,
    ROLLUP_SMALL_SLOTS,
    ROLLUP_STATES,
    ROLLUPS_QUERY,
    ROLLUPS_SMALL_QUERY,
    Graphql,
    GraphqlUnavailable,
    commit_variables,
)

Head = tuple[str, str]  # (repo "owner/name", head sha)


def rollup_queries(count: int) -> int:
    """How many queries (each 1 point by GitHub's formula) a sweep of `count` heads sends."""
    return -(-max(count, 0) // ROLLUP_SLOTS)


def head_rollups(graphql: Graphql, heads: Sequence[Head]) -> dict[Head, str]:
    """Each head's rollup state (``SUCCESS``, ``PENDING``, …; "" without any check), heads
    GitHub does not know left out. Raises on any failure (never a partial answer)."""
    if not graphql.available:
        raise GraphqlUnavailable("GitHub GraphQL rollups: endpoint unavailable")
    unique = list(dict.fromkeys(heads))
    out: dict[Head, str] = {}
    for start in range(0, len(unique), ROLLUP_SLOTS):
        out.update(_one_query(graphql, unique[start : start + ROLLUP_SLOTS]))
    return out


def _one_query(graphql: Graphql, chunk: list[Head]) -> dict[Head, str]:
    """One query for up to ROLLUP_SLOTS heads (the small one when they fit in it)."""
    small = len(chunk) <= ROLLUP_SMALL_SLOTS
    query, slots = (
        (ROLLUPS_SMALL_QUERY, ROLLUP_SMALL_SLOTS) if small else (ROLLUPS_QUERY, ROLLUP_SLOTS)
    )
    data = graphql.graphql(query, commit_variables(chunk, slots), f"rollups of {len(chunk)} heads")
    out: dict[Head, str] = {}
    for i, head in enumerate(chunk):
        state = _state_of(data.get(f"h{i}"), head)
        if state is not None:
            out[head] = state
    return out


def _state_of(repo_node: object, head: Head) -> str | None:
    """The rollup state in one alias's answer; None when the commit is not there."""
    if not isinstance(repo_node, dict):
        raise ForgeError(f"GitHub GraphQL rollups: no repository {head[0]} in the answer")
    obj = repo_node.get("object")
    if not isinstance(obj, dict) or obj.get("oid") != head[1]:
        return None  # unknown sha (or not a commit): nothing to compare
    rollup = obj.get("statusCheckRollup")
    if rollup is None:
        return ""
    state = rollup.get("state") if isinstance(rollup, dict) else None
    if state not in ROLLUP_STATES:
        raise ForgeError(f"GitHub GraphQL rollups: unknown rollup state {state!r} of {head[1]}")
    return str(state)

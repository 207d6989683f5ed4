"""The post-merge probe's checks of many merge commits in one GraphQL query per PROBE_SLOTS.

Each merge commit is asked as ``repository(owner:, name:) { object(oid:) { ... on Commit {
oid statusCheckRollup { contexts(first: 100) { ... } } } } }`` under its own alias. The answer
stands in for the REST reads (check runs, then every status ever posted) only where it can:

- a commit whose rollup holds App check runs only (or nothing at all) gets them, newest
  first, as REST lists them;
- a commit with any commit status gets None: GraphQL shows the latest status per context, not
  every one ever posted, nor who posted it (the probe counts a red status overwritten by a
  green one, and only from trusted creators), so it is read through REST as before; likewise
  a rollup of more than 100 contexts, a context of a kind not known here, an object GitHub
  does not know or that names another sha.

Any GraphQL error or a failed request raises (the caller then reads every commit through
REST): never a partial answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from capdaemon.forge.batch import _contexts
from capdaemon.forge.errors import ForgeError
from capdaemon.forge.gql import (
    PROBE_SLOTS,
    PROBE_SMALL_SLOTS,
    PROBES_QUERY,
    PROBES_SMALL_QUERY,
    Graphql,
    GraphqlUnavailable,
    commit_variables,
)
from capdaemon.model import CheckRun

Commit = tuple[str, str]  # (repo "owner/name", merge commit sha)


def probe_queries(count: int) -> int:
    """How many queries a batched read of `count` merge commits sends."""
    return -(-max(count, 0) // PROBE_SLOTS)


def merge_checks(
    graphql: Graphql, commits: Sequence[Commit]
) -> dict[Commit, list[CheckRun] | None]:
    """Each commit's check runs (None: read it through REST). Raises on any failure."""
    if not graphql.available:
        raise GraphqlUnavailable("GitHub GraphQL merge checks: endpoint unavailable")
    unique = list(dict.fromkeys(commits))
    out: dict[Commit, list[CheckRun] | None] = {}
    for start in range(0, len(unique), PROBE_SLOTS):
        out.update(_one_query(graphql, unique[start : start + PROBE_SLOTS]))
    return out


def _one_query(graphql: Graphql, chunk: list[Commit]) -> dict[Commit, list[CheckRun] | None]:
    small = len(chunk) <= PROBE_SMALL_SLOTS
    query, slots = (PROBES_SMALL_QUERY, PROBE_SMALL_SLOTS) if small else (PROBES_QUERY, PROBE_SLOTS)
    data = graphql.graphql(
        query, commit_variables(chunk, slots), f"checks of {len(chunk)} merge commits"
    )
    return {commit: _runs_of(data.get(f"h{i}"), commit) for i, commit in enumerate(chunk)}


def _runs_of(repo_node: object, commit: Commit) -> list[CheckRun] | None:
    """The check runs in one alias's answer; None when REST must read the commit."""
    if not isinstance(repo_node, dict):
        raise ForgeError(f"GitHub GraphQL merge checks: no repository {commit[0]} in the answer")
    obj = repo_node.get("object")
    if not isinstance(obj, dict) or obj.get("oid") != commit[1]:
        return None
    rollup = obj.get("statusCheckRollup")
    if rollup is None:
        return []  # no check run and no status on the commit
    contexts = rollup.get("contexts") if isinstance(rollup, dict) else None
    if not isinstance(contexts, dict) or not isinstance(contexts.get("nodes"), list):
        return None
    if (contexts.get("pageInfo") or {}).get("hasNextPage"):
        return None
    kept = _contexts(contexts["nodes"])
    if kept is None or kept[1]:
        return None  # a context of another kind, or commit statuses (REST has their history)
    return list(kept[0])

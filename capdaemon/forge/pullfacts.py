"""What a snapshot needs to know about a PR itself, from REST's PR object or the GraphQL batch.

A snapshot reads the PR (head, base, counts, title, body, labels, mergeability) before its
files. In a tick whose PR list came from the GraphQL batch, every one of those facts came
with the page of open PRs, so a new PR needs no ``GET /pulls/N``; elsewhere they come from
that GET. GraphQL's ``MergeableState`` maps to REST's ``mergeable``: MERGEABLE → True,
CONFLICTING → False, UNKNOWN (GitHub is still computing it) → None, never mergeable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capdaemon.forge.convert import _login

# GraphQL MergeableState → REST `mergeable` (UNKNOWN: not computed yet, so not mergeable).
MERGEABLE_STATE: dict[str, bool | None] = {
    "MERGEABLE": True,
    "CONFLICTING": False,
    "UNKNOWN": None,
}


@dataclass(frozen=True, slots=True)
class PullFacts:
    """One PR's own facts at one moment (its files and commits are read separately)."""

    head_sha: str
    head_ref: str
    base_sha: str
    base_ref: str
    author: str
    draft: bool
    title: str
    body: str
    labels: tuple[str, ...]
    changed_files: int
    commits: int
    mergeable: bool | None
    mergeable_state: str | None
    state: str


def facts_from_rest(pr: dict[str, Any]) -> PullFacts:
    """From REST's PR object (``GET /repos/{repo}/pulls/{number}``)."""
    return PullFacts(
        head_sha=str(pr["head"]["sha"]),
        head_ref=str(pr["head"].get("ref", "")),
        base_sha=str(pr["base"]["sha"]),
        base_ref=str(pr["base"]["ref"]),
        author=_login(pr.get("user")),
        draft=bool(pr.get("draft")),
        title=pr.get("title") or "",
        body=pr.get("body") or "",
        labels=tuple(str(lb["name"]) for lb in pr.get("labels") or ()),
        changed_files=int(pr.get("changed_files") or 0),
        commits=int(pr.get("commits") or 0),
        mergeable=pr.get("mergeable"),
        mergeable_state=pr.get("mergeable_state"),
        state=str(pr.get("state", "open")),
    )


def mergeable_of(node: dict[str, Any]) -> bool | None:
    """REST's ``mergeable`` for a GraphQL PR node (anything but MERGEABLE/CONFLICTING: None)."""
    return MERGEABLE_STATE.get(str(node.get("mergeable")))


def facts_from_node(node: dict[str, Any], author: str, labels: tuple[str, ...]) -> PullFacts | None:
    """From a node of the batch query; None when a fact is missing (the snapshot then reads
    the PR through REST)."""
    commits = (node.get("commits") or {}).get("totalCount")
    base_sha = node.get("baseRefOid")
    changed = node.get("changedFiles")
    if not isinstance(commits, int) or not isinstance(changed, int) or not base_sha:
        return None
    if not author:  # a deleted account: GraphQL says null where REST says "ghost"
        return None
    if not isinstance(node.get("title"), str) or not isinstance(node.get("body"), str):
        return None
    if node.get("mergeable") not in MERGEABLE_STATE:
        return None
    return PullFacts(
        head_sha=str(node["headRefOid"]),
        head_ref=str(node.get("headRefName") or ""),
        base_sha=str(base_sha),
        base_ref=str(node.get("baseRefName") or ""),
        author=author,
        draft=bool(node.get("isDraft")),
        title=node["title"],
        body=node["body"],
        labels=labels,
        changed_files=changed,
        commits=commits,
        mergeable=mergeable_of(node),
        mergeable_state=None,  # GraphQL's mergeStateStatus is not read
        state="open",
    )

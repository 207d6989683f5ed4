"""Plain, frozen data the forge returns besides PRSnapshot (no PyGithub import here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class PRSummary:
    """One open PR as the PR list shows it (cheap: one page lists 100)."""

    repo: str
    number: int
    head_sha: str
    head_ref: str
    base_ref: str
    author: str
    draft: bool
    labels: tuple[str, ...]
    state: str
    updated_at: datetime | None
    # GitHub's mergeability as the list carried it: only the GraphQL batch does
    # (`mergeable_known`); None there means GitHub is still computing it (never mergeable)
    mergeable: bool | None = None
    mergeable_known: bool = False

    @property
    def ref(self) -> str:
        """`owner/repo#N`."""
        return f"{self.repo}#{self.number}"


@dataclass(frozen=True, slots=True)
class PRStatus:
    """Where a PR stands right now (one GET of the PR): open, merged at which commit, or closed."""

    repo: str
    number: int
    state: str  # "open" | "closed"
    merged: bool
    merge_sha: str | None
    head_sha: str
    mergeable: bool | None
    base_ref: str = ""  # the branch it merges (or merged) into


@dataclass(frozen=True, slots=True)
class Comment:
    """An issue comment. `edited`: True when GitHub's edit record shows an edit (GraphQL
    `lastEditedAt` / `includesCreatedEdit`) or REST's `updated_at` does; False when the
    edit record shows none; None when there is no edit record (REST only): unknown."""

    id: int
    user: str
    body: str
    created_at: datetime
    updated_at: datetime
    edited: bool | None = None


@dataclass(frozen=True, slots=True)
class Reaction:
    """A reaction on an issue; `content` is GitHub's string ("+1", "-1", "laugh", ...)."""

    id: int
    user: str
    content: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class MarkedIssue:
    """An issue capdaemon wrote, found again by the hidden marker in its body."""

    repo: str
    number: int
    state: str
    title: str
    body: str
    labels: tuple[str, ...]
    marker: dict[str, Any] = field(hash=False)
    created_at: datetime | None
    closed_at: datetime | None
    author: str

    @property
    def ref(self) -> str:
        """`owner/repo#N`."""
        return f"{self.repo}#{self.number}"


@dataclass(frozen=True, slots=True)
class RecentChanges:
    """The top of one of a repo's lists sorted by update time, newest first (one conditional
    GET: a free 304 while nothing changed): each item's number with a mark that moves when it
    changes, and the poll interval GitHub asked for (`X-Poll-Interval`; None when not sent)."""

    repo: str
    items: tuple[tuple[int, str], ...]
    poll_interval: int | None = None


@dataclass(frozen=True, slots=True)
class IssueActivity:
    """An issue's activity as GitHub's issue list shows it (one request lists 100 issues).

    `comments` counts comments; `updated_at` moves with new comments and with edits of the
    issue itself; `reactions` is GitHub's rollup of the reactions on the issue as sorted
    (content, count) pairs plus ("total_count", n) — None when the list carried no rollup.
    Equal activity means nobody commented or reacted since (see the daemon's notes for what
    it cannot show: comment edits, and one reaction swapped for another of the same kind).
    `body` lets the daemon see an edit of its own issue's text without another request.
    """

    repo: str
    number: int
    state: str
    comments: int
    updated_at: datetime | None
    reactions: tuple[tuple[str, int], ...] | None
    body: str | None = None  # the issue's body as listed (None: not in the list entry)
    title: str | None = None


@dataclass(frozen=True, slots=True)
class IssueList:
    """One listing of a repo's issues the tick reads in full: the changes list — every open
    issue (`since` None), or every issue of any state updated at or after `since` — or the
    open issues carrying `label` (whose reactions, which move no update time, must be seen)."""

    since: str | None = None  # ISO 8601 UTC, as GitHub's `since` parameter takes it
    label: str | None = None

    def key(self) -> str:
        """A short name for the listing (its query, in words)."""
        if self.label is not None:
            return f"label={self.label}"
        return "open" if self.since is None else f"since={self.since}"


@dataclass(frozen=True, slots=True)
class IssueListing:
    """What the issue listings of one tick showed: the open issues' activity, every issue
    the changes list carried (closed ones too) as (number, state, update time), and the
    issues a label listing carried."""

    open: dict[int, IssueActivity]
    changed: tuple[tuple[int, str, datetime | None], ...]
    by_label: frozenset[int] = frozenset()

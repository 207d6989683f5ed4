"""The values GraphQL resolvers pass around: thin wrappers over backend records, and pages."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from graphql import GraphQLError

# -- node wrappers -----------------------------------------------------------------------------


@dataclass
class Repo:
    """A repository (``full`` as the backend spells it)."""

    full: str
    typename: str = "Repository"


@dataclass
class IssueN:
    """An issue record."""

    full: str
    rec: dict[str, Any]
    typename: str = "Issue"


@dataclass
class PullN:
    """A pull-request record (an issue record with ``pull``)."""

    full: str
    rec: dict[str, Any]
    typename: str = "PullRequest"


@dataclass
class CommentN:
    """An issue comment."""

    full: str
    c: dict[str, Any]
    typename: str = "IssueComment"


@dataclass
class ReactionN:
    """A reaction."""

    r: dict[str, Any]
    typename: str = "Reaction"


@dataclass
class ActorN:
    """A user or bot, by its REST login (bots end in ``[bot]`` there, not in GraphQL)."""

    login: str
    account: dict[str, Any]

    @property
    def typename(self) -> str:
        """``Bot`` or ``User`` (organisations never author here)."""
        if self.account.get("type") == "Bot" or self.login.endswith("[bot]"):
            return "Bot"
        return "User"


@dataclass
class CommitN:
    """A commit by sha."""

    full: str
    sha: str
    typename: str = "Commit"


@dataclass
class PullCommitN:
    """A commit in a pull request."""

    commit: CommitN
    typename: str = "PullRequestCommit"


@dataclass
class RollupN:
    """The latest check run per (app, name) and the latest status per context of a commit."""

    full: str
    sha: str
    runs: list[dict[str, Any]]
    statuses: list[dict[str, Any]]
    typename: str = "StatusCheckRollup"


@dataclass
class CheckRunN:
    """A check run."""

    full: str
    r: dict[str, Any]
    typename: str = "CheckRun"


@dataclass
class SuiteN:
    """A check run's suite (only its app is served)."""

    app: dict[str, Any] | None
    suite_id: int
    typename: str = "CheckSuite"


@dataclass
class StatusN:
    """A commit status."""

    s: dict[str, Any]
    typename: str = "StatusContext"


@dataclass
class Conn:
    """One page of a connection."""

    items: list[Any]
    start: int
    total: int
    has_prev: bool
    has_next: bool
    edges: list[tuple[Any, str]] = field(default_factory=list)


def cursor(index: int) -> str:
    """An opaque cursor for position ``index``."""
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _index(cursor: str, name: str) -> int:
    try:
        text = base64.b64decode(cursor.encode(), validate=True).decode()
        if text.startswith("cursor:v2:"):
            return int(text.removeprefix("cursor:v2:"))
    except (ValueError, UnicodeDecodeError):
        pass
    raise GraphQLError(f"`{cursor}` does not appear to be a valid cursor.", extensions={"at": name})


def page(items: list[Any], args: dict[str, Any], name: str) -> Conn:
    """Slice ``items`` like GitHub: ``after``/``before`` cursors, then ``first`` or ``last``."""
    lo, hi = 0, len(items)
    if args.get("after") is not None:
        lo = max(lo, _index(str(args["after"]), name) + 1)
    if args.get("before") is not None:
        hi = min(hi, _index(str(args["before"]), name))
    hi = max(hi, lo)
    first, last = args.get("first"), args.get("last")
    if first is not None:
        hi = min(hi, lo + int(first))
    if last is not None:
        lo = max(lo, hi - int(last))
    chunk = items[lo:hi]
    conn = Conn(chunk, lo, len(items), lo > 0, hi < len(items))
    conn.edges = [(item, cursor(lo + i)) for i, item in enumerate(chunk)]
    return conn

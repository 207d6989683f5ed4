"""Forge reads through GitHub's GraphQL API: comments with their edit record, and reactions.

REST shows an edit only as ``updated_at`` in whole seconds, so an edit within the second a
comment was posted is invisible there. GraphQL's ``lastEditedAt`` / ``includesCreatedEdit``
come from GitHub's edit record: a comment with either set was edited, whenever.

Every query the forge sends is in ``QUERIES`` (a test validates each one against GitHub's
published schema). They are read-only, so the transport may retry them and does not pace
them like writes. Where GraphQL is unavailable (the endpoint answers 404), the forge falls
back to REST and marks each comment's edit state unknown (``Comment.edited is None``) unless
REST itself shows the edit: the ballot then ignores it (fail closed).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from github import GithubException

from capdaemon.forge.convert import _dt, log
from capdaemon.forge.errors import ForgeError, NotFound
from capdaemon.forge.refrules import BASE_REF_FIELDS
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.types import Comment, Reaction

if TYPE_CHECKING:
    from capdaemon.forge.session import ForgeSession

_PAGE_OF_COMMENTS = """
fragment CommentPage on IssueCommentConnection {
  pageInfo { hasNextPage endCursor }
  nodes {
    databaseId body createdAt updatedAt lastEditedAt includesCreatedEdit
    author { __typename login }
  }
}"""

COMMENTS_QUERY = (
    """
query CapdaemonComments($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issueOrPullRequest(number: $number) {
      __typename
      ... on Issue { comments(first: 100, after: $after) { ...CommentPage } }
      ... on PullRequest { comments(first: 100, after: $after) { ...CommentPage } }
    }
  }
}"""
    + _PAGE_OF_COMMENTS
)

_PAGE_OF_REACTIONS = """
fragment ReactionPage on ReactionConnection {
  pageInfo { hasNextPage endCursor }
  nodes { databaseId content createdAt user { login } }
}"""

REACTIONS_QUERY = (
    """
query CapdaemonReactions($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issueOrPullRequest(number: $number) {
      __typename
      ... on Issue { reactions(first: 100, after: $after) { ...ReactionPage } }
      ... on PullRequest { reactions(first: 100, after: $after) { ...ReactionPage } }
    }
  }
}"""
    + _PAGE_OF_REACTIONS
)

# One page of a repo's open PRs with each head's check rollup (Tide-style batch gathering),
# and every fact a snapshot needs from the PR itself (base, counts, title, body, mergeable).
# Priced by GitHub's formula: 1 + 100 (labels) + 100 (commits) + 100 (contexts) → 3 points for
# a page of 100 (`$first`), divided by 100 and rounded: 1 point for a page of SMALL_PULLS_PAGE.
OPEN_PULLS_QUERY = """
query CapdaemonOpenPulls($owner: String!, $name: String!, $after: String, $first: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequests(states: [OPEN], first: $first, after: $after,
                 orderBy: {field: CREATED_AT, direction: ASC}) {
      pageInfo { hasNextPage endCursor }
      nodes {
        number headRefOid headRefName baseRefOid baseRefName isDraft updatedAt
        title body mergeable changedFiles
        author { __typename login }
        labels(first: 100) { totalCount nodes { name } }
        commits(last: 1) { totalCount nodes { commit { oid statusCheckRollup {
          contexts(first: 100) {
            pageInfo { hasNextPage }
            nodes {
              __typename
              ... on CheckRun {
                databaseId name status conclusion title summary text startedAt completedAt
                checkSuite { app { databaseId slug } }
              }
              ... on StatusContext { context state description createdAt }
            }
          }
        } } } }
      }
    }
  }
}"""

PULLS_PAGE = 100  # GitHub's most
SMALL_PULLS_PAGE = 49  # the most a 1-point page holds: 1 + 3 × 49 (+ 1, the base ref) = 149 → 1

# The first page of the same, with the supervised base branch's head, classic protection rule
# and ruleset rules (``refrules``): no branch, protection or rules request in a steady tick.
# The ref adds one connection of 100: still 3 points.
_REPOSITORY = "  repository(owner: $owner, name: $name) {"
OPEN_PULLS_WITH_BASE_QUERY = OPEN_PULLS_QUERY.replace(
    "$first: Int!) {", "$first: Int!, $base: String!) {", 1
).replace(_REPOSITORY, _REPOSITORY + BASE_REF_FIELDS, 1)

# The check rollup state of many commits at once, each by repository and sha (the rollup
# sweep of heads waiting on checks: no list GitHub offers moves when a check run completes).
# GitHub's formula counts only connections, and this query has none: 1 point whatever the
# number of heads. Bounded anyway: GitHub stops a query after 10 seconds, and each head is a
# repository and an object lookup. Two fixed sizes (the forge sends only queries it knows,
# with variables: no sha or name is ever pasted into the text); unused slots repeat a head.
ROLLUP_SLOTS = 250
ROLLUP_SMALL_SLOTS = 25
ROLLUP_STATES = frozenset({"ERROR", "EXPECTED", "FAILURE", "PENDING", "SUCCESS"})


def _commits_query(operation: str, fragment: str, slots: int) -> str:
    """A query of `slots` commits, each under alias h<i> by repository and sha (variables
    $o<i>, $n<i>: the repo; $s<i>: the sha), answered by `fragment` (on GitObject)."""
    spread = fragment.split()[1]
    params = ", ".join(f"$o{i}: String!, $n{i}: String!, $s{i}: GitObjectID!" for i in range(slots))
    commits = "\n".join(
        f"  h{i}: repository(owner: $o{i}, name: $n{i}) {{ object(oid: $s{i}) {{ ...{spread} }} }}"
        for i in range(slots)
    )
    return f"query {operation}{slots}({params}) {{\n{commits}\n}}\n{fragment}"


def commit_variables(chunk: list[tuple[str, str]], slots: int) -> dict[str, str]:
    """The variables of a `_commits_query` for (repo, sha) pairs; unused slots repeat the last."""
    padded = chunk + [chunk[-1]] * (slots - len(chunk))
    variables: dict[str, str] = {}
    for i, (repo, sha) in enumerate(padded):
        owner, _, name = repo.partition("/")
        variables |= {f"o{i}": owner, f"n{i}": name, f"s{i}": sha}
    return variables


_ROLLUP = "fragment Rollup on GitObject { ... on Commit { oid statusCheckRollup { state } } }"


def _rollups_query(slots: int) -> str:
    """The rollup query with `slots` heads."""
    return _commits_query("CapdaemonRollups", _ROLLUP, slots)


ROLLUPS_QUERY = _rollups_query(ROLLUP_SLOTS)
ROLLUPS_SMALL_QUERY = _rollups_query(ROLLUP_SMALL_SLOTS)

# The checks of many merge commits at once (the post-merge probe, capdaemon.forge.mergechecks):
# each commit's rollup contexts, up to 100. GitHub's formula: one request per commit's
# connection, divided by 100: 1 point up to 50 commits (and rounded, 1 for 50).
PROBE_SLOTS = 50
PROBE_SMALL_SLOTS = 10


_CHECKS = (
    "fragment Checks on GitObject { ... on Commit { oid statusCheckRollup {\n"
    "  contexts(first: 100) {\n"
    "    pageInfo { hasNextPage }\n"
    "    nodes {\n"
    "      __typename\n"
    "      ... on CheckRun {\n"
    "        databaseId name status conclusion title summary startedAt completedAt\n"
    "        checkSuite { app { databaseId slug } }\n"
    "      }\n"
    "      ... on StatusContext { context state createdAt }\n"
    "    }\n"
    "  }\n"
    "} } }"
)


def _probes_query(slots: int) -> str:
    """The merge-checks query with `slots` commits."""
    return _commits_query("CapdaemonMergeChecks", _CHECKS, slots)


PROBES_QUERY = _probes_query(PROBE_SLOTS)
PROBES_SMALL_QUERY = _probes_query(PROBE_SMALL_SLOTS)

# A PR as it is right before its merge call: the base it targets (GitHub's merge call guards
# the head sha only), its head and whether it merged already (a retried merge). No connection:
# 1 point, from GraphQL's own budget.
PULL_BEFORE_MERGE_QUERY = """
query CapdaemonPullBeforeMerge($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) { state merged baseRefName headRefOid mergeCommit { oid } }
  }
}"""

QUERIES: dict[str, str] = {
    "comments": COMMENTS_QUERY,
    "reactions": REACTIONS_QUERY,
    "open_pulls": OPEN_PULLS_QUERY,
    "open_pulls_with_base": OPEN_PULLS_WITH_BASE_QUERY,
    "rollups": ROLLUPS_QUERY,
    "rollups_small": ROLLUPS_SMALL_QUERY,
    "merge_checks": PROBES_QUERY,
    "merge_checks_small": PROBES_SMALL_QUERY,
    "pull_before_merge": PULL_BEFORE_MERGE_QUERY,
}
_SENDABLE = frozenset(QUERIES.values())

# GraphQL's ReactionContent → REST's reaction content (the strings the ballots compare).
REACTION_CONTENT = {
    "THUMBS_UP": "+1",
    "THUMBS_DOWN": "-1",
    "LAUGH": "laugh",
    "CONFUSED": "confused",
    "HEART": "heart",
    "HOORAY": "hooray",
    "ROCKET": "rocket",
    "EYES": "eyes",
}
MAX_PAGES = 50  # 5,000 comments or reactions on one issue: more is not a ballot


class GraphqlUnavailable(ForgeError):
    """The GraphQL endpoint is not there (HTTP 404): the caller falls back to REST."""


class _Partial(Exception):
    """A GraphQL answer with data and errors (control flow inside graphql_partial)."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__("partial GraphQL answer")
        self.body = body


def _author(node: dict[str, Any] | None) -> str:
    """The REST login of an actor: GraphQL names a bot ``slug``, REST ``slug[bot]``."""
    if not node:
        return ""
    login = str(node.get("login") or "")
    if node.get("__typename") == "Bot" and login and not login.endswith("[bot]"):
        return f"{login}[bot]"
    return login


def comment_from_node(node: dict[str, Any]) -> Comment:
    """A Comment from a GraphQL IssueComment node; ``edited`` from GitHub's edit record."""
    created = _dt(node.get("createdAt"))
    if created is None or node.get("databaseId") is None:
        raise ForgeError("GitHub GraphQL: a comment without createdAt or databaseId")
    return Comment(
        id=int(node["databaseId"]),
        user=_author(node.get("author")),
        body=str(node.get("body") or ""),
        created_at=created,
        updated_at=_dt(node.get("updatedAt")) or created,
        edited=bool(node.get("lastEditedAt")) or bool(node.get("includesCreatedEdit")),
    )


def reaction_from_node(node: dict[str, Any]) -> Reaction:
    """A Reaction from a GraphQL Reaction node (a bot's reaction has no user: login "")."""
    created = _dt(node.get("createdAt"))
    content = REACTION_CONTENT.get(str(node.get("content")))
    if created is None or node.get("databaseId") is None or content is None:
        raise ForgeError("GitHub GraphQL: a reaction without createdAt, databaseId or content")
    return Reaction(
        id=int(node["databaseId"]),
        user=_author(node.get("user")),
        content=content,
        created_at=created,
    )


class Graphql:
    """Sends the forge's GraphQL queries; remembers when the endpoint is not there."""

    def __init__(self, session: ForgeSession) -> None:
        self._http = session.http
        self._scrubber = session.scrubber
        self.available = True

    @contextmanager
    def _graphql_errors(self, what: str, partial: bool = False) -> Iterator[None]:
        try:
            yield
        except GithubException as exc:
            data = exc.data if isinstance(exc.data, dict) else {}
            errors = data.get("errors")
            if partial and exc.status == 400 and isinstance(data.get("data"), dict):
                raise _Partial(data) from None
            if isinstance(errors, list) and errors:
                raise _error_of(errors, what, self._scrubber) from None
            if exc.status in (404, 410):
                raise GraphqlUnavailable(f"GitHub GraphQL {what}: endpoint unavailable") from None
            raise self._http.translate(exc, f"GraphQL {what}") from None

    def graphql(self, query: str, variables: dict[str, Any], what: str) -> dict[str, Any]:
        """Run one of ``QUERIES``; its ``data`` (any GraphQL error raises: never partial)."""
        data, _errors = self.graphql_partial(query, variables, what, partial=False)
        return data

    def graphql_partial(
        self, query: str, variables: dict[str, Any], what: str, *, partial: bool = True
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Run one of ``QUERIES``: (data, errors). With ``partial`` an answer that carries data
        and errors is returned for the caller to judge; otherwise any error raises."""
        if query not in _SENDABLE:
            raise ForgeError(f"GitHub GraphQL {what}: not one of the forge's queries")
        body: Any = None
        try:
            with (
                self._http.errors(f"GraphQL {what}"),
                self._graphql_errors(what, partial),
                self._http.requester() as rq,
            ):
                _headers, body = rq.graphql_query(query, variables)
        except _Partial as p:
            body = p.body
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            raise ForgeError(f"GitHub GraphQL {what}: no data in the answer")
        errors = body.get("errors") if isinstance(body.get("errors"), list) else []
        return data, [e for e in errors if isinstance(e, dict)]

    def issue_nodes(
        self, query: str, repo: str, number: int, field: str
    ) -> list[dict[str, Any]] | None:
        """Every node of one connection of an issue or PR; None when GraphQL is not there."""
        if not self.available:
            return None
        try:
            return self._issue_pages(query, repo, number, field)
        except GraphqlUnavailable:
            self.fall_back()
            return None

    def _issue_pages(self, query: str, repo: str, number: int, field: str) -> list[dict[str, Any]]:
        owner, name = repo.split("/", 1)
        nodes: list[dict[str, Any]] = []
        after: str | None = None
        for _ in range(MAX_PAGES):
            variables = {"owner": owner, "name": name, "number": number, "after": after}
            data = self.graphql(query, variables, f"{field} of {repo}#{number}")
            item = (data.get("repository") or {}).get("issueOrPullRequest")
            if not isinstance(item, dict) or not isinstance(item.get(field), dict):
                raise NotFound(f"GitHub GraphQL: {repo}#{number} not found")
            conn = item[field]
            nodes.extend(n for n in conn.get("nodes") or () if isinstance(n, dict))
            info = conn.get("pageInfo") or {}
            if not info.get("hasNextPage"):
                return nodes
            after = info.get("endCursor")
            if not after:
                break
        raise ForgeError(f"GitHub GraphQL: {field} of {repo}#{number}: over {MAX_PAGES} pages")

    def fall_back(self) -> None:
        """GraphQL is not there: every read uses REST from now on (logged once)."""
        if self.available:
            log.warning(
                "forge.graphql_unavailable",
                fallback="REST: an edit cannot be ruled out, so no command comment counts",
            )
        self.available = False


def _error_of(errors: list[Any], what: str, scrubber: Scrubber) -> ForgeError:
    """The ForgeError for a GraphQL `errors` list (NotFound when GitHub says NOT_FOUND)."""
    kinds = {str(e.get("type")) for e in errors if isinstance(e, dict)}
    text = "; ".join(str(e.get("message", "")) for e in errors if isinstance(e, dict))[:500]
    kind = NotFound if "NOT_FOUND" in kinds else ForgeError
    return kind(scrubber.scrub(f"GitHub GraphQL {what}: {text}"))

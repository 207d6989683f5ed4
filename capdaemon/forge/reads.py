"""Forge reads besides snapshots: PR lists and status, ballots (comments, reactions), issues."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from capdaemon.forge.convert import _comment, _dt, _login, pr_status
from capdaemon.forge.errors import Forbidden, NotFound
from capdaemon.forge.gql import (
    COMMENTS_QUERY,
    REACTIONS_QUERY,
    Graphql,
    comment_from_node,
    reaction_from_node,
)
from capdaemon.forge.types import (
    Comment,
    IssueActivity,
    IssueList,
    IssueListing,
    PRStatus,
    PRSummary,
    Reaction,
    RecentChanges,
)

if TYPE_CHECKING:
    from capdaemon.forge.session import ForgeSession

_ROLES = (
    ("admin", "admin"),
    ("maintain", "maintain"),
    ("push", "write"),
    ("triage", "triage"),
    ("pull", "read"),
)


class Reads:
    """Reads of PRs, issues, ballots, permissions and commits (REST, GraphQL where better)."""

    def __init__(self, session: ForgeSession, graphql: Graphql) -> None:
        self._http = session.http
        self._identity = session.identity
        self._caches = session.caches
        self._graphql = graphql
        self._seen = session.seen
        self._clock = session.clock

    def rest_open_prs(self, repo: str) -> list[PRSummary]:
        """All open PRs of `repo` through REST (a failed page raises Incomplete: never a partial
        list); `list_open_prs` (batch.py) uses it where the GraphQL batch cannot be used."""
        items = self._http.pages(
            f"/repos/{repo}/pulls", {"state": "open", "sort": "created", "direction": "asc"}
        )
        return [_summary(repo, p) for p in items]

    def pull_status(self, repo: str, number: int) -> PRStatus:
        """Open, merged (and at which merge commit) or closed: one ETag-cached GET of the PR."""
        return pr_status(repo, self._http.get(f"/repos/{repo}/pulls/{number}"))

    def branch_contains(self, repo: str, branch: str, sha: str) -> bool:
        """True when commit `sha` is on `branch` (its head or an ancestor of it): one compare.

        Then `sha` is the merge base, whose parents the answer carries: kept in the sha cache
        (``commit_parents`` of a merge commit just checked costs no read)."""
        cmp = self._http.get(f"/repos/{repo}/compare/{quote(branch, safe='/')}...{sha}")
        contained = cmp.get("status") in ("identical", "behind")
        base = cmp.get("merge_base_commit")
        if contained and isinstance(base, dict) and base.get("sha") == sha:
            parents = base.get("parents")
            shas = (
                [p.get("sha") for p in parents if isinstance(p, dict)]
                if isinstance(parents, list)
                else []
            )
            if parents and len(shas) == len(parents) and all(isinstance(x, str) for x in shas):
                self._caches.parents.put((repo, sha), tuple(str(x) for x in shas))
        return contained

    def comments(self, repo: str, issue_no: int) -> list[Comment]:
        """All comments of an issue or PR, oldest first, with GitHub's edit record (GraphQL);
        through REST when GraphQL is not there (no edit record: `edited` unknown)."""
        nodes = self._graphql.issue_nodes(COMMENTS_QUERY, repo, issue_no, "comments")
        if nodes is not None:
            return [comment_from_node(n) for n in nodes]
        items = self._http.pages(f"/repos/{repo}/issues/{issue_no}/comments")
        return [_comment(c) for c in items]

    def reactions(self, repo: str, issue_no: int) -> list[Reaction]:
        """All reactions on the issue itself, oldest first (GraphQL, else REST)."""
        nodes = self._graphql.issue_nodes(REACTIONS_QUERY, repo, issue_no, "reactions")
        if nodes is not None:
            return [reaction_from_node(n) for n in nodes]
        out = []
        for r in self._http.pages(f"/repos/{repo}/issues/{issue_no}/reactions"):
            at = _dt(r.get("created_at"))
            assert at is not None
            out.append(
                Reaction(
                    id=int(r["id"]), user=_login(r.get("user")), content=r["content"], created_at=at
                )
            )
        return out

    def issue_listing(self, repo: str, lists: tuple[IssueList, ...]) -> IssueListing:
        """The open issues' activity from `lists` read in full (each page a conditional GET:
        a free 304 while its URL and answer stay the same), and what the first list — the
        changes list — carried (closed issues included). A failed page raises Incomplete."""
        found: dict[int, IssueActivity] = {}
        changed: list[tuple[int, str, datetime | None]] = []
        by_label: set[int] = set()
        for n, lst in enumerate(lists):
            params = self.issue_list_params(lst)
            for it in self._http.pages(f"/repos/{repo}/issues", params):
                act = _activity(repo, it)
                if act is None:
                    continue
                if n == 0:
                    changed.append((act.number, act.state, act.updated_at))
                elif act.state == "open":
                    by_label.add(act.number)
                if act.state == "open":
                    found[act.number] = act
        return IssueListing(found, tuple(changed), frozenset(by_label))

    def recent_changes(self, repo: str, kind: str, count: int = 1) -> RecentChanges:
        """The `count` most recently updated open PRs (`kind` "pulls") or issues and PRs of any
        state (`kind` "issues": comments, reactions, closing) of `repo`: one page, never
        followed, sent with the ETag of the last answer (a 304 is not counted)."""
        if kind not in ("pulls", "issues"):
            raise ValueError(f"recent_changes: kind must be pulls or issues, not {kind!r}")
        params: dict[str, Any] = {
            "state": "open" if kind == "pulls" else "all",
            "sort": "updated",
            "direction": "desc",
            "per_page": count,
        }
        headers, data = self._http.req("GET", f"/repos/{repo}/{kind}", params=params)
        items = tuple((int(it["number"]), _change_mark(it)) for it in data or ())
        return RecentChanges(repo, items, _poll_interval(headers))

    def issue_list_marks(self, repo: str, lst: IssueList, page: int = 1) -> RecentChanges:
        """One page (100) of one of the tick's issue listings (`issue_listing`), each issue
        with the mark of `recent_changes`: a comment, a reaction (which moves no update
        time), an edit or a close moves it. One conditional GET of the same URL as the
        tick's, so the ETag is shared."""
        params: dict[str, Any] = {"per_page": 100, **self.issue_list_params(lst)}
        if page > 1:
            params["page"] = page
        headers, data = self._http.req("GET", f"/repos/{repo}/issues", params=params)
        items = tuple((int(it["number"]), _change_mark(it)) for it in data or ())
        return RecentChanges(repo, items, _poll_interval(headers))

    def issue_list_params(self, lst: IssueList) -> dict[str, Any]:
        """The query of one issue listing (oldest first; with a token only ours). The changes
        list with a `since` lists every state: an issue closed since is seen closed."""
        if lst.label is not None:
            return {**self._issue_list_params("open"), "labels": lst.label}
        if lst.since is None:
            return self._issue_list_params("open")
        return {**self._issue_list_params("all"), "since": lst.since}

    def _issue_list_params(self, state: str) -> dict[str, Any]:
        """The issue list's query for issues in `state` (oldest first; with a token only
        ours, `creator`: as an App all)."""
        params: dict[str, Any] = {"state": state, "sort": "created", "direction": "asc"}
        if not self._identity.as_app:
            params["creator"] = self._identity.login
        return params

    def check_marks(self, repo: str, sha: str, feed: str = "checks") -> RecentChanges:
        """What moves when a check run or a commit status on `sha` starts, completes or is
        re-run: conditional GETs of its check runs and (`feed` "checks", not "check-runs") its
        combined status, each a free 304 while nothing changed. Each is sent as the tick's
        REST read of the same (capdaemon.forge.checks), so it carries that read's ETag.
        Items: (0, the check runs' mark), and (1, the statuses' mark)."""
        if feed not in ("checks", "check-runs"):
            raise ValueError(f"check_marks: feed must be checks or check-runs, not {feed!r}")
        h1, runs = self._http.req(
            "GET", f"/repos/{repo}/commits/{sha}/check-runs", params={"per_page": 100}
        )
        items: tuple[tuple[int, str], ...] = ((0, _runs_mark(runs)),)
        asked = [_poll_interval(h1)]
        if feed == "checks":
            h2, status = self._http.req(
                "GET", f"/repos/{repo}/commits/{sha}/status", params={"per_page": 100}
            )
            items += ((1, _status_mark(status)),)
            asked.append(_poll_interval(h2))
        known = [p for p in asked if p is not None]
        return RecentChanges(repo, items, max(known) if known else None)

    def permission(self, repo: str, login: str) -> str:
        """`admin`, `maintain`, `write`, `triage`, `read` or `none` for `login` on `repo`."""
        try:
            data = self._http.get(f"/repos/{repo}/collaborators/{quote(login, safe='')}/permission")
        except NotFound:
            return "none"
        return str(data.get("role_name") or data.get("permission") or "none")

    def collaborators(self, repo: str) -> list[tuple[str, str]] | None:
        """(login, role) of every collaborator of `repo`; None when GitHub does not let us
        list them (403/404: e.g. no push access, or a server without the endpoint)."""
        try:
            items = self._http.pages(f"/repos/{repo}/collaborators", {"affiliation": "all"})
        except (NotFound, Forbidden):
            return None
        out = []
        for c in items:
            role = c.get("role_name")
            if not role:
                perms = c.get("permissions") or {}
                role = next((name for key, name in _ROLES if perms.get(key)), "none")
            out.append((_login(c), str(role)))
        return out

    def commit_parents(self, repo: str, sha: str) -> tuple[str, ...]:
        """The parent shas of a commit (immutable: served from the sha cache after one read)."""
        key = (repo, sha)
        cached = self._caches.parents.get_(key)
        if cached is not None:
            return cached
        data = self._http.get(f"/repos/{repo}/git/commits/{sha}")
        parents = tuple(str(p["sha"]) for p in data.get("parents") or ())
        self._caches.parents.put(key, parents)
        return parents

    def repo_permissions(self, repo: str, max_age: timedelta | None = None) -> dict[str, bool]:
        """Our permissions on `repo` (`push`, `admin`, …); NotFound when it is not visible.
        `max_age`: an answer read less than that long ago (by this or an earlier process, see
        ``tokencache``) is given without asking."""
        now = self._clock()
        hit = self._seen.at.get(repo.lower())
        if max_age is not None and hit is not None and timedelta(0) <= now - hit[1] < max_age:
            return dict(hit[0])
        perms = dict(self._http.get(f"/repos/{repo}").get("permissions") or {})
        self._seen.at[repo.lower()] = (perms, now)
        return perms

    def rate_limit_core(self) -> dict[str, Any]:
        """The core REST budget: `limit`, `remaining`, `reset` (GET /rate_limit is free)."""
        data = self._http.get("/rate_limit")
        return dict((data.get("resources") or {}).get("core") or data.get("rate") or {})


def _activity(repo: str, it: Mapping[str, Any]) -> IssueActivity | None:
    """A listed issue's activity (None for a PR)."""
    if "pull_request" in it:
        return None
    rollup = it.get("reactions")
    reactions = None
    if isinstance(rollup, dict):
        reactions = tuple(
            sorted(
                (str(k), int(v))
                for k, v in rollup.items()
                if isinstance(v, int) and not isinstance(v, bool)
            )
        )
    return IssueActivity(
        repo=repo,
        number=int(it["number"]),
        state=str(it.get("state", "open")),
        comments=int(it.get("comments") or 0),
        updated_at=_dt(it.get("updated_at")),
        reactions=reactions,
        body=it.get("body") if isinstance(it.get("body"), str) else None,
        title=it.get("title") if isinstance(it.get("title"), str) else None,
    )


def _summary(repo: str, p: dict[str, Any]) -> PRSummary:
    return PRSummary(
        repo=repo,
        number=int(p["number"]),
        head_sha=p["head"]["sha"],
        head_ref=p["head"].get("ref", ""),
        base_ref=p["base"].get("ref", ""),
        author=_login(p.get("user")),
        draft=bool(p.get("draft")),
        labels=tuple(lb["name"] for lb in p.get("labels") or ()),
        state=p.get("state", "open"),
        updated_at=_dt(p.get("updated_at")),
    )


def _runs_mark(data: Any) -> str:
    """The check runs of a commit as a comparable mark (id, name, status, conclusion)."""
    runs = data.get("check_runs") if isinstance(data, dict) else None
    rows = sorted(
        (str(r.get("id")), str(r.get("name")), str(r.get("status")), str(r.get("conclusion")))
        for r in runs or ()
        if isinstance(r, dict)
    )
    total = data.get("total_count") if isinstance(data, dict) else None
    return json.dumps([total, rows])


def _status_mark(data: Any) -> str:
    """A commit's combined status as a comparable mark (state, and each context's state)."""
    if not isinstance(data, dict):
        return json.dumps(None)
    rows = sorted(
        (str(s.get("context")), str(s.get("state")), str(s.get("updated_at")))
        for s in data.get("statuses") or ()
        if isinstance(s, dict)
    )
    return json.dumps([data.get("state"), data.get("total_count"), rows])


def _change_mark(item: Mapping[str, Any]) -> str:
    """What moves when a listed PR or issue changes: its update time, head, state, comment
    count and reaction rollup (a reaction does not move GitHub's `updated_at`)."""
    head = item.get("head")
    return json.dumps(
        [
            item.get("updated_at"),
            head.get("sha") if isinstance(head, dict) else None,
            item.get("state"),
            item.get("comments"),
            item.get("reactions"),
        ],
        sort_keys=True,
        default=str,
    )


def _poll_interval(headers: Mapping[str, Any]) -> int | None:
    """`X-Poll-Interval` in seconds (None when absent or not a whole number of seconds)."""
    for key, value in headers.items():
        if key.lower() == "x-poll-interval":
            text = str(value).strip()
            return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else None
    return None

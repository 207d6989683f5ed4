"""Resolvers for the part of GitHub's GraphQL schema capdaemon uses, over the REST backend's state.

Every served field is listed in ``FIELDS``; a field not listed is refused before execution
(see ``cost.plan_query``), so no query ever gets a silent null for a field the sandbox
does not know how to answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from graphql import GraphQLError, GraphQLResolveInfo, GraphQLSchema

from ..auth import Identity, require
from ..core import Backend
from ..errors import SandboxApiError
from ..http import Bucket
from ..protection import SUCCESSFUL
from .nodes import (
    ActorN,
    CheckRunN,
    CommentN,
    CommitN,
    Conn,
    IssueN,
    PullCommitN,
    PullN,
    ReactionN,
    Repo,
    RollupN,
    StatusN,
    SuiteN,
    cursor,
    page,
)
from .refs import REF_FIELDS, commit_file, repo_object, repo_ref
from .schema import github_schema

REST_TO_REACTION = {
    "+1": "THUMBS_UP",
    "-1": "THUMBS_DOWN",
    "laugh": "LAUGH",
    "confused": "CONFUSED",
    "heart": "HEART",
    "hooray": "HOORAY",
    "rocket": "ROCKET",
    "eyes": "EYES",
}
REACTION_TO_REST = {v: k for k, v in REST_TO_REACTION.items()}
FAILING = ("failure", "cancelled", "timed_out", "action_required", "startup_failure", "stale")


@dataclass
class GqlContext:
    """Per-request state the resolvers read: the backend, the caller, the priced cost."""

    b: Backend
    ident: Identity
    bucket: Bucket
    cost: int
    nodes: int


def _ctx(info: GraphQLResolveInfo) -> GqlContext:
    ctx = info.context
    assert isinstance(ctx, GqlContext)
    return ctx


def _actor(b: Backend, login: str | None) -> ActorN | None:
    if not login:
        return None
    return ActorN(login, b.data["users"].get(login) or {})


def _not_found(message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"type": "NOT_FOUND"})


# -- resolvers ---------------------------------------------------------------------------------


def q_repository(_obj: Any, info: GraphQLResolveInfo, owner: str, name: str, **_: Any) -> Repo:
    """``Query.repository``: NOT_FOUND unless the caller may read it."""
    ctx = _ctx(info)
    full = f"{owner}/{name}"
    try:
        require(ctx.b, ctx.ident, full, "read")
        rec = ctx.b.repo(full)
    except SandboxApiError as exc:
        if exc.status == 403:
            raise GraphQLError(exc.message, extensions={"type": "FORBIDDEN"}) from None
        raise _not_found(f"Could not resolve to a Repository with the name '{full}'.") from None
    return Repo(str(rec.get("full_name") or full))


def q_rate_limit(_obj: Any, info: GraphQLResolveInfo, **_: Any) -> GqlContext:
    """``Query.rateLimit``: this query's cost and the caller's GraphQL window after it."""
    return _ctx(info)


def rate_field(name: str) -> Callable[..., Any]:
    """A ``RateLimit`` field."""

    def resolve(ctx: GqlContext, _info: GraphQLResolveInfo, **_: Any) -> Any:
        bk = ctx.bucket
        return {
            "cost": ctx.cost,
            "limit": bk.limit,
            "nodeCount": ctx.nodes,
            "remaining": max(0, bk.limit - bk.used),
            "resetAt": datetime.fromtimestamp(bk.reset, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "used": min(bk.used, bk.limit),
        }[name]

    return resolve


def repo_issue(repo: Repo, info: GraphQLResolveInfo, number: int) -> IssueN:
    """``Repository.issue``: NOT_FOUND for a PR number, as on GitHub."""
    rec = _ctx(info).b.repo(repo.full)["issues"].get(str(number))
    if rec is None or rec.get("pull"):
        raise _not_found(f"Could not resolve to an Issue with the number of {number}.")
    return IssueN(repo.full, rec)


def repo_pull(repo: Repo, info: GraphQLResolveInfo, number: int) -> PullN:
    """``Repository.pullRequest``."""
    rec = _ctx(info).b.repo(repo.full)["issues"].get(str(number))
    if rec is None or not rec.get("pull"):
        raise _not_found(f"Could not resolve to a PullRequest with the number of {number}.")
    return PullN(repo.full, rec)


def repo_issue_or_pull(repo: Repo, info: GraphQLResolveInfo, number: int) -> IssueN | PullN:
    """``Repository.issueOrPullRequest``."""
    rec = _ctx(info).b.repo(repo.full)["issues"].get(str(number))
    if rec is None:
        raise _not_found(
            f"Could not resolve to an issue or pull request with the number of {number}."
        )
    return PullN(repo.full, rec) if rec.get("pull") else IssueN(repo.full, rec)


def _pr_state(rec: dict[str, Any]) -> str:
    if rec["pull"].get("merged"):
        return "MERGED"
    return "OPEN" if rec["state"] == "open" else "CLOSED"


def repo_pulls(repo: Repo, info: GraphQLResolveInfo, **args: Any) -> Conn:
    """``Repository.pullRequests`` (states, labels, baseRefName, headRefName, orderBy)."""
    recs = [r for r in _ctx(info).b.repo(repo.full)["issues"].values() if r.get("pull")]
    states = args.get("states")
    if states:
        recs = [r for r in recs if _pr_state(r) in states]
    labels = args.get("labels")
    if labels:
        want = {x.lower() for x in labels}
        recs = [r for r in recs if want & {x.lower() for x in r["labels"]}]
    if args.get("baseRefName"):
        recs = [r for r in recs if r["pull"]["base_ref"] == args["baseRefName"]]
    if args.get("headRefName"):
        recs = [r for r in recs if r["pull"]["head_ref"] == args["headRefName"]]
    order = args.get("orderBy") or {}
    key = {"UPDATED_AT": "updated_at", "COMMENTS": "comment_ids"}.get(
        str(order.get("field")), "created_at"
    )
    if key == "comment_ids":
        recs.sort(key=lambda r: (len(r["comment_ids"]), r["number"]))
    else:
        recs.sort(key=lambda r: (r[key], r["number"]))
    if order.get("direction") == "DESC":
        recs.reverse()
    return page([PullN(repo.full, r) for r in recs], args, "pullRequests")


def issue_comments(issue: IssueN | PullN, info: GraphQLResolveInfo, **args: Any) -> Conn:
    """``Issue.comments`` / ``PullRequest.comments``, oldest first."""
    b = _ctx(info).b
    items = [CommentN(issue.full, b.comment(issue.full, cid)) for cid in issue.rec["comment_ids"]]
    return page(items, args, "comments")


def _reactions(info: GraphQLResolveInfo, full: str, subject: str, target: int, args: Any) -> Conn:
    rs = _ctx(info).b.reactions(full, subject, target)
    content = args.get("content")
    if content:
        rs = [r for r in rs if r["content"] == REACTION_TO_REST.get(content)]
    return page([ReactionN(r) for r in rs], args, "reactions")


def issue_reactions(issue: IssueN | PullN, info: GraphQLResolveInfo, **args: Any) -> Conn:
    """``Issue.reactions``, oldest first (``content`` filter)."""
    return _reactions(info, issue.full, "issue", int(issue.rec["number"]), args)


def comment_reactions(c: CommentN, info: GraphQLResolveInfo, **args: Any) -> Conn:
    """``IssueComment.reactions``."""
    return _reactions(info, c.full, "comment", int(c.c["id"]), args)


def issue_labels(issue: IssueN | PullN, info: GraphQLResolveInfo, **args: Any) -> Conn:
    """``labels`` of an issue or PR, in the order they were added."""
    b = _ctx(info).b
    out = []
    for name in issue.rec["labels"]:
        lab = b.label(issue.full, name) or {"name": name, "color": "ededed"}
        out.append(lab)
    return page(out, args, "labels")


def issue_author(issue: IssueN | PullN, info: GraphQLResolveInfo) -> ActorN | None:
    """The author of an issue or PR."""
    return _actor(_ctx(info).b, issue.rec["user"])


def pull_mergeable(pr: PullN, info: GraphQLResolveInfo) -> str:
    """``PullRequest.mergeable`` as a REST read of the PR shows it: the same git merge, and
    UNKNOWN while GitHub would still be computing it in the background (each query counts
    as one read of the PR, like a REST GET)."""
    mergeable, _state = _ctx(info).b.observed_mergeability(pr.full, pr.rec)
    return "UNKNOWN" if mergeable is None else "MERGEABLE" if mergeable else "CONFLICTING"


def pull_changed_files(pr: PullN, info: GraphQLResolveInfo) -> int:
    """``PullRequest.changedFiles``: the files changed since the merge base (REST's
    ``changed_files``)."""
    p = pr.rec["pull"]
    g = _ctx(info).b.git(pr.full)
    mb = g.merge_base(p["base_sha"], p["head_sha"]) or p["base_sha"]
    return len(g.diff_files(mb, p["head_sha"]))


def pull_commits(pr: PullN, info: GraphQLResolveInfo, **args: Any) -> Conn:
    """``PullRequest.commits``: the commits between the base and the head, oldest first."""
    b = _ctx(info).b
    p = pr.rec["pull"]
    head = p["head_sha"]
    if args.get("last") == 1 and args.get("before") is None and args.get("after") is None:
        mb = b.git(pr.full).merge_base(p["base_sha"], head) or p["base_sha"]
        total = max(1, b.git(pr.full).count_range(mb, head))
        conn = Conn([PullCommitN(CommitN(pr.full, head))], total - 1, total, total > 1, False)
        conn.edges = [(conn.items[0], cursor(total - 1))]
        return conn
    infos = b.git(pr.full).log_range([f"{p['base_sha']}..{head}"], reverse=True) or []
    shas = [c.sha for c in infos] or [head]
    return page([PullCommitN(CommitN(pr.full, s)) for s in shas], args, "commits")


def commit_rollup(c: CommitN, info: GraphQLResolveInfo) -> RollupN | None:
    """``Commit.statusCheckRollup``: null when the commit has no checks and no statuses."""
    b = _ctx(info).b
    latest: dict[tuple[int, str], dict[str, Any]] = {}
    for r in b.check_runs_for(c.full, c.sha):  # newest first
        latest.setdefault((int(r["app_id"]), str(r["name"])), r)
    statuses = b.latest_statuses(c.full, c.sha)
    if not latest and not statuses:
        return None
    runs = sorted(latest.values(), key=lambda r: int(r["id"]))
    return RollupN(c.full, c.sha, runs, sorted(statuses, key=lambda s: int(s["id"])))


def rollup_state(ro: RollupN, _info: GraphQLResolveInfo) -> str:
    """The combined state: any failure → FAILURE (ERROR for errored statuses), any pending →
    PENDING, else SUCCESS."""
    if any(r["status"] == "completed" and r["conclusion"] in FAILING for r in ro.runs):
        return "FAILURE"
    if any(s["state"] == "failure" for s in ro.statuses):
        return "FAILURE"
    if any(s["state"] == "error" for s in ro.statuses):
        return "ERROR"
    if any(r["status"] != "completed" for r in ro.runs) or any(
        s["state"] == "pending" for s in ro.statuses
    ):
        return "PENDING"
    if any(r["conclusion"] not in SUCCESSFUL for r in ro.runs):
        return "FAILURE"
    return "SUCCESS"


def rollup_contexts(ro: RollupN, _info: GraphQLResolveInfo, **args: Any) -> Conn:
    """Check runs first, then statuses."""
    items: list[Any] = [CheckRunN(ro.full, r) for r in ro.runs]
    items += [StatusN(s) for s in ro.statuses]
    return page(items, args, "contexts")


def run_suite(run: CheckRunN, info: GraphQLResolveInfo) -> SuiteN:
    """A check run's suite with its app."""
    app = _ctx(info).b.data["apps"].get(str(run.r["app_id"]))
    return SuiteN(app, int(run.r.get("check_suite_id") or 0))


def status_creator(st: StatusN, info: GraphQLResolveInfo) -> ActorN | None:
    """Who set a commit status."""
    return _actor(_ctx(info).b, st.s.get("creator"))


def comment_author(c: CommentN, info: GraphQLResolveInfo) -> ActorN | None:
    """A comment's author."""
    return _actor(_ctx(info).b, c.c["user"])


def comment_editor(c: CommentN, info: GraphQLResolveInfo) -> ActorN | None:
    """Who last edited the comment (null when never edited)."""
    return _actor(_ctx(info).b, c.c.get("edited_by"))


def reaction_user(r: ReactionN, info: GraphQLResolveInfo) -> ActorN | None:
    """``Reaction.user`` is a User: null for a bot's reaction, as on GitHub."""
    actor = _actor(_ctx(info).b, r.r["user"])
    return actor if actor is not None and actor.typename == "User" else None


def _get(fn: Callable[[Any], Any]) -> Callable[..., Any]:
    def resolve(obj: Any, _info: GraphQLResolveInfo, **_: Any) -> Any:
        return fn(obj)

    return resolve


def _upper(value: str | None) -> str | None:
    return value.upper() if value else None


def _conn_fields() -> dict[str, Callable[..., Any]]:
    return {
        "nodes": _get(lambda c: c.items),
        "edges": _get(lambda c: c.edges),
        "pageInfo": _get(lambda c: c),
        "totalCount": _get(lambda c: c.total),
    }


_EDGE = {"node": _get(lambda e: e[0]), "cursor": _get(lambda e: e[1])}
_ISSUE_COMMON: dict[str, Callable[..., Any]] = {
    "number": _get(lambda i: int(i.rec["number"])),
    "databaseId": _get(lambda i: int(i.rec["id"])),
    "title": _get(lambda i: i.rec["title"]),
    "body": _get(lambda i: i.rec["body"] or ""),
    "createdAt": _get(lambda i: i.rec["created_at"]),
    "updatedAt": _get(lambda i: i.rec["updated_at"]),
    "closedAt": _get(lambda i: i.rec["closed_at"]),
    "author": issue_author,
    "labels": issue_labels,
    "comments": issue_comments,
    "reactions": issue_reactions,
}
_ACTOR_LOGIN = {"login": _get(lambda a: a.login.removesuffix("[bot]"))}
_ACCOUNT = {**_ACTOR_LOGIN, "databaseId": _get(lambda a: a.account.get("id"))}

FIELDS: dict[str, dict[str, Callable[..., Any]]] = {
    "Query": {"repository": q_repository, "rateLimit": q_rate_limit},
    "RateLimit": {
        n: rate_field(n) for n in ("cost", "limit", "nodeCount", "remaining", "resetAt", "used")
    },
    "Repository": {
        "nameWithOwner": _get(lambda r: r.full),
        "name": _get(lambda r: r.full.split("/", 1)[1]),
        "issue": repo_issue,
        "pullRequest": repo_pull,
        "issueOrPullRequest": repo_issue_or_pull,
        "pullRequests": repo_pulls,
        "ref": repo_ref,
        "object": repo_object,
    },
    "Issue": {**_ISSUE_COMMON, "state": _get(lambda i: i.rec["state"].upper())},
    "PullRequest": {
        **_ISSUE_COMMON,
        "state": _get(lambda p: _pr_state(p.rec)),
        "isDraft": _get(lambda p: bool(p.rec["pull"]["draft"])),
        "headRefOid": _get(lambda p: p.rec["pull"]["head_sha"]),
        "baseRefOid": _get(lambda p: p.rec["pull"]["base_sha"]),
        "headRefName": _get(lambda p: p.rec["pull"]["head_ref"]),
        "baseRefName": _get(lambda p: p.rec["pull"]["base_ref"]),
        "merged": _get(lambda p: bool(p.rec["pull"].get("merged"))),
        "mergeCommit": _get(
            lambda p: (
                CommitN(p.full, p.rec["pull"]["merge_commit_sha"])
                if p.rec["pull"].get("merge_commit_sha")
                else None
            )
        ),
        "mergeable": pull_mergeable,
        "changedFiles": pull_changed_files,
        "commits": pull_commits,
    },
    "IssueComment": {
        "databaseId": _get(lambda c: int(c.c["id"])),
        "body": _get(lambda c: c.c["body"]),
        "author": comment_author,
        "editor": comment_editor,
        "createdAt": _get(lambda c: c.c["created_at"]),
        "updatedAt": _get(lambda c: c.c["updated_at"]),
        "lastEditedAt": _get(lambda c: c.c.get("last_edited_at")),
        "includesCreatedEdit": _get(lambda c: bool(c.c.get("last_edited_at"))),
        "reactions": comment_reactions,
    },
    "Reaction": {
        "databaseId": _get(lambda r: int(r.r["id"])),
        "content": _get(lambda r: REST_TO_REACTION[r.r["content"]]),
        "createdAt": _get(lambda r: r.r["created_at"]),
        "user": reaction_user,
    },
    "Label": {"name": _get(lambda lab: lab["name"]), "color": _get(lambda lab: lab["color"])},
    "Actor": dict(_ACTOR_LOGIN),
    "User": dict(_ACCOUNT),
    "Bot": dict(_ACCOUNT),
    "PullRequestCommit": {"commit": _get(lambda pc: pc.commit)},
    "Commit": {
        "oid": _get(lambda c: c.sha),
        "statusCheckRollup": commit_rollup,
        "file": commit_file,
    },
    "StatusCheckRollup": {"state": rollup_state, "contexts": rollup_contexts},
    "CheckRun": {
        "databaseId": _get(lambda r: int(r.r["id"])),
        "name": _get(lambda r: r.r["name"]),
        "status": _get(lambda r: r.r["status"].upper()),
        "conclusion": _get(lambda r: _upper(r.r["conclusion"])),
        "startedAt": _get(lambda r: r.r.get("started_at")),
        "completedAt": _get(lambda r: r.r.get("completed_at")),
        "title": _get(lambda r: r.r["output"].get("title")),
        "summary": _get(lambda r: r.r["output"].get("summary")),
        "text": _get(lambda r: r.r["output"].get("text")),
        "checkSuite": run_suite,
    },
    "CheckSuite": {"app": _get(lambda s: s.app), "databaseId": _get(lambda s: s.suite_id)},
    "App": {
        "databaseId": _get(lambda a: int(a["id"])),
        "slug": _get(lambda a: a["slug"]),
        "name": _get(lambda a: a.get("name") or a["slug"]),
    },
    "StatusContext": {
        "context": _get(lambda s: s.s["context"]),
        "state": _get(lambda s: s.s["state"].upper()),
        "description": _get(lambda s: s.s.get("description")),
        "targetUrl": _get(lambda s: s.s.get("target_url")),
        "createdAt": _get(lambda s: s.s["created_at"]),
        "creator": status_creator,
    },
    "PageInfo": {
        "hasNextPage": _get(lambda c: c.has_next),
        "hasPreviousPage": _get(lambda c: c.has_prev),
        "endCursor": _get(lambda c: c.edges[-1][1] if c.edges else None),
        "startCursor": _get(lambda c: c.edges[0][1] if c.edges else None),
    },
}
for _item in (
    "IssueComment",
    "Reaction",
    "PullRequest",
    "Label",
    "PullRequestCommit",
    "StatusCheckRollupContext",
    "RepositoryRule",
):
    FIELDS[f"{_item}Connection"] = _conn_fields()
    FIELDS[f"{_item}Edge"] = dict(_EDGE)


FIELDS.update(REF_FIELDS)


def served(type_name: str, field_name: str) -> bool:
    """Does the sandbox answer ``type_name.field_name``?"""
    return field_name in FIELDS.get(type_name, {})


_attach_lock = threading.Lock()
_attached: list[GraphQLSchema] = []


def served_schema() -> GraphQLSchema:
    """GitHub's schema with the sandbox's resolvers attached (once per process)."""
    schema = github_schema()
    with _attach_lock:
        if _attached:
            return schema
        for type_name, fields in FIELDS.items():
            gtype = schema.get_type(type_name)
            own = getattr(gtype, "fields", None)
            if own is None:
                raise RuntimeError(f"sandbox resolver table names unknown type {type_name}")
            for name, fn in fields.items():
                if name not in own:
                    raise RuntimeError(
                        f"sandbox resolver table names unknown field {type_name}.{name}"
                    )
                own[name].resolve = fn
        _attached.append(schema)
    return schema


def type_of(value: Any, _info: GraphQLResolveInfo, _abstract: Any) -> str:
    """The concrete type of an interface or union value (each wrapper knows its own)."""
    return str(value.typename)

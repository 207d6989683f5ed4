"""REST handlers for issues, comments, reactions, labels and issue events."""

from __future__ import annotations

from typing import Any

from . import render, render_objects
from .api_labels import label_names
from .api_repos import full_name
from .auth import app_allows, repo_permission
from .backend.accounts import PERMISSION_RANK
from .backend.issues import REACTIONS
from .clock import parse_iso
from .errors import SandboxApiError, filter_state, not_found, sort_items, validation
from .routing import Ctx, Paged, Result, RouteList, field_of

ROUTES = RouteList()
route = ROUTES.route


def _issue(ctx: Ctx, full: str, number: int) -> dict[str, Any]:
    return ctx.b.issue(full, number)


def _can_triage(ctx: Ctx, full: str) -> bool:
    role = repo_permission(ctx.b, ctx.ident, full)
    return PERMISSION_RANK[role] >= PERMISSION_RANK["triage"] and app_allows(
        ctx.b, ctx.ident, "issues", "write"
    )


def _need_writer(ctx: Ctx, full: str) -> None:
    """Readers may comment, react and open issues (installations need issues:write)."""
    if ctx.ident.kind == "anonymous":
        raise SandboxApiError(401, "Requires authentication")
    ctx.require(full, "read", "issues" if ctx.ident.kind == "installation" else None)
    if not app_allows(ctx.b, ctx.ident, "issues", "write"):
        raise SandboxApiError(403, "Resource not accessible by integration")


# -- issues --------------------------------------------------------------------------------


@route("GET", "/repos/<owner>/<repo>/issues")
def list_issues(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/issues (PRs included, with a ``pull_request`` key)."""
    full = full_name(ctx, owner, repo)
    args = ctx.req.args
    items = filter_state(
        list(ctx.b.repo(full)["issues"].values()), args.get("state", "open"), "Issue"
    )
    if args.get("labels"):
        wanted = {w.strip().lower() for w in args["labels"].split(",") if w.strip()}
        items = [i for i in items if wanted <= {n.lower() for n in i["labels"]}]
    if args.get("creator"):
        items = [i for i in items if i["user"] == args["creator"]]
    if args.get("assignee") and args["assignee"] != "*":
        if args["assignee"] == "none":
            items = [i for i in items if not i["assignees"]]
        else:
            items = [i for i in items if args["assignee"] in i["assignees"]]
    if args.get("since"):
        try:
            since = parse_iso(args["since"])
        except ValueError as exc:
            raise validation("Issue", "since", "invalid") from exc
        items = [i for i in items if parse_iso(i["updated_at"]) >= since]
    keys = {
        "created": lambda i: (i["created_at"], i["number"]),
        "updated": lambda i: (i["updated_at"], i["number"]),
        "comments": lambda i: (len(i["comment_ids"]), i["number"]),
    }
    reverse = args.get("direction", "desc") != "asc"
    sort_items(items, keys, args.get("sort", "created"), reverse, "Issue")
    return Paged(items, lambda i: render.issue(ctx.b, ctx.urls, full, i, ctx.cache))


@route("GET", "/repos/<owner>/<repo>/issues/<int:number>")
def get_issue(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """GET /repos/{owner}/{repo}/issues/{number}."""
    full = full_name(ctx, owner, repo)
    return Result(200, render.issue(ctx.b, ctx.urls, full, _issue(ctx, full, number)))


@route("POST", "/repos/<owner>/<repo>/issues")
def create_issue(ctx: Ctx, owner: str, repo: str) -> Result:
    """POST /repos/{owner}/{repo}/issues."""
    full = full_name(ctx, owner, repo)
    _need_writer(ctx, full)
    body = ctx.body()
    title = field_of(body, "title", (str, int), "Issue", required=True)
    text = field_of(body, "body", str, "Issue")
    labels = label_names(body["labels"]) if body.get("labels") is not None else []
    assignees = field_of(body, "assignees", list, "Issue", default=[])
    if body.get("assignee"):
        assignees = [*assignees, field_of(body, "assignee", str, "Issue")]
    for a in assignees:
        if not isinstance(a, str) or a not in ctx.b.data["users"]:
            raise validation("Issue", "assignees", "invalid")
    if not _can_triage(ctx, full):
        labels, assignees = [], []
    rec = ctx.b.create_issue(full, str(title), text, ctx.actor, labels=labels, assignees=assignees)
    return Result(201, render.issue(ctx.b, ctx.urls, full, rec))


@route("PATCH", "/repos/<owner>/<repo>/issues/<int:number>")
def update_issue(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """PATCH /repos/{owner}/{repo}/issues/{number} (title, body, state, labels, ...)."""
    full = full_name(ctx, owner, repo)
    _need_writer(ctx, full)
    body = ctx.body()
    with ctx.b.lock:
        rec = _issue(ctx, full, number)
        triage = _can_triage(ctx, full)
        if not triage and rec["user"] != ctx.actor:
            raise SandboxApiError(403, "Must have triage access to update issues of others.")
        title = field_of(body, "title", (str, int), "Issue")
        text = field_of(body, "body", str, "Issue")
        state = field_of(body, "state", str, "Issue", choices=("open", "closed"))
        reason = field_of(
            body, "state_reason", str, "Issue", choices=("completed", "not_planned", "reopened")
        )
        if title is not None:
            rec["title"] = str(title)
        if "body" in body:
            rec["body"] = text
        if "labels" in body and triage:
            names = label_names(body["labels"] or [])
            for old in list(rec["labels"]):
                if old.lower() not in {n.lower() for n in names}:
                    ctx.b.remove_label(full, number, old, ctx.actor)
            ctx.b.add_labels(full, number, names, ctx.actor, save=False)
        if "assignees" in body and triage:
            assignees = field_of(body, "assignees", list, "Issue", default=[])
            rec["assignees"] = [
                a for a in assignees if isinstance(a, str) and a in ctx.b.data["users"]
            ]
        if state is not None:
            ctx.b.set_state(full, number, state, ctx.actor, reason)
        elif reason is not None and rec["state"] == "closed":
            rec["state_reason"] = reason
        rec["updated_at"] = ctx.b.now()
        ctx.b.store.save()
    return Result(200, render.issue(ctx.b, ctx.urls, full, rec))


# -- comments ------------------------------------------------------------------------------


@route("GET", "/repos/<owner>/<repo>/issues/<int:number>/comments")
def list_comments(ctx: Ctx, owner: str, repo: str, number: int) -> Paged:
    """GET /repos/{owner}/{repo}/issues/{number}/comments (oldest first, ``since`` filter)."""
    full = full_name(ctx, owner, repo)
    rec = _issue(ctx, full, number)
    comments = [ctx.b.comment(full, cid) for cid in rec["comment_ids"]]
    if ctx.req.args.get("since"):
        try:
            since = parse_iso(ctx.req.args["since"])
        except ValueError as exc:
            raise validation("IssueComment", "since", "invalid") from exc
        comments = [c for c in comments if parse_iso(c["updated_at"]) >= since]
    return Paged(comments, lambda c: render_objects.comment(ctx.b, ctx.urls, full, c, ctx.cache))


@route("GET", "/repos/<owner>/<repo>/issues/comments")
def list_repo_comments(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/issues/comments."""
    full = full_name(ctx, owner, repo)
    comments = list(ctx.b.repo(full)["comments"].values())
    return Paged(comments, lambda c: render_objects.comment(ctx.b, ctx.urls, full, c, ctx.cache))


@route("POST", "/repos/<owner>/<repo>/issues/<int:number>/comments")
def create_comment(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """POST /repos/{owner}/{repo}/issues/{number}/comments."""
    full = full_name(ctx, owner, repo)
    _need_writer(ctx, full)
    body = ctx.body()
    text = field_of(body, "body", str, "IssueComment", required=True)
    rec = _issue(ctx, full, number)
    if rec["locked"] and not _can_triage(ctx, full):
        raise SandboxApiError(403, "Unable to create comment because issue is locked.")
    c = ctx.b.add_comment(full, number, text, ctx.actor)
    return Result(201, render_objects.comment(ctx.b, ctx.urls, full, c))


@route("GET", "/repos/<owner>/<repo>/issues/comments/<int:comment_id>")
def get_comment(ctx: Ctx, owner: str, repo: str, comment_id: int) -> Result:
    """GET /repos/{owner}/{repo}/issues/comments/{id}."""
    full = full_name(ctx, owner, repo)
    return Result(
        200, render_objects.comment(ctx.b, ctx.urls, full, ctx.b.comment(full, comment_id))
    )


@route("PATCH", "/repos/<owner>/<repo>/issues/comments/<int:comment_id>")
def edit_comment(ctx: Ctx, owner: str, repo: str, comment_id: int) -> Result:
    """PATCH /repos/{owner}/{repo}/issues/comments/{id} (the author, or write access)."""
    full = full_name(ctx, owner, repo)
    _need_writer(ctx, full)
    body = ctx.body()
    text = field_of(body, "body", str, "IssueComment", required=True)
    with ctx.b.lock:
        c = ctx.b.comment(full, comment_id)
        if c["user"] != ctx.actor and PERMISSION_RANK[repo_permission(ctx.b, ctx.ident, full)] < 3:
            raise SandboxApiError(403, "Resource not accessible by personal access token")
        now = ctx.b.now()
        if text != c["body"]:  # GitHub's edit record (GraphQL lastEditedAt, editor)
            c["last_edited_at"] = now
            c["edited_by"] = ctx.actor
        c["body"] = text
        c["updated_at"] = now
        ctx.b.store.save()
    return Result(200, render_objects.comment(ctx.b, ctx.urls, full, c))


@route("DELETE", "/repos/<owner>/<repo>/issues/comments/<int:comment_id>")
def delete_comment(ctx: Ctx, owner: str, repo: str, comment_id: int) -> Result:
    """DELETE /repos/{owner}/{repo}/issues/comments/{id}."""
    full = full_name(ctx, owner, repo)
    _need_writer(ctx, full)
    with ctx.b.lock:
        c = ctx.b.comment(full, comment_id)
        if c["user"] != ctx.actor and PERMISSION_RANK[repo_permission(ctx.b, ctx.ident, full)] < 3:
            raise SandboxApiError(403, "Resource not accessible by personal access token")
        repo_rec = ctx.b.repo(full)
        del repo_rec["comments"][str(comment_id)]
        repo_rec["issues"][str(c["issue"])]["comment_ids"].remove(c["id"])
        ctx.b.store.save()
    return Result(204, None)


# -- reactions -----------------------------------------------------------------------------


def _reactions(ctx: Ctx, full: str, subject: str, target: int) -> Paged:
    rs = ctx.b.reactions(full, subject, target)
    content = ctx.req.args.get("content")
    if content:
        if content not in REACTIONS:
            raise validation("Reaction", "content", "invalid")
        rs = [r for r in rs if r["content"] == content]
    return Paged(rs, lambda r: render_objects.reaction(ctx.b, ctx.urls, r))


def _react(ctx: Ctx, full: str, subject: str, target: int) -> Result:
    _need_writer(ctx, full)
    body = ctx.body()
    content = field_of(body, "content", str, "Reaction", required=True, choices=REACTIONS)
    r, created = ctx.b.add_reaction(full, subject, target, content, ctx.actor)
    return Result(201 if created else 200, render_objects.reaction(ctx.b, ctx.urls, r))


@route("GET", "/repos/<owner>/<repo>/issues/<int:number>/reactions")
def list_issue_reactions(ctx: Ctx, owner: str, repo: str, number: int) -> Paged:
    """GET /repos/{owner}/{repo}/issues/{number}/reactions."""
    full = full_name(ctx, owner, repo)
    _issue(ctx, full, number)
    return _reactions(ctx, full, "issue", number)


@route("POST", "/repos/<owner>/<repo>/issues/<int:number>/reactions")
def create_issue_reaction(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """POST /repos/{owner}/{repo}/issues/{number}/reactions (201 new, 200 already there)."""
    full = full_name(ctx, owner, repo)
    _issue(ctx, full, number)
    return _react(ctx, full, "issue", number)


@route("GET", "/repos/<owner>/<repo>/issues/comments/<int:comment_id>/reactions")
def list_comment_reactions(ctx: Ctx, owner: str, repo: str, comment_id: int) -> Paged:
    """GET /repos/{owner}/{repo}/issues/comments/{id}/reactions."""
    full = full_name(ctx, owner, repo)
    ctx.b.comment(full, comment_id)
    return _reactions(ctx, full, "comment", comment_id)


@route("POST", "/repos/<owner>/<repo>/issues/comments/<int:comment_id>/reactions")
def create_comment_reaction(ctx: Ctx, owner: str, repo: str, comment_id: int) -> Result:
    """POST /repos/{owner}/{repo}/issues/comments/{id}/reactions."""
    full = full_name(ctx, owner, repo)
    ctx.b.comment(full, comment_id)
    return _react(ctx, full, "comment", comment_id)


def _delete_reaction(ctx: Ctx, full: str, subject: str, target: int, reaction_id: int) -> Result:
    _need_writer(ctx, full)
    with ctx.b.lock:
        rs = ctx.b.repo(full)["reactions"]
        r = next(
            (
                r
                for r in rs
                if r["id"] == reaction_id and r["subject"] == subject and r["target"] == target
            ),
            None,
        )
        if r is None:
            raise not_found()
        if r["user"] != ctx.actor:
            raise SandboxApiError(403, "Resource not accessible by personal access token")
        rs.remove(r)
        ctx.b.store.save()
    return Result(204, None)


@route("DELETE", "/repos/<owner>/<repo>/issues/<int:number>/reactions/<int:reaction_id>")
def delete_issue_reaction(ctx: Ctx, owner: str, repo: str, number: int, reaction_id: int) -> Result:
    """DELETE /repos/{owner}/{repo}/issues/{number}/reactions/{id}."""
    return _delete_reaction(ctx, full_name(ctx, owner, repo), "issue", number, reaction_id)


@route(
    "DELETE", "/repos/<owner>/<repo>/issues/comments/<int:comment_id>/reactions/<int:reaction_id>"
)
def delete_comment_reaction(
    ctx: Ctx, owner: str, repo: str, comment_id: int, reaction_id: int
) -> Result:
    """DELETE /repos/{owner}/{repo}/issues/comments/{id}/reactions/{id}."""
    return _delete_reaction(ctx, full_name(ctx, owner, repo), "comment", comment_id, reaction_id)


# -- labels and events ---------------------------------------------------------------------


@route("GET", "/repos/<owner>/<repo>/issues/<int:number>/events")
def list_issue_events(ctx: Ctx, owner: str, repo: str, number: int) -> Paged:
    """GET /repos/{owner}/{repo}/issues/{number}/events (labeled, unlabeled, closed, ...)."""
    full = full_name(ctx, owner, repo)
    _issue(ctx, full, number)
    events = [e for e in ctx.b.repo(full)["events"] if e["issue"] == number]
    return Paged(events, lambda e: render_objects.event(ctx.b, ctx.urls, full, e))

"""REST handlers for issues, comments, reactions, labels and issue events."""

from __future__ import annotations

from typing import Any

from . import render
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


def _label_names(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise validation("Label", "labels", "invalid")
    out = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            out.append(item["name"])
        else:
            raise validation("Label", "labels", "invalid")
    return out


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
    labels = _label_names(body["labels"]) if body.get("labels") is not None else []
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
            names = _label_names(body["labels"] or [])
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
    return Paged(comments, lambda c: render.comment(ctx.b, ctx.urls, full, c, ctx.cache))


@route("GET", "/repos/<owner>/<repo>/issues/comments")
def list_repo_comments(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/issues/comments."""
    full = full_name(ctx, owner, repo)
    comments = list(ctx.b.repo(full)["comments"].values())
    return Paged(comments, lambda c: render.comment(ctx.b, ctx.urls, full, c, ctx.cache))


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
    return Result(201, render.comment(ctx.b, ctx.urls, full, c))


@route("GET", "/repos/<owner>/<repo>/issues/comments/<int:comment_id>")
def get_comment(ctx: Ctx, owner: str, repo: str, comment_id: int) -> Result:
    """GET /repos/{owner}/{repo}/issues/comments/{id}."""
    full = full_name(ctx, owner, repo)
    return Result(200, render.comment(ctx.b, ctx.urls, full, ctx.b.comment(full, comment_id)))


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
    return Result(200, render.comment(ctx.b, ctx.urls, full, c))


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
    return Paged(rs, lambda r: render.reaction(ctx.b, ctx.urls, r))


def _react(ctx: Ctx, full: str, subject: str, target: int) -> Result:
    _need_writer(ctx, full)
    body = ctx.body()
    content = field_of(body, "content", str, "Reaction", required=True, choices=REACTIONS)
    r, created = ctx.b.add_reaction(full, subject, target, content, ctx.actor)
    return Result(201 if created else 200, render.reaction(ctx.b, ctx.urls, r))


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


def _labels_of(ctx: Ctx, full: str, rec: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for n in rec["labels"]:
        lab = ctx.b.label(full, n)
        if lab:
            out.append(render.label(ctx.urls, full, lab))
    return out


def _label_body(ctx: Ctx) -> list[str]:
    data = ctx.json()
    if isinstance(data, dict):
        if "labels" not in data:
            raise validation("Label", "labels", "missing_field")
        data = data["labels"]
    if data is None:
        raise validation("Label", "labels", "missing_field")
    return _label_names(data)


def _need_triage(ctx: Ctx, full: str) -> None:
    if ctx.ident.kind == "anonymous":
        raise SandboxApiError(401, "Requires authentication")
    ctx.require(full, "triage", "issues")


@route("GET", "/repos/<owner>/<repo>/issues/<int:number>/labels")
def list_issue_labels(ctx: Ctx, owner: str, repo: str, number: int) -> Paged:
    """GET /repos/{owner}/{repo}/issues/{number}/labels."""
    full = full_name(ctx, owner, repo)
    rec = _issue(ctx, full, number)
    return Paged(_labels_of(ctx, full, rec))


@route("POST", "/repos/<owner>/<repo>/issues/<int:number>/labels")
def add_issue_labels(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """POST /repos/{owner}/{repo}/issues/{number}/labels (object or bare array body)."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    names = _label_body(ctx)
    rec = _issue(ctx, full, number)
    ctx.b.add_labels(full, number, names, ctx.actor)
    return Result(200, _labels_of(ctx, full, rec))


@route("PUT", "/repos/<owner>/<repo>/issues/<int:number>/labels")
def set_issue_labels(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """PUT /repos/{owner}/{repo}/issues/{number}/labels (replace the set)."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    names = _label_body(ctx)
    with ctx.b.lock:
        rec = _issue(ctx, full, number)
        for old in list(rec["labels"]):
            if old.lower() not in {n.lower() for n in names}:
                ctx.b.remove_label(full, number, old, ctx.actor)
        ctx.b.add_labels(full, number, names, ctx.actor)
    return Result(200, _labels_of(ctx, full, rec))


@route("DELETE", "/repos/<owner>/<repo>/issues/<int:number>/labels/<path:name>")
def remove_issue_label(ctx: Ctx, owner: str, repo: str, number: int, name: str) -> Result:
    """DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name} → the remaining labels."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    rec = _issue(ctx, full, number)
    ctx.b.remove_label(full, number, name, ctx.actor)
    return Result(200, _labels_of(ctx, full, rec))


@route("DELETE", "/repos/<owner>/<repo>/issues/<int:number>/labels")
def clear_issue_labels(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """DELETE /repos/{owner}/{repo}/issues/{number}/labels."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    with ctx.b.lock:
        rec = _issue(ctx, full, number)
        for old in list(rec["labels"]):
            ctx.b.remove_label(full, number, old, ctx.actor)
    return Result(204, None)


@route("GET", "/repos/<owner>/<repo>/labels")
def list_repo_labels(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/labels."""
    full = full_name(ctx, owner, repo)
    labels = list(ctx.b.repo(full)["labels"].values())
    return Paged(labels, lambda lab: render.label(ctx.urls, full, lab))


@route("POST", "/repos/<owner>/<repo>/labels")
def create_repo_label(ctx: Ctx, owner: str, repo: str) -> Result:
    """POST /repos/{owner}/{repo}/labels."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    body = ctx.body()
    name = field_of(body, "name", str, "Label", required=True)
    color = field_of(body, "color", str, "Label", default="ededed") or "ededed"
    desc = field_of(body, "description", str, "Label")
    if len(color.lstrip("#")) != 6 or any(
        ch not in "0123456789abcdefABCDEF" for ch in color.lstrip("#")
    ):
        raise validation("Label", "color", "invalid")
    lab = ctx.b.create_label(full, name, color, desc)
    return Result(201, render.label(ctx.urls, full, lab))


@route("GET", "/repos/<owner>/<repo>/labels/<path:name>")
def get_repo_label(ctx: Ctx, owner: str, repo: str, name: str) -> Result:
    """GET /repos/{owner}/{repo}/labels/{name}."""
    full = full_name(ctx, owner, repo)
    lab = ctx.b.label(full, name)
    if lab is None:
        raise not_found()
    return Result(200, render.label(ctx.urls, full, lab))


@route("PATCH", "/repos/<owner>/<repo>/labels/<path:name>")
def update_repo_label(ctx: Ctx, owner: str, repo: str, name: str) -> Result:
    """PATCH /repos/{owner}/{repo}/labels/{name} (color, description; renames via new_name)."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    body = ctx.body()
    with ctx.b.lock:
        lab = ctx.b.label(full, name)
        if lab is None:
            raise not_found()
        color = field_of(body, "color", str, "Label")
        desc = field_of(body, "description", str, "Label")
        new_name = field_of(body, "new_name", str, "Label")
        if color:
            lab["color"] = color.lstrip("#")
        if "description" in body:
            lab["description"] = desc
        if new_name and new_name != lab["name"]:
            labels = ctx.b.repo(full)["labels"]
            del labels[lab["name"]]
            for rec in ctx.b.repo(full)["issues"].values():
                rec["labels"] = [new_name if n == lab["name"] else n for n in rec["labels"]]
            lab["name"] = new_name
            labels[new_name] = lab
        ctx.b.store.save()
    return Result(200, render.label(ctx.urls, full, lab))


@route("DELETE", "/repos/<owner>/<repo>/labels/<path:name>")
def delete_repo_label(ctx: Ctx, owner: str, repo: str, name: str) -> Result:
    """DELETE /repos/{owner}/{repo}/labels/{name}."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    with ctx.b.lock:
        lab = ctx.b.label(full, name)
        if lab is None:
            raise not_found()
        del ctx.b.repo(full)["labels"][lab["name"]]
        for rec in ctx.b.repo(full)["issues"].values():
            if lab["name"] in rec["labels"]:
                rec["labels"].remove(lab["name"])
        ctx.b.store.save()
    return Result(204, None)


@route("GET", "/repos/<owner>/<repo>/issues/<int:number>/events")
def list_issue_events(ctx: Ctx, owner: str, repo: str, number: int) -> Paged:
    """GET /repos/{owner}/{repo}/issues/{number}/events (labeled, unlabeled, closed, ...)."""
    full = full_name(ctx, owner, repo)
    _issue(ctx, full, number)
    events = [e for e in ctx.b.repo(full)["events"] if e["issue"] == number]
    return Paged(events, lambda e: render.event(ctx.b, ctx.urls, full, e))

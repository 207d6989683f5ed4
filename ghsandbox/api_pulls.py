"""REST handlers for pull requests: list, get, create, update, files, commits, merge."""

from __future__ import annotations

from typing import Any

from . import render, render_objects
from .api_repos import full_name
from .auth import app_allows, repo_permission
from .backend.accounts import PERMISSION_RANK
from .errors import SandboxApiError, filter_state, not_found, sort_items, validation
from .routing import Ctx, Paged, Result, RouteList, field_of

ROUTES = RouteList()
route = ROUTES.route

MAX_FILES = 3000
MAX_COMMITS = 250


def _pr(ctx: Ctx, full: str, number: int) -> dict[str, Any]:
    rec = ctx.b.issue(full, number)
    if rec["pull"] is None:
        raise not_found()
    return rec


def _need_pr_writer(ctx: Ctx, full: str) -> None:
    if ctx.ident.kind == "anonymous":
        raise SandboxApiError(401, "Requires authentication")
    ctx.require(full, "read")
    if not app_allows(ctx.b, ctx.ident, "pull_requests", "write"):
        raise SandboxApiError(403, "Resource not accessible by integration")


@route("GET", "/repos/<owner>/<repo>/pulls")
def list_pulls(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/pulls (state, head=owner:branch, base, sort, direction)."""
    full = full_name(ctx, owner, repo)
    args = ctx.req.args
    items = filter_state(
        [i for i in ctx.b.repo(full)["issues"].values() if i["pull"] is not None],
        args.get("state", "open"),
        "PullRequest",
    )
    if args.get("head"):
        head = args["head"]
        h_owner, _, h_ref = head.partition(":")
        if not h_ref:
            h_owner, h_ref = full.split("/")[0], head
        items = [
            i
            for i in items
            if i["pull"]["head_ref"] == h_ref and h_owner.lower() == full.split("/")[0].lower()
        ]
    if args.get("base"):
        items = [i for i in items if i["pull"]["base_ref"] == args["base"]]
    sort = args.get("sort", "created")
    keys = {
        "created": lambda i: (i["created_at"], i["number"]),
        "updated": lambda i: (i["updated_at"], i["number"]),
        "popularity": lambda i: (len(i["comment_ids"]), i["number"]),
        "long-running": lambda i: (i["created_at"], i["number"]),
    }
    direction = args.get("direction", "desc" if sort == "created" else "asc")
    sort_items(items, keys, sort, direction == "desc", "PullRequest")
    return Paged(items, lambda i: render.pull(ctx.b, ctx.urls, full, i, ctx.cache, detail=False))


@route("GET", "/repos/<owner>/<repo>/pulls/<int:number>")
def get_pull(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """GET /repos/{owner}/{repo}/pulls/{number} (with mergeable and mergeable_state)."""
    full = full_name(ctx, owner, repo)
    return Result(200, render.pull(ctx.b, ctx.urls, full, _pr(ctx, full, number), ctx.cache))


@route("POST", "/repos/<owner>/<repo>/pulls")
def create_pull(ctx: Ctx, owner: str, repo: str) -> Result:
    """POST /repos/{owner}/{repo}/pulls."""
    full = full_name(ctx, owner, repo)
    _need_pr_writer(ctx, full)
    body = ctx.body()
    head = field_of(body, "head", str, "PullRequest", required=True)
    base = field_of(body, "base", str, "PullRequest", required=True)
    title = field_of(body, "title", str, "PullRequest", required="issue" not in body)
    text = field_of(body, "body", str, "PullRequest")
    draft = field_of(body, "draft", bool, "PullRequest", default=False)
    mcm = field_of(body, "maintainer_can_modify", bool, "PullRequest", default=False)
    if ":" in head and head.split(":", 1)[0].lower() != full.split("/")[0].lower():
        raise validation("PullRequest", "head", "invalid")
    number = ctx.b.open_pr(
        full, head, base, title or "", text, ctx.actor, draft=draft, maintainer_can_modify=mcm
    )
    rec = _pr(ctx, full, number)
    return Result(201, render.pull(ctx.b, ctx.urls, full, rec, ctx.cache, read=False))


@route("PATCH", "/repos/<owner>/<repo>/pulls/<int:number>")
def update_pull(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """PATCH /repos/{owner}/{repo}/pulls/{number} (title, body, state, base)."""
    full = full_name(ctx, owner, repo)
    _need_pr_writer(ctx, full)
    body = ctx.body()
    with ctx.b.lock:
        rec = _pr(ctx, full, number)
        role = repo_permission(ctx.b, ctx.ident, full)
        if rec["user"] != ctx.actor and PERMISSION_RANK[role] < PERMISSION_RANK["write"]:
            raise SandboxApiError(403, "Resource not accessible by personal access token")
        title = field_of(body, "title", str, "PullRequest")
        text = field_of(body, "body", str, "PullRequest")
        state = field_of(body, "state", str, "PullRequest", choices=("open", "closed"))
        base = field_of(body, "base", str, "PullRequest")
        if title is not None:
            rec["title"] = title
        if "body" in body:
            rec["body"] = text
        if base is not None and base != rec["pull"]["base_ref"]:
            if ctx.b.git(full).resolve(f"refs/heads/{base}") is None:
                raise validation("PullRequest", "base", "invalid")
            rec["pull"]["base_ref"] = base
            ctx.b.after_push(full)
        if state is not None and state != rec["state"]:
            if rec["pull"]["merged"]:
                raise validation(
                    "PullRequest", "state", "invalid", "Cannot reopen a merged pull request"
                )
            if (
                state == "open"
                and ctx.b.git(full).resolve(f"refs/heads/{rec['pull']['head_ref']}") is None
            ):
                raise validation("PullRequest", "state", "invalid", "head branch was deleted")
            ctx.b.set_state(full, number, state, ctx.actor)
        rec["updated_at"] = ctx.b.now()
        ctx.b.store.save()
    return Result(200, render.pull(ctx.b, ctx.urls, full, rec, ctx.cache, read=False))


def _range(ctx: Ctx, full: str, rec: dict[str, Any]) -> tuple[str, str]:
    g = ctx.b.git(full)
    pr = rec["pull"]
    base = pr["base_sha"]
    if rec["state"] == "open":
        base = g.resolve(f"refs/heads/{pr['base_ref']}") or base
    if pr["merged"] and pr["merge_commit_sha"]:
        # After a merge GitHub keeps showing the PR's own changes (merge-base at merge time).
        base = pr["base_sha"]
    return (g.merge_base(base, pr["head_sha"]) or base), pr["head_sha"]


@route("GET", "/repos/<owner>/<repo>/pulls/<int:number>/files")
def list_pull_files(ctx: Ctx, owner: str, repo: str, number: int) -> Paged:
    """GET /repos/{owner}/{repo}/pulls/{number}/files (at most 3,000 files, like GitHub)."""
    full = full_name(ctx, owner, repo)
    rec = _pr(ctx, full, number)
    base, head = _range(ctx, full, rec)
    files = ctx.b.git(full).diff_files(base, head)[:MAX_FILES]
    return Paged(files, lambda f: render_objects.diff_file(ctx.urls, full, head, f))


@route("GET", "/repos/<owner>/<repo>/pulls/<int:number>/commits")
def list_pull_commits(ctx: Ctx, owner: str, repo: str, number: int) -> Paged:
    """GET /repos/{owner}/{repo}/pulls/{number}/commits (oldest first, at most 250)."""
    full = full_name(ctx, owner, repo)
    rec = _pr(ctx, full, number)
    base, head = _range(ctx, full, rec)
    commits = ctx.b.git(full).log_range([f"{base}..{head}"], reverse=True, limit=MAX_COMMITS)
    return Paged(commits, lambda c: render_objects.commit(ctx.b, ctx.urls, full, c))


@route("GET", "/repos/<owner>/<repo>/pulls/<int:number>/merge")
def is_merged(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """GET /repos/{owner}/{repo}/pulls/{number}/merge → 204 merged, 404 not."""
    full = full_name(ctx, owner, repo)
    if _pr(ctx, full, number)["pull"]["merged"]:
        return Result(204, None)
    raise not_found()


@route("PUT", "/repos/<owner>/<repo>/pulls/<int:number>/merge")
def merge_pull(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """PUT /repos/{owner}/{repo}/pulls/{number}/merge (sha, merge_method, title, message)."""
    full = full_name(ctx, owner, repo)
    if ctx.ident.kind == "anonymous":
        raise SandboxApiError(401, "Requires authentication")
    role = ctx.require(full, "write", "contents")
    body = ctx.body()
    sha = field_of(body, "sha", str, "PullRequest")
    method = field_of(
        body,
        "merge_method",
        str,
        "PullRequest",
        default="merge",
        choices=("merge", "squash", "rebase"),
    )
    title = field_of(body, "commit_title", str, "PullRequest")
    message = field_of(body, "commit_message", str, "PullRequest")
    _pr(ctx, full, number)
    result = ctx.b.merge_pr(
        full,
        number,
        ctx.actor,
        actor_is_admin=(role == "admin" and ctx.ident.kind == "user"),
        sha=sha,
        method=method or "merge",
        title=title,
        message=message,
    )
    return Result(200, result)


@route("GET", "/repos/<owner>/<repo>/pulls/<int:number>/reviews")
def list_reviews(ctx: Ctx, owner: str, repo: str, number: int) -> Paged:
    """GET /repos/{owner}/{repo}/pulls/{number}/reviews (always empty here)."""
    full = full_name(ctx, owner, repo)
    _pr(ctx, full, number)
    return Paged([])

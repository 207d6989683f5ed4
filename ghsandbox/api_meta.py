"""REST handlers for users, rate limits and GitHub Apps (JWT → installation token)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from . import render, render_objects
from .auth import Identity
from .clock import iso
from .core import Backend
from .errors import SandboxApiError, not_found
from .routing import Ctx, Paged, Result, RouteList

ROUTES = RouteList()
route = ROUTES.route


def budget(b: Backend, ident: Identity) -> int:
    """The hourly core budget for a caller (seed ``rate_limit.core`` or overrides)."""
    default = int(b.data["rate_limit"].get("core", 5000))
    if ident.kind == "user":
        own = b.data["users"].get(ident.login or "", {}).get("rate_limit")
        return int(own) if own else default
    if ident.kind == "installation":
        own = b.data["installations"].get(str(ident.installation_id), {}).get("rate_limit")
        return int(own) if own else default
    if ident.kind == "anonymous":
        return 60
    return default


@route("GET", "/user")
def get_authenticated_user(ctx: Ctx) -> Result:
    """GET /user."""
    if ctx.ident.kind != "user":
        if ctx.ident.kind == "anonymous":
            raise SandboxApiError(401, "Requires authentication")
        raise SandboxApiError(403, "Resource not accessible by integration")
    return Result(200, render.full_user(ctx.b, ctx.urls, ctx.actor, private=True))


@route("GET", "/users/<username>")
def get_user(ctx: Ctx, username: str) -> Result:
    """GET /users/{username}."""
    login = next((k for k in ctx.b.data["users"] if k.lower() == username.lower()), None)
    if login is None:
        raise not_found()
    return Result(200, render.full_user(ctx.b, ctx.urls, login))


@route("GET", "/rate_limit")
def get_rate_limit(ctx: Ctx) -> Result:
    """GET /rate_limit (does not count against the limit)."""
    bucket = ctx.b.limiter.bucket(ctx.ident.rate_key, budget(ctx.b, ctx.ident))
    core = {
        "limit": bucket.limit,
        "used": bucket.used,
        "remaining": max(0, bucket.limit - bucket.used),
        "reset": bucket.reset,
    }
    other = {"limit": 5000, "used": 0, "remaining": 5000, "reset": bucket.reset}
    search = {"limit": 30, "used": 0, "remaining": 30, "reset": bucket.reset}
    return Result(
        200,
        {
            "resources": {
                "core": core,
                "search": search,
                "graphql": other,
                "integration_manifest": other,
                "code_search": {**search, "limit": 10, "remaining": 10},
            },
            "rate": core,
        },
    )


def _need_app(ctx: Ctx) -> dict[str, Any]:
    if ctx.ident.kind != "app":
        raise SandboxApiError(
            401,
            "A JSON web token could not be decoded",
            doc="https://docs.github.com/rest/apps/apps#get-the-authenticated-app",
        )
    app: dict[str, Any] = ctx.b.data["apps"][str(ctx.ident.app_id)]
    return app


@route("GET", "/app")
def get_app(ctx: Ctx) -> Result:
    """GET /app (JWT)."""
    return Result(200, render_objects.app(ctx.b, ctx.urls, _need_app(ctx)))


@route("GET", "/apps/<slug>")
def get_app_by_slug(ctx: Ctx, slug: str) -> Result:
    """GET /apps/{slug}."""
    for a in ctx.b.data["apps"].values():
        if a["slug"] == slug:
            return Result(200, render_objects.app(ctx.b, ctx.urls, a))
    raise not_found()


def _installations(ctx: Ctx) -> list[dict[str, Any]]:
    app = _need_app(ctx)
    return [i for i in ctx.b.data["installations"].values() if i["app_id"] == app["id"]]


@route("GET", "/app/installations")
def list_installations(ctx: Ctx) -> Paged:
    """GET /app/installations (JWT; a plain array like GitHub)."""
    return Paged(_installations(ctx), lambda i: render_objects.installation(ctx.b, ctx.urls, i))


@route("GET", "/app/installations/<int:installation_id>")
def get_installation(ctx: Ctx, installation_id: int) -> Result:
    """GET /app/installations/{id} (JWT)."""
    for i in _installations(ctx):
        if i["id"] == installation_id:
            return Result(200, render_objects.installation(ctx.b, ctx.urls, i))
    raise not_found()


@route("POST", "/app/installations/<int:installation_id>/access_tokens")
def create_installation_token(ctx: Ctx, installation_id: int) -> Result:
    """POST /app/installations/{id}/access_tokens (JWT) → a one-hour ``ghs_`` token."""
    inst = next((i for i in _installations(ctx) if i["id"] == installation_id), None)
    if inst is None:
        raise not_found()
    ctx.body()
    token, expires = ctx.b.issue_installation_token(installation_id)
    app = ctx.b.data["apps"][str(inst["app_id"])]
    return Result(
        201,
        {
            "token": token,
            "expires_at": iso(datetime.fromtimestamp(expires, UTC)),
            "permissions": dict(app.get("permissions") or {}),
            "repository_selection": "all" if inst["repositories"] == "all" else "selected",
        },
    )


@route("GET", "/repos/<owner>/<repo>/installation")
def get_repo_installation(ctx: Ctx, owner: str, repo: str) -> Result:
    """GET /repos/{owner}/{repo}/installation (JWT)."""
    full = ctx.b.repo(f"{owner}/{repo}")["full_name"]
    for i in _installations(ctx):
        if full in ctx.b.installation_repos(i):
            return Result(200, render_objects.installation(ctx.b, ctx.urls, i))
    raise not_found()


@route("GET", "/orgs/<org>/installation")
def get_org_installation(ctx: Ctx, org: str) -> Result:
    """GET /orgs/{org}/installation (JWT)."""
    for i in _installations(ctx):
        if i["account"].lower() == org.lower():
            return Result(200, render_objects.installation(ctx.b, ctx.urls, i))
    raise not_found()


@route("GET", "/installation/repositories")
def installation_repositories(ctx: Ctx) -> Paged:
    """GET /installation/repositories (installation token)."""
    if ctx.ident.kind != "installation":
        raise SandboxApiError(
            403,
            "You must authenticate with an installation access token in order to list "
            "repositories for an installation.",
        )
    inst = ctx.b.data["installations"][str(ctx.ident.installation_id)]
    fulls = ctx.b.installation_repos(inst)
    return Paged(
        fulls,
        lambda f: render.repo(ctx.b, ctx.urls, ctx.b.repo(f), full=False),
        wrap="repositories",
        extra={"repository_selection": "all" if inst["repositories"] == "all" else "selected"},
    )


@route("GET", "/orgs/<org>")
def get_org(ctx: Ctx, org: str) -> Result:
    """GET /orgs/{org}."""
    rec = next((v for k, v in ctx.b.data["users"].items() if k.lower() == org.lower()), None)
    if rec is None or rec["type"] != "Organization":
        raise not_found()
    login = rec["login"]
    api = f"{ctx.urls.api}/orgs/{login}"
    return Result(
        200,
        {
            "login": login,
            "id": rec["id"],
            "node_id": render.node_id("Organization", rec["id"]),
            "url": api,
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events",
            "hooks_url": f"{api}/hooks",
            "issues_url": f"{api}/issues",
            "members_url": f"{api}/members{{/member}}",
            "public_members_url": f"{api}/public_members{{/member}}",
            "avatar_url": f"{ctx.urls.web}/avatars/u/{rec['id']}?v=4",
            "description": None,
            "name": rec.get("name"),
            "html_url": f"{ctx.urls.web}/{login}",
            "created_at": rec["created_at"],
            "updated_at": rec["created_at"],
            "type": "Organization",
            "public_repos": sum(
                1 for r in ctx.b.data["repos"].values() if r["owner"] == login and not r["private"]
            ),
            "followers": 0,
            "following": 0,
            "has_organization_projects": True,
            "has_repository_projects": True,
        },
    )

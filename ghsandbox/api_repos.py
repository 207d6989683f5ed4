"""REST handlers for repositories, collaborators, branches and branch protection."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from . import render, render_objects
from .api_access import branch_rules, permissions_for
from .auth import repo_permission
from .errors import SandboxApiError, not_found, validation
from .routing import Ctx, Paged, Result, RouteList, field_of

ROUTES = RouteList()
route = ROUTES.route


def full_name(ctx: Ctx, owner: str, repo: str) -> str:
    """The canonical ``owner/name`` (case-insensitive lookup, 404 if unknown or invisible)."""
    full: str = ctx.b.repo(f"{owner}/{repo}")["full_name"]
    ctx.require(full, "read")
    return full


def resolve_commit(ctx: Ctx, full: str, ref: str) -> str:
    """A branch, tag or sha → commit sha (422 ``No commit found for SHA`` like GitHub)."""
    sha = ctx.b.git(full).resolve_ref_or_sha(ref)
    if sha is None:
        raise SandboxApiError(422, f"No commit found for SHA: {ref}")
    return sha


# -- repositories --------------------------------------------------------------------------


def _create(ctx: Ctx, owner: str) -> Result:
    body = ctx.body()
    name = field_of(body, "name", str, "Repository", required=True)
    description = field_of(body, "description", str, "Repository")
    private = field_of(body, "private", bool, "Repository", default=False)
    auto_init = field_of(body, "auto_init", bool, "Repository", default=False)
    branch = field_of(body, "default_branch", str, "Repository", default="main")
    full = ctx.b.create_repo(
        owner,
        name,
        default_branch=branch,
        private=private,
        description=description,
        auto_init=auto_init,
    )
    return Result(201, render.repo(ctx.b, ctx.urls, ctx.b.repo(full), viewer_perm="admin"))


@route("POST", "/user/repos")
def create_user_repo(ctx: Ctx) -> Result:
    """POST /user/repos."""
    if ctx.ident.kind != "user":
        if ctx.ident.kind == "anonymous":
            raise SandboxApiError(401, "Requires authentication")
        raise SandboxApiError(403, "Resource not accessible by integration")
    return _create(ctx, ctx.actor)


@route("POST", "/orgs/<org>/repos")
def create_org_repo(ctx: Ctx, org: str) -> Result:
    """POST /orgs/{org}/repos (org admins and members)."""
    rec = ctx.b.data["users"].get(org)
    if rec is None or rec["type"] != "Organization":
        raise not_found()
    if ctx.ident.kind == "anonymous":
        raise SandboxApiError(401, "Requires authentication")
    if ctx.ident.kind == "installation":
        inst = ctx.b.data["installations"][str(ctx.ident.installation_id)]
        if inst["account"] != org:
            raise SandboxApiError(403, "Resource not accessible by integration")
    elif ctx.ident.login not in rec.get("admins", []) + rec.get("members", []):
        raise SandboxApiError(
            403, "You need admin access to the organization before adding a repository to it."
        )
    return _create(ctx, org)


@route("GET", "/repos/<owner>/<repo>")
def get_repo(ctx: Ctx, owner: str, repo: str) -> Result:
    """GET /repos/{owner}/{repo}."""
    full = full_name(ctx, owner, repo)
    perm = repo_permission(ctx.b, ctx.ident, full)
    return Result(200, render.repo(ctx.b, ctx.urls, ctx.b.repo(full), viewer_perm=perm))


@route("GET", "/repos/<owner>/<repo>/collaborators/<username>/permission")
def collaborator_permission(ctx: Ctx, owner: str, repo: str, username: str) -> Result:
    """GET /repos/{owner}/{repo}/collaborators/{username}/permission."""
    full = full_name(ctx, owner, repo)
    ctx.require(full, "write")
    login = next((k for k in ctx.b.data["users"] if k.lower() == username.lower()), None)
    if login is None:
        raise not_found()
    role = ctx.b.permission(full, login)
    permission = {"maintain": "write", "triage": "read"}.get(role, role)
    u = render.user(ctx.b, ctx.urls, login)
    assert u is not None
    u["permissions"] = permissions_for(role)
    u["role_name"] = role if role != "none" else "read"
    return Result(200, {"permission": permission, "role_name": role, "user": u})


# -- branches and protection ---------------------------------------------------------------


def _protection_body(ctx: Ctx, full: str, branch: str, rule: dict[str, Any]) -> dict[str, Any]:
    url = f"{ctx.urls.api}/repos/{full}/branches/{quote(branch)}/protection"
    out: dict[str, Any] = {"url": url}
    rsc = rule["required_status_checks"]
    if rsc is not None:
        out["required_status_checks"] = {
            "url": f"{url}/required_status_checks",
            "strict": rsc["strict"],
            "contexts": [c["context"] for c in rsc["checks"]],
            "contexts_url": f"{url}/required_status_checks/contexts",
            "checks": [{"context": c["context"], "app_id": c["app_id"]} for c in rsc["checks"]],
        }
    out["enforce_admins"] = {"url": f"{url}/enforce_admins", "enabled": rule["enforce_admins"]}
    if rule["required_pull_request_reviews"] is not None:
        out["required_pull_request_reviews"] = {
            "url": f"{url}/required_pull_request_reviews",
            **rule["required_pull_request_reviews"],
        }
    for key in (
        "required_linear_history",
        "allow_force_pushes",
        "allow_deletions",
        "block_creations",
        "required_conversation_resolution",
        "lock_branch",
        "allow_fork_syncing",
    ):
        out[key] = {"enabled": rule[key]}
    out["required_signatures"] = {"url": f"{url}/required_signatures", "enabled": False}
    return out


def _branch_sha(ctx: Ctx, full: str, branch: str) -> str:
    sha = ctx.b.git(full).resolve(f"refs/heads/{branch}")
    if sha is None:
        raise SandboxApiError(404, "Branch not found")
    return sha


@route("GET", "/repos/<owner>/<repo>/branches")
def list_branches(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/branches."""
    full = full_name(ctx, owner, repo)
    refs = ctx.b.git(full).refs("refs/heads/")
    prot = ctx.b.repo(full)["protection"]
    items = sorted((r.removeprefix("refs/heads/"), sha) for r, sha in refs.items())
    return Paged(
        items,
        lambda it: {
            "name": it[0],
            "commit": {"sha": it[1], "url": f"{ctx.urls.api}/repos/{full}/commits/{it[1]}"},
            "protected": it[0] in prot or bool(branch_rules(ctx.b, full, it[0])),
        },
    )


@route("GET", "/repos/<owner>/<repo>/branches/<path:branch>")
def get_branch(ctx: Ctx, owner: str, repo: str, branch: str) -> Result:
    """GET /repos/{owner}/{repo}/branches/{branch}."""
    full = full_name(ctx, owner, repo)
    sha = _branch_sha(ctx, full, branch)
    info = ctx.b.git(full).commit_info(sha)
    assert info is not None
    rule = ctx.b.repo(full)["protection"].get(branch)
    checks = (rule or {}).get("required_status_checks") or {"checks": []}
    prot_url = f"{ctx.urls.api}/repos/{full}/branches/{quote(branch)}/protection"
    return Result(
        200,
        {
            "name": branch,
            "commit": render_objects.commit(ctx.b, ctx.urls, full, info),
            "_links": {
                "self": f"{ctx.urls.api}/repos/{full}/branches/{quote(branch)}",
                "html": f"{ctx.urls.web}/{full}/tree/{quote(branch)}",
            },
            # GitHub says `protected` when classic protection or an active ruleset applies
            "protected": rule is not None or bool(branch_rules(ctx.b, full, branch)),
            "protection": {
                "enabled": rule is not None,
                "required_status_checks": {
                    "enforcement_level": "non_admins"
                    if rule and rule["required_status_checks"]
                    else "off",
                    "contexts": [c["context"] for c in checks["checks"]],
                    "checks": [
                        {"context": c["context"], "app_id": c["app_id"]} for c in checks["checks"]
                    ],
                },
            },
            "protection_url": prot_url,
        },
    )


@route("GET", "/repos/<owner>/<repo>/branches/<path:branch>/protection")
def get_protection(ctx: Ctx, owner: str, repo: str, branch: str) -> Result:
    """GET /repos/{owner}/{repo}/branches/{branch}/protection (a user: admin; an App:
    `administration: read`, as on GitHub)."""
    full = full_name(ctx, owner, repo)
    ctx.require(full, "admin", "administration", app_level="read")
    _branch_sha(ctx, full, branch)
    rule = ctx.b.repo(full)["protection"].get(branch)
    if rule is None:
        raise SandboxApiError(404, "Branch not protected")
    return Result(200, _protection_body(ctx, full, branch, rule))


@route("PUT", "/repos/<owner>/<repo>/branches/<path:branch>/protection")
def put_protection(ctx: Ctx, owner: str, repo: str, branch: str) -> Result:
    """PUT /repos/{owner}/{repo}/branches/{branch}/protection (admin; four keys required)."""
    full = full_name(ctx, owner, repo)
    ctx.require(full, "admin", "administration")
    _branch_sha(ctx, full, branch)
    body = ctx.body()
    for key in (
        "required_status_checks",
        "enforce_admins",
        "required_pull_request_reviews",
        "restrictions",
    ):
        if key not in body:
            raise validation("BranchProtection", key, "missing_field")
    rsc = field_of(body, "required_status_checks", dict, "BranchProtection")
    if rsc is not None:
        checks = field_of(rsc, "checks", list, "BranchProtection", default=[])
        contexts = field_of(rsc, "contexts", list, "BranchProtection", default=[])
        for c in checks:
            if not isinstance(c, dict) or not isinstance(c.get("context"), str):
                raise validation("BranchProtection", "required_status_checks.checks", "invalid")
            if c.get("app_id") is not None and not isinstance(c.get("app_id"), int):
                raise validation(
                    "BranchProtection", "required_status_checks.checks.app_id", "invalid"
                )
        if not all(isinstance(c, str) for c in contexts):
            raise validation("BranchProtection", "required_status_checks.contexts", "invalid")
    field_of(body, "enforce_admins", bool, "BranchProtection")
    field_of(body, "required_pull_request_reviews", dict, "BranchProtection")
    for key in ("allow_force_pushes", "allow_deletions", "required_linear_history"):
        field_of(body, key, bool, "BranchProtection")
    rule = ctx.b.set_protection(full, branch, body)
    return Result(200, _protection_body(ctx, full, branch, rule))


@route("DELETE", "/repos/<owner>/<repo>/branches/<path:branch>/protection")
def delete_protection(ctx: Ctx, owner: str, repo: str, branch: str) -> Result:
    """DELETE /repos/{owner}/{repo}/branches/{branch}/protection."""
    full = full_name(ctx, owner, repo)
    ctx.require(full, "admin", "administration")
    ctx.b.delete_protection(full, branch)
    return Result(204, None)


# -- contents and commits ------------------------------------------------------------------


# -- commit statuses -----------------------------------------------------------------------


# -- check runs ----------------------------------------------------------------------------

"""Who may do what: the collaborator list and repository rulesets (``/rules``, ``/rulesets``)."""

from __future__ import annotations

from typing import Any

from . import render
from .backend.accounts import PERMISSION_RANK
from .core import Backend
from .errors import not_found, validation
from .protection import ruleset_applies
from .routing import Ctx, Paged, Result, RouteList, field_of

ROUTES = RouteList()
route = ROUTES.route

RULE_TYPES = (
    "creation",
    "update",
    "deletion",
    "required_linear_history",
    "required_signatures",
    "pull_request",
    "required_status_checks",
    "non_fast_forward",
)
ENFORCEMENTS = ("active", "evaluate", "disabled")


def permissions_for(role: str) -> dict[str, bool]:
    """GitHub's ``permissions`` object for a role (``admin`` ... ``none``)."""
    rank = PERMISSION_RANK[role]
    return {
        "admin": rank >= 5,
        "maintain": rank >= 4,
        "push": rank >= 3,
        "triage": rank >= 2,
        "pull": rank >= 1,
    }


def _full(ctx: Ctx, owner: str, repo: str) -> str:
    return str(ctx.b.repo(f"{owner}/{repo}")["full_name"])


# -- collaborators -------------------------------------------------------------------------


def collaborator_logins(b: Backend, full: str, affiliation: str) -> list[tuple[str, str]]:
    """(login, role) of everyone with access to ``full`` (``all``/``direct``/``outside``)."""
    repo = b.repo(full)
    owner = b.data["users"].get(repo["owner"], {})
    org = owner.get("type") == "Organization"
    members = set(owner.get("admins", [])) | set(owner.get("members", []))
    logins: set[str] = set(repo["collaborators"])
    if affiliation == "all":
        logins |= members if org else {repo["owner"]}
    elif affiliation == "outside":
        logins = {x for x in logins if x not in members} if org else set()
    out = []
    for login in sorted(logins, key=str.lower):
        if login not in b.data["users"]:
            continue
        role = b.permission(full, login)
        if role != "none":
            out.append((login, role))
    return out


@route("GET", "/repos/<owner>/<repo>/collaborators")
def list_collaborators(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/collaborators (needs push access, like GitHub)."""
    full = _full(ctx, owner, repo)
    ctx.require(full, "write")
    affiliation = ctx.req.args.get("affiliation", "all")
    if affiliation not in ("all", "direct", "outside"):
        raise validation("Collaborator", "affiliation", "invalid")
    wanted = ctx.req.args.get("permission")
    if wanted is not None and wanted not in ("pull", "triage", "push", "maintain", "admin"):
        raise validation("Collaborator", "permission", "invalid")
    people = collaborator_logins(ctx.b, full, affiliation)
    if wanted is not None:
        people = [(lg, role) for lg, role in people if permissions_for(role)[wanted]]

    def one(item: tuple[str, str]) -> dict[str, Any]:
        login, role = item
        u = render.user(ctx.b, ctx.urls, login)
        assert u is not None
        return {**u, "permissions": permissions_for(role), "role_name": role}

    return Paged(people, one)


# GitHub's `permission` words for the roles (`pull`/`push` are the API's names of read/write)
ROLE_OF_PERMISSION = {"pull": "read", "triage": "triage", "push": "write", "maintain": "maintain",
                      "admin": "admin"}  # fmt: skip


def _user_login(ctx: Ctx, username: str) -> str:
    login = next((k for k in ctx.b.data["users"] if k.lower() == username.lower()), None)
    if login is None or ctx.b.data["users"][login].get("type") == "Organization":
        raise not_found()
    return str(login)


@route("PUT", "/repos/<owner>/<repo>/collaborators/<username>")
def put_collaborator(ctx: Ctx, owner: str, repo: str, username: str) -> Result:
    """PUT /repos/{owner}/{repo}/collaborators/{username} (admin; an App: `administration:
    write`): body `{"permission": pull|triage|push|maintain|admin}`, default push. A new
    collaborator gets 201 and a repository invitation, an existing one 204 with the new role.
    The sandbox applies the invitation at once (GitHub waits for the invitee to accept)."""
    full = _full(ctx, owner, repo)
    ctx.require(full, "admin", "administration")
    login = _user_login(ctx, username)
    word = field_of(
        ctx.body(), "permission", str, "Collaborator", default="push",
        choices=tuple(ROLE_OF_PERMISSION),
    )  # fmt: skip
    rec = ctx.b.repo(full)
    if login == rec["owner"]:
        raise validation("Collaborator", "permission", "invalid")  # the owner is no collaborator
    with ctx.b.lock:
        existed = login in rec["collaborators"]
        rec["collaborators"][login] = ROLE_OF_PERMISSION[word]
        ctx.b.store.save()
    if existed:
        return Result(204, None)
    invitation = {
        "id": ctx.b.store.new_id(),
        "node_id": render.node_id("RepositoryInvitation", f"{full}:{login}"),
        "repository": render.repo(ctx.b, ctx.urls, rec, full=False),
        "invitee": render.user(ctx.b, ctx.urls, login),
        "inviter": render.user(ctx.b, ctx.urls, ctx.ident.login),
        "permissions": {"pull": "read", "push": "write"}.get(word, word),
        "created_at": ctx.b.now(),
        "expired": False,
        "url": f"{ctx.urls.api}/user/repository_invitations/{login}",
        "html_url": f"{ctx.urls.web}/{full}/invitations",
    }
    return Result(201, invitation)


@route("DELETE", "/repos/<owner>/<repo>/collaborators/<username>")
def delete_collaborator(ctx: Ctx, owner: str, repo: str, username: str) -> Result:
    """DELETE /repos/{owner}/{repo}/collaborators/{username} (admin; an App: `administration:
    write`): 204, whether or not the login was a collaborator."""
    full = _full(ctx, owner, repo)
    ctx.require(full, "admin", "administration")
    login = _user_login(ctx, username)
    with ctx.b.lock:
        if ctx.b.repo(full)["collaborators"].pop(login, None) is not None:
            ctx.b.store.save()
    return Result(204, None)


# -- rulesets ------------------------------------------------------------------------------


def _rulesets(b: Backend, full: str) -> dict[str, dict[str, Any]]:
    return b.repo(full).setdefault("rulesets", {})  # type: ignore[no-any-return]


def branch_rules(b: Backend, full: str, branch: str) -> list[dict[str, Any]]:
    """The active rules on ``branch``, each tagged with its ruleset (GitHub's shape)."""
    repo = b.repo(full)
    out = []
    for rs in sorted(_rulesets(b, full).values(), key=lambda r: r["id"]):
        if not ruleset_applies(rs, branch, repo["default_branch"]):
            continue
        for rule in rs["rules"]:
            out.append(
                {
                    **rule,
                    "ruleset_source_type": "Repository",
                    "ruleset_source": full,
                    "ruleset_id": rs["id"],
                }
            )
    return out


def _ruleset_body(ctx: Ctx, full: str, rs: dict[str, Any], detail: bool) -> dict[str, Any]:
    url = f"{ctx.urls.api}/repos/{full}/rulesets/{rs['id']}"
    out: dict[str, Any] = {
        "id": rs["id"],
        "name": rs["name"],
        "target": rs["target"],
        "source_type": "Repository",
        "source": full,
        "enforcement": rs["enforcement"],
        "node_id": f"RRS_{rs['id']}",
        "_links": {"self": {"href": url}, "html": {"href": f"{ctx.urls.web}/{full}/rules"}},
        "created_at": rs["created_at"],
        "updated_at": rs["updated_at"],
    }
    if detail:
        out["bypass_actors"] = rs["bypass_actors"]
        out["current_user_can_bypass"] = "never"
        out["conditions"] = rs["conditions"]
        out["rules"] = rs["rules"]
    return out


def add_ruleset(b: Backend, full: str, body: dict[str, Any]) -> dict[str, Any]:
    """Validate and store a repository ruleset (body as for ``POST .../rulesets``)."""
    name = field_of(body, "name", str, "Ruleset", required=True)
    target = field_of(body, "target", str, "Ruleset", default="branch", choices=("branch", "tag"))
    enforcement = field_of(body, "enforcement", str, "Ruleset", required=True, choices=ENFORCEMENTS)
    conditions = field_of(body, "conditions", dict, "Ruleset", default={}) or {}
    rules = field_of(body, "rules", list, "Ruleset", default=[]) or []
    bypass = field_of(body, "bypass_actors", list, "Ruleset", default=[]) or []
    for rule in rules:
        if not isinstance(rule, dict) or rule.get("type") not in RULE_TYPES:
            raise validation("Ruleset", "rules", "invalid")
        if "parameters" in rule and not isinstance(rule["parameters"], dict):
            raise validation("Ruleset", "rules", "invalid")
    with b.lock:
        if any(r["name"] == name for r in _rulesets(b, full).values()):
            raise validation("Ruleset", "name", "already_exists")
        now = b.now()
        rs = {
            "id": b.store.new_id(),
            "name": name,
            "target": target,
            "enforcement": enforcement,
            "conditions": conditions,
            "rules": [dict(r) for r in rules],
            "bypass_actors": bypass,
            "created_at": now,
            "updated_at": now,
        }
        _rulesets(b, full)[str(rs["id"])] = rs
        b.store.save()
        return rs


@route("GET", "/repos/<owner>/<repo>/rules/branches/<path:branch>")
def get_branch_rules(ctx: Ctx, owner: str, repo: str, branch: str) -> Paged:
    """GET /repos/{owner}/{repo}/rules/branches/{branch} (read access; [] when none apply)."""
    full = _full(ctx, owner, repo)
    ctx.require(full, "read")
    return Paged(branch_rules(ctx.b, full, branch))


@route("GET", "/repos/<owner>/<repo>/rulesets")
def list_rulesets(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/rulesets."""
    full = _full(ctx, owner, repo)
    ctx.require(full, "read")
    items = sorted(_rulesets(ctx.b, full).values(), key=lambda r: r["id"])
    return Paged(items, lambda rs: _ruleset_body(ctx, full, rs, detail=False))


@route("GET", "/repos/<owner>/<repo>/rulesets/<int:ruleset_id>")
def get_ruleset(ctx: Ctx, owner: str, repo: str, ruleset_id: int) -> Result:
    """GET /repos/{owner}/{repo}/rulesets/{ruleset_id}."""
    full = _full(ctx, owner, repo)
    ctx.require(full, "read")
    rs = _rulesets(ctx.b, full).get(str(ruleset_id))
    if rs is None:
        raise not_found()
    return Result(200, _ruleset_body(ctx, full, rs, detail=True))


@route("POST", "/repos/<owner>/<repo>/rulesets")
def create_ruleset(ctx: Ctx, owner: str, repo: str) -> Result:
    """POST /repos/{owner}/{repo}/rulesets (admin)."""
    full = _full(ctx, owner, repo)
    ctx.require(full, "admin", "administration")
    rs = add_ruleset(ctx.b, full, ctx.body())
    return Result(201, _ruleset_body(ctx, full, rs, detail=True))


@route("DELETE", "/repos/<owner>/<repo>/rulesets/<int:ruleset_id>")
def delete_ruleset(ctx: Ctx, owner: str, repo: str, ruleset_id: int) -> Result:
    """DELETE /repos/{owner}/{repo}/rulesets/{ruleset_id} (admin)."""
    full = _full(ctx, owner, repo)
    ctx.require(full, "admin", "administration")
    with ctx.b.lock:
        if _rulesets(ctx.b, full).pop(str(ruleset_id), None) is None:
            raise not_found()
        ctx.b.store.save()
    return Result(204, None)

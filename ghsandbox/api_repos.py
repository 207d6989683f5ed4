"""REST handlers for repositories: branches, protection, contents, commits, statuses, checks."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

from . import render
from .api_access import permissions_for
from .auth import repo_permission
from .clock import iso, parse_iso
from .errors import SandboxApiError, not_found, validation
from .git import EMPTY_TREE
from .http import paginate
from .routing import Ctx, Paged, Result, RouteList, field_of

ROUTES = RouteList()
route = ROUTES.route

STATES = ("error", "failure", "pending", "success")
CHECK_STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)


def full_name(ctx: Ctx, owner: str, repo: str) -> str:
    """The canonical ``owner/name`` (case-insensitive lookup, 404 if unknown or invisible)."""
    full = ctx.b.repo(f"{owner}/{repo}")["full_name"]
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
            "protected": it[0] in prot,
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
            "commit": render.commit(ctx.b, ctx.urls, full, info),
            "_links": {
                "self": f"{ctx.urls.api}/repos/{full}/branches/{quote(branch)}",
                "html": f"{ctx.urls.web}/{full}/tree/{quote(branch)}",
            },
            "protected": rule is not None,
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
    """GET /repos/{owner}/{repo}/branches/{branch}/protection (admin)."""
    full = full_name(ctx, owner, repo)
    ctx.require(full, "admin", "administration")
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


def _content_entry(
    ctx: Ctx, full: str, ref: str, e: dict[str, Any], with_content: bool
) -> dict[str, Any]:
    path = e["path"]
    typ = {"blob": "file", "tree": "dir", "commit": "submodule"}[e["type"]]
    if e["mode"] == "120000":
        typ = "symlink" if with_content else "file"
    qpath = quote(path)
    url = f"{ctx.urls.api}/repos/{full}/contents/{qpath}?ref={quote(ref)}"
    git_url = (
        f"{ctx.urls.api}/repos/{full}/git/{'trees' if e['type'] == 'tree' else 'blobs'}/{e['sha']}"
    )
    html = f"{ctx.urls.web}/{full}/{'tree' if e['type'] == 'tree' else 'blob'}/{quote(ref)}/{qpath}"
    out: dict[str, Any] = {
        "type": typ,
        "size": e["size"] or 0,
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": e["sha"],
        "url": url,
        "git_url": git_url,
        "html_url": html,
        "download_url": f"{ctx.urls.web}/{full}/raw/{quote(ref)}/{qpath}"
        if e["type"] == "blob"
        else None,
        "_links": {"self": url, "git": git_url, "html": html},
    }
    if with_content and e["type"] == "blob":
        data = ctx.b.git(full).cat_blob(e["sha"])
        if typ == "symlink":
            out["target"] = data.decode("utf-8", "replace")
        else:
            enc = base64.b64encode(data).decode()
            out["content"] = "\n".join(enc[i : i + 60] for i in range(0, len(enc), 60)) + (
                "\n" if enc else ""
            )
            out["encoding"] = "base64"
    if with_content and e["type"] == "commit":
        out["submodule_git_url"] = ""
    return out


@route("GET", "/repos/<owner>/<repo>/contents")
@route("GET", "/repos/<owner>/<repo>/contents/<path:path>")
def get_contents(ctx: Ctx, owner: str, repo: str, path: str = "") -> Result:
    """GET /repos/{owner}/{repo}/contents/{path}?ref= (file: base64; directory: a listing)."""
    full = full_name(ctx, owner, repo)
    ref = ctx.req.args.get("ref") or ctx.b.repo(full)["default_branch"]
    g = ctx.b.git(full)
    sha = g.resolve_ref_or_sha(ref)
    if sha is None:
        raise SandboxApiError(404, f"No commit found for the ref {ref}")
    path = path.strip("/")
    if not path:
        entries = g.ls_tree(sha)
        return Result(200, [_content_entry(ctx, full, ref, e, False) for e in entries])
    found = g.ls_tree(sha, path=path)
    match = next((e for e in found if e["path"] == path), None)
    if match is None:
        raise not_found()
    if match["type"] == "tree":
        entries = g.ls_tree(sha, path=path + "/")
        return Result(200, [_content_entry(ctx, full, ref, e, False) for e in entries])
    return Result(200, _content_entry(ctx, full, ref, match, True))


def _commit_files(ctx: Ctx, full: str, sha: str, parents: list[str]) -> list[dict[str, Any]]:
    g = ctx.b.git(full)
    return g.diff_files(parents[0] if parents else EMPTY_TREE, sha)


@route("GET", "/repos/<owner>/<repo>/commits/<path:ref>")
def get_commit(ctx: Ctx, owner: str, repo: str, ref: str) -> Result:
    """GET /repos/{owner}/{repo}/commits/{ref} (with parents, stats and files)."""
    full = full_name(ctx, owner, repo)
    sha = resolve_commit(ctx, full, ref)
    info = ctx.b.git(full).commit_info(sha)
    assert info is not None
    files = _commit_files(ctx, full, sha, info.parents)[:300]
    return Result(200, render.commit(ctx.b, ctx.urls, full, info, files))


@route("GET", "/repos/<owner>/<repo>/commits")
def list_commits(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/commits?sha=&path=."""
    full = full_name(ctx, owner, repo)
    start = ctx.req.args.get("sha") or ctx.b.repo(full)["default_branch"]
    sha = ctx.b.git(full).resolve_ref_or_sha(start)
    if sha is None:
        raise not_found()
    path = ctx.req.args.get("path")
    infos = ctx.b.git(full).log_range([sha])
    if path:
        keep = set(
            ctx.b.git(full).run("log", "--format=%H", sha, "--", path).stdout.decode().split()
        )
        infos = [i for i in infos if i.sha in keep]
    return Paged(infos, lambda c: render.commit(ctx.b, ctx.urls, full, c))


@route("GET", "/repos/<owner>/<repo>/compare/<path:basehead>")
def compare(ctx: Ctx, owner: str, repo: str, basehead: str) -> Result:
    """GET /repos/{owner}/{repo}/compare/{base}...{head}."""
    full = full_name(ctx, owner, repo)
    if "..." not in basehead:
        raise not_found()
    base_ref, head_ref = basehead.split("...", 1)
    g = ctx.b.git(full)
    base = g.resolve_ref_or_sha(base_ref)
    head = g.resolve_ref_or_sha(head_ref)
    if base is None or head is None:
        raise not_found()
    mb = g.merge_base(base, head)
    if mb is None:
        raise SandboxApiError(404, f"No common ancestor between {base_ref} and {head_ref}.")
    ahead = g.count_range(base, head)
    behind = g.count_range(head, base)
    status = (
        "identical"
        if ahead == behind == 0
        else "ahead"
        if behind == 0
        else "behind"
        if ahead == 0
        else "diverged"
    )
    commits = g.log_range([f"{mb}..{head}"], reverse=True)
    root = ctx.urls.api.removesuffix("/api/v3")
    page, link = paginate(ctx.req, root, commits, max_per_page=1000, default_per_page=250)
    files = g.diff_files(mb, head)
    base_info, mb_info = g.commit_info(base), g.commit_info(mb)
    assert base_info is not None and mb_info is not None
    api = f"{ctx.urls.api}/repos/{full}/compare/{basehead}"
    web = f"{ctx.urls.web}/{full}/compare/{basehead}"
    return Result(
        200,
        headers={"Link": link} if link else {},
        body={
            "url": api,
            "html_url": web,
            "permalink_url": f"{ctx.urls.web}/{full}/compare/{owner}:{base}...{owner}:{head}",
            "diff_url": f"{web}.diff",
            "patch_url": f"{web}.patch",
            "base_commit": render.commit(ctx.b, ctx.urls, full, base_info),
            "merge_base_commit": render.commit(ctx.b, ctx.urls, full, mb_info),
            "status": status,
            "ahead_by": ahead,
            "behind_by": behind,
            "total_commits": len(commits),
            "commits": [render.commit(ctx.b, ctx.urls, full, c) for c in page],
            "files": [render.diff_file(ctx.urls, full, head, f) for f in files[:300]],
        },
    )


# -- commit statuses -----------------------------------------------------------------------


@route("POST", "/repos/<owner>/<repo>/statuses/<sha>")
def create_status(ctx: Ctx, owner: str, repo: str, sha: str) -> Result:
    """POST /repos/{owner}/{repo}/statuses/{sha}."""
    full = full_name(ctx, owner, repo)
    ctx.require(full, "write", "statuses")
    body = ctx.body()
    state = field_of(body, "state", str, "Status", required=True, choices=STATES)
    target_url = field_of(body, "target_url", str, "Status")
    description = field_of(body, "description", str, "Status")
    context = field_of(body, "context", str, "Status", default="default") or "default"
    commit = resolve_commit(ctx, full, sha)
    now = ctx.b.now()
    with ctx.b.lock:
        s = {
            "id": ctx.b.store.new_id(),
            "sha": commit,
            "state": state,
            "context": context,
            "description": description,
            "target_url": target_url,
            "creator": ctx.actor,
            "created_at": now,
            "updated_at": now,
        }
        ctx.b.repo(full)["statuses"].append(s)
        ctx.b.store.save()
    return Result(201, render.status(ctx.b, ctx.urls, full, s))


@route("GET", "/repos/<owner>/<repo>/commits/<path:ref>/status")
def combined_status(ctx: Ctx, owner: str, repo: str, ref: str) -> Result:
    """GET /repos/{owner}/{repo}/commits/{ref}/status (latest per context, combined state)."""
    full = full_name(ctx, owner, repo)
    sha = resolve_commit(ctx, full, ref)
    latest = ctx.b.latest_statuses(full, sha)
    states = {s["state"] for s in latest}
    if states & {"error", "failure"}:
        state = "failure"
    elif not latest or "pending" in states:
        state = "pending"
    else:
        state = "success"
    return Result(
        200,
        {
            "state": state,
            "statuses": [render.status(ctx.b, ctx.urls, full, s) for s in latest],
            "sha": sha,
            "total_count": len(latest),
            "repository": render.repo(ctx.b, ctx.urls, ctx.b.repo(full), full=False),
            "commit_url": f"{ctx.urls.api}/repos/{full}/commits/{sha}",
            "url": f"{ctx.urls.api}/repos/{full}/commits/{sha}/status",
        },
    )


@route("GET", "/repos/<owner>/<repo>/commits/<path:ref>/statuses")
@route("GET", "/repos/<owner>/<repo>/statuses/<path:ref>")
def list_statuses(ctx: Ctx, owner: str, repo: str, ref: str) -> Paged:
    """GET /repos/{owner}/{repo}/commits/{ref}/statuses (newest first)."""
    full = full_name(ctx, owner, repo)
    sha = resolve_commit(ctx, full, ref)
    return Paged(ctx.b.statuses_for(full, sha), lambda s: render.status(ctx.b, ctx.urls, full, s))


# -- check runs ----------------------------------------------------------------------------


def _check_app(ctx: Ctx, full: str) -> int:
    if ctx.ident.kind != "installation":
        if ctx.ident.kind == "anonymous":
            raise SandboxApiError(401, "Requires authentication")
        raise SandboxApiError(
            403,
            "You must authenticate via a GitHub App.",
            doc="https://docs.github.com/rest/checks/runs#create-a-check-run",
        )
    ctx.require(full, "write", "checks")
    assert ctx.ident.app_id is not None
    return ctx.ident.app_id


def _apply_check_fields(
    ctx: Ctx, run: dict[str, Any], body: dict[str, Any], creating: bool
) -> None:
    name = field_of(body, "name", str, "CheckRun", required=creating)
    if name is not None:
        run["name"] = name
    for key in ("details_url", "external_id"):
        value = field_of(body, key, str, "CheckRun")
        if value is not None:
            run[key] = value
    status = field_of(body, "status", str, "CheckRun", choices=CHECK_STATUSES)
    conclusion = field_of(body, "conclusion", str, "CheckRun", choices=CONCLUSIONS)
    for key in ("started_at", "completed_at"):
        value = field_of(body, key, str, "CheckRun")
        if value is not None:
            try:
                run[key] = iso(parse_iso(value))
            except ValueError as exc:
                raise validation("CheckRun", key, "invalid") from exc
    output = field_of(body, "output", dict, "CheckRun")
    if output is not None:
        title = field_of(output, "title", str, "CheckRun", required=True)
        summary = field_of(output, "summary", str, "CheckRun", required=True)
        text = field_of(output, "text", str, "CheckRun")
        run["output"] = {
            "title": title,
            "summary": summary,
            "text": text,
            "annotations_count": len(output.get("annotations") or []),
        }
    if status is not None:
        run["status"] = status
    if conclusion is not None:
        run["status"] = "completed"
        run["conclusion"] = conclusion
    if run["status"] == "completed":
        if run.get("conclusion") is None:
            raise validation("CheckRun", "conclusion", "missing_field")
        run["completed_at"] = run.get("completed_at") or ctx.b.now()
    else:
        run["conclusion"] = None
        run["completed_at"] = None
    if run["status"] == "in_progress" and not run.get("started_at"):
        run["started_at"] = ctx.b.now()


@route("POST", "/repos/<owner>/<repo>/check-runs")
def create_check_run(ctx: Ctx, owner: str, repo: str) -> Result:
    """POST /repos/{owner}/{repo}/check-runs (installation tokens only)."""
    full = full_name(ctx, owner, repo)
    app_id = _check_app(ctx, full)
    body = ctx.body()
    head = field_of(body, "head_sha", str, "CheckRun", required=True)
    sha = ctx.b.git(full).resolve(head) if len(head) >= 7 else None
    if sha is None:
        raise SandboxApiError(422, f"No commit found for SHA: {head}")
    with ctx.b.lock:
        repo_rec = ctx.b.repo(full)
        suites = repo_rec.setdefault("check_suites", {})
        suite = suites.setdefault(f"{app_id}:{sha}", ctx.b.store.new_id())
        run: dict[str, Any] = {
            "id": ctx.b.store.new_id(),
            "head_sha": sha,
            "app_id": app_id,
            "status": "queued",
            "conclusion": None,
            "started_at": ctx.b.now(),
            "completed_at": None,
            "output": {},
            "check_suite_id": suite,
            "created_at": ctx.b.now(),
        }
        _apply_check_fields(ctx, run, body, creating=True)
        repo_rec["check_runs"][str(run["id"])] = run
        ctx.b.store.save()
    return Result(201, render.check_run(ctx.b, ctx.urls, full, run))


def _run(ctx: Ctx, full: str, check_run_id: int) -> dict[str, Any]:
    run = ctx.b.repo(full)["check_runs"].get(str(check_run_id))
    if run is None:
        raise not_found()
    return run


@route("PATCH", "/repos/<owner>/<repo>/check-runs/<int:check_run_id>")
def update_check_run(ctx: Ctx, owner: str, repo: str, check_run_id: int) -> Result:
    """PATCH /repos/{owner}/{repo}/check-runs/{id} (only the app that created it)."""
    full = full_name(ctx, owner, repo)
    app_id = _check_app(ctx, full)
    body = ctx.body()
    with ctx.b.lock:
        run = _run(ctx, full, check_run_id)
        if run["app_id"] != app_id:
            raise SandboxApiError(
                403,
                f"Invalid app_id `{app_id}` - check run can only be modified by the GitHub App "
                "that created it.",
            )
        updated = dict(run)
        _apply_check_fields(ctx, updated, body, creating=False)
        run.update(updated)
        ctx.b.store.save()
    return Result(200, render.check_run(ctx.b, ctx.urls, full, run))


@route("GET", "/repos/<owner>/<repo>/check-runs/<int:check_run_id>")
def get_check_run(ctx: Ctx, owner: str, repo: str, check_run_id: int) -> Result:
    """GET /repos/{owner}/{repo}/check-runs/{id}."""
    full = full_name(ctx, owner, repo)
    return Result(200, render.check_run(ctx.b, ctx.urls, full, _run(ctx, full, check_run_id)))


@route("GET", "/repos/<owner>/<repo>/commits/<path:ref>/check-runs")
def list_check_runs(ctx: Ctx, owner: str, repo: str, ref: str) -> Paged:
    """GET /repos/{owner}/{repo}/commits/{ref}/check-runs (filter=latest by default)."""
    full = full_name(ctx, owner, repo)
    sha = resolve_commit(ctx, full, ref)
    runs = ctx.b.check_runs_for(full, sha)
    args = ctx.req.args
    if args.get("check_name"):
        runs = [r for r in runs if r["name"] == args["check_name"]]
    if args.get("status"):
        runs = [r for r in runs if r["status"] == args["status"]]
    if args.get("app_id"):
        try:
            wanted = int(args["app_id"])
        except ValueError as exc:
            raise validation("CheckRun", "app_id", "invalid") from exc
        runs = [r for r in runs if r["app_id"] == wanted]
    if args.get("filter", "latest") == "latest":
        seen: set[tuple[int, str]] = set()
        latest = []
        for r in runs:
            key = (r["app_id"], r["name"])
            if key not in seen:
                seen.add(key)
                latest.append(r)
        runs = latest
    return Paged(runs, lambda r: render.check_run(ctx.b, ctx.urls, full, r), wrap="check_runs")


def _write_file(ctx: Ctx, owner: str, repo: str, path: str, delete: bool) -> Result:
    full = full_name(ctx, owner, repo)
    if ctx.ident.kind == "anonymous":
        raise SandboxApiError(401, "Requires authentication")
    role = ctx.require(full, "write", "contents")
    body = ctx.body()
    message = field_of(body, "message", str, "Content", required=True)
    content = None if delete else field_of(body, "content", str, "Content", required=True)
    sha = field_of(body, "sha", str, "Content", required=delete)
    branch = field_of(body, "branch", str, "Content") or ctx.b.repo(full)["default_branch"]
    path = path.strip("/")
    g = ctx.b.git(full)
    with ctx.b.lock:
        tip = g.resolve(f"refs/heads/{branch}")
        if tip is None:
            raise not_found()
        existing = next((e for e in g.ls_tree(tip, path=path) if e["path"] == path), None)
        if delete and existing is None:
            raise not_found()
        if existing is not None and sha is None:
            raise validation("Content", "sha", "missing_field", '"sha" wasn\'t supplied.')
        if existing is not None and sha != existing["sha"]:
            raise SandboxApiError(409, f"{path} does not match {sha}")
        data: bytes | None = None
        if content is not None:
            try:
                data = base64.b64decode(content, validate=False)
            except ValueError as exc:
                raise validation("Content", "content", "invalid") from exc
        rule = ctx.b.repo(full)["protection"].get(branch)
        is_admin = role == "admin" and ctx.ident.kind == "user"
        if rule and (not is_admin or rule["enforce_admins"]):
            if rule["required_pull_request_reviews"] is not None:
                raise SandboxApiError(422, "Changes must be made through a pull request.")
            if rule["required_status_checks"] and rule["required_status_checks"]["checks"]:
                ctx_name = rule["required_status_checks"]["checks"][0]["context"]
                raise SandboxApiError(422, f'Required status check "{ctx_name}" is expected.')
        new = ctx.b.commit_files(full, branch, {path: data}, message, author=ctx.ident.login)
        info = g.commit_info(new)
        assert info is not None
        out_content = None
        if not delete:
            entry = next(e for e in g.ls_tree(new, path=path) if e["path"] == path)
            out_content = _content_entry(ctx, full, branch, entry, False)
    status = 200 if delete or existing is not None else 201
    return Result(
        status, {"content": out_content, "commit": render.git_commit(ctx.urls, full, info)}
    )


@route("PUT", "/repos/<owner>/<repo>/contents/<path:path>")
def put_contents(ctx: Ctx, owner: str, repo: str, path: str) -> Result:
    """PUT /repos/{owner}/{repo}/contents/{path} (create or update one file with a commit)."""
    return _write_file(ctx, owner, repo, path, delete=False)


@route("DELETE", "/repos/<owner>/<repo>/contents/<path:path>")
def delete_contents(ctx: Ctx, owner: str, repo: str, path: str) -> Result:
    """DELETE /repos/{owner}/{repo}/contents/{path} (sha required)."""
    return _write_file(ctx, owner, repo, path, delete=True)

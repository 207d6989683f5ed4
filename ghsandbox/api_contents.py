"""REST handlers for contents, commits and comparisons (reads and file writes)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

from . import render_objects
from .api_repos import full_name, resolve_commit
from .errors import SandboxApiError, not_found, validation
from .gittypes import EMPTY_TREE
from .http import paginate
from .routing import Ctx, Paged, Result, RouteList, field_of

ROUTES = RouteList()
route = ROUTES.route


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
    return Result(200, render_objects.commit(ctx.b, ctx.urls, full, info, files))


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
    return Paged(infos, lambda c: render_objects.commit(ctx.b, ctx.urls, full, c))


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
            "base_commit": render_objects.commit(ctx.b, ctx.urls, full, base_info),
            "merge_base_commit": render_objects.commit(ctx.b, ctx.urls, full, mb_info),
            "status": status,
            "ahead_by": ahead,
            "behind_by": behind,
            "total_commits": len(commits),
            "commits": [render_objects.commit(ctx.b, ctx.urls, full, c) for c in page],
            "files": [render_objects.diff_file(ctx.urls, full, head, f) for f in files[:300]],
        },
    )


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
        status, {"content": out_content, "commit": render_objects.git_commit(ctx.urls, full, info)}
    )


@route("PUT", "/repos/<owner>/<repo>/contents/<path:path>")
def put_contents(ctx: Ctx, owner: str, repo: str, path: str) -> Result:
    """PUT /repos/{owner}/{repo}/contents/{path} (create or update one file with a commit)."""
    return _write_file(ctx, owner, repo, path, delete=False)


@route("DELETE", "/repos/<owner>/<repo>/contents/<path:path>")
def delete_contents(ctx: Ctx, owner: str, repo: str, path: str) -> Result:
    """DELETE /repos/{owner}/{repo}/contents/{path} (sha required)."""
    return _write_file(ctx, owner, repo, path, delete=True)

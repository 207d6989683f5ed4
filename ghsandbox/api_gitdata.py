"""REST handlers for git data: refs, commits, trees and blobs (enough for a revert via the API)."""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import quote

from . import render, render_objects
from .api_repos import full_name
from .clock import parse_iso
from .errors import SandboxApiError, not_found, validation
from .gittypes import Person
from .protection import effective_rule
from .routing import Ctx, Paged, Result, RouteList, field_of

ROUTES = RouteList()
route = ROUTES.route

MODES = ("100644", "100755", "040000", "160000", "120000")


def _ref_obj(ctx: Ctx, full: str, ref: str, sha: str) -> dict[str, Any]:
    typ = ctx.b.git(full).object_type(sha) or "commit"
    return {
        "ref": ref,
        "node_id": render.node_id("Ref", f"{full}:{ref}"),
        "url": f"{ctx.urls.api}/repos/{full}/git/{quote(ref)}",
        "object": {"type": typ, "sha": sha, "url": f"{ctx.urls.api}/repos/{full}/git/{typ}s/{sha}"},
    }


def _writer(ctx: Ctx, full: str) -> str:
    if ctx.ident.kind == "anonymous":
        raise SandboxApiError(401, "Requires authentication")
    return ctx.require(full, "write", "contents")


def _refs(ctx: Ctx, full: str) -> dict[str, str]:
    return {
        k: v for k, v in ctx.b.git(full).refs("refs/").items() if not k.startswith("refs/pull/")
    } | {k: v for k, v in ctx.b.git(full).refs("refs/pull/").items()}


@route("GET", "/repos/<owner>/<repo>/git/ref/<path:ref>")
def get_ref(ctx: Ctx, owner: str, repo: str, ref: str) -> Result:
    """GET /repos/{owner}/{repo}/git/ref/{ref} (e.g. heads/main)."""
    full = full_name(ctx, owner, repo)
    name = ref if ref.startswith("refs/") else f"refs/{ref}"
    sha = ctx.b.git(full).refs(name).get(name)
    if sha is None:
        raise not_found()
    return Result(200, _ref_obj(ctx, full, name, sha))


@route("GET", "/repos/<owner>/<repo>/git/refs")
def list_refs(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/git/refs."""
    full = full_name(ctx, owner, repo)
    items = sorted(_refs(ctx, full).items())
    return Paged(items, lambda it: _ref_obj(ctx, full, it[0], it[1]))


@route("GET", "/repos/<owner>/<repo>/git/refs/<path:ref>")
def get_refs_prefix(ctx: Ctx, owner: str, repo: str, ref: str) -> Result:
    """GET /repos/{owner}/{repo}/git/refs/{ref}: exact ref, else the refs under it."""
    full = full_name(ctx, owner, repo)
    name = f"refs/{ref}"
    refs = _refs(ctx, full)
    if name in refs:
        return Result(200, _ref_obj(ctx, full, name, refs[name]))
    under = [(k, v) for k, v in sorted(refs.items()) if k.startswith(name)]
    if not under:
        raise not_found()
    return Result(200, [_ref_obj(ctx, full, k, v) for k, v in under])


@route("GET", "/repos/<owner>/<repo>/git/matching-refs/<path:ref>")
def matching_refs(ctx: Ctx, owner: str, repo: str, ref: str) -> Paged:
    """GET /repos/{owner}/{repo}/git/matching-refs/{ref}."""
    full = full_name(ctx, owner, repo)
    name = f"refs/{ref}"
    items = [(k, v) for k, v in sorted(_refs(ctx, full).items()) if k.startswith(name)]
    return Paged(items, lambda it: _ref_obj(ctx, full, it[0], it[1]))


@route("POST", "/repos/<owner>/<repo>/git/refs")
def create_ref(ctx: Ctx, owner: str, repo: str) -> Result:
    """POST /repos/{owner}/{repo}/git/refs {ref, sha}."""
    full = full_name(ctx, owner, repo)
    _writer(ctx, full)
    body = ctx.body()
    ref = field_of(body, "ref", str, "Reference", required=True)
    sha = field_of(body, "sha", str, "Reference", required=True)
    if not ref.startswith("refs/") or ref.count("/") < 2:
        raise SandboxApiError(
            422, "Reference name must start with 'refs/' and have at least two slashes."
        )
    g = ctx.b.git(full)
    with ctx.b.lock:
        if g.refs(ref).get(ref):
            raise SandboxApiError(422, "Reference already exists")
        if len(sha) != 40 or g.object_type(sha) is None:
            raise SandboxApiError(422, "Object does not exist")
        g.update_ref(ref, sha, "0" * 40)
        ctx.b.after_push(full)
    return Result(201, _ref_obj(ctx, full, ref, sha))


@route("PATCH", "/repos/<owner>/<repo>/git/refs/<path:ref>")
def update_ref(ctx: Ctx, owner: str, repo: str, ref: str) -> Result:
    """PATCH /repos/{owner}/{repo}/git/refs/{ref} {sha, force} (non-fast-forward needs force)."""
    full = full_name(ctx, owner, repo)
    role = _writer(ctx, full)
    body = ctx.body()
    sha = field_of(body, "sha", str, "Reference", required=True)
    force = field_of(body, "force", bool, "Reference", default=False)
    name = f"refs/{ref}"
    g = ctx.b.git(full)
    with ctx.b.lock:
        old = g.refs(name).get(name)
        if old is None:
            raise SandboxApiError(422, "Reference does not exist")
        if len(sha) != 40 or g.object_type(sha) != "commit":
            raise SandboxApiError(422, "Object does not exist")
        fast_forward = g.is_ancestor(old, sha)
        if not fast_forward and not force:
            raise SandboxApiError(422, "Update is not a fast forward")
        if name.startswith("refs/heads/"):
            ctx.b.check_ref_update(
                full,
                name.removeprefix("refs/heads/"),
                old,
                sha,
                fast_forward,
                is_admin=role == "admin" and ctx.ident.kind == "user",
            )
        g.update_ref(name, sha, old)
        ctx.b.after_push(full)
    return Result(200, _ref_obj(ctx, full, name, sha))


@route("DELETE", "/repos/<owner>/<repo>/git/refs/<path:ref>")
def delete_ref(ctx: Ctx, owner: str, repo: str, ref: str) -> Result:
    """DELETE /repos/{owner}/{repo}/git/refs/{ref}."""
    full = full_name(ctx, owner, repo)
    _writer(ctx, full)
    name = f"refs/{ref}"
    g = ctx.b.git(full)
    with ctx.b.lock:
        if g.refs(name).get(name) is None:
            raise SandboxApiError(422, "Reference does not exist")
        branch = name.removeprefix("refs/heads/")
        rule = effective_rule(ctx.b.repo(full), branch)
        if name.startswith("refs/heads/") and rule and not rule["allow_deletions"]:
            raise SandboxApiError(422, "Cannot delete this protected branch")
        g.delete_ref(name)
        ctx.b.after_push(full)
    return Result(204, None)


# -- commits -------------------------------------------------------------------------------


@route("GET", "/repos/<owner>/<repo>/git/commits/<sha>")
def get_git_commit(ctx: Ctx, owner: str, repo: str, sha: str) -> Result:
    """GET /repos/{owner}/{repo}/git/commits/{sha}."""
    full = full_name(ctx, owner, repo)
    g = ctx.b.git(full)
    if g.object_type(sha) != "commit":
        raise not_found()
    info = g.commit_info(sha)
    assert info is not None
    return Result(200, render_objects.git_commit(ctx.urls, full, info))


def _person(ctx: Ctx, value: Any, name: str) -> tuple[Person, Any]:
    if value is None:
        p = ctx.b.person(ctx.ident.login)
        return p, ctx.b.clock.now()
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("name"), str)
        or not isinstance(value.get("email"), str)
    ):
        raise validation("Commit", name, "invalid")
    when = ctx.b.clock.now()
    if value.get("date"):
        try:
            when = parse_iso(str(value["date"]))
        except ValueError as exc:
            raise validation("Commit", f"{name}.date", "invalid") from exc
    return Person(value["name"], value["email"]), when


@route("POST", "/repos/<owner>/<repo>/git/commits")
def create_git_commit(ctx: Ctx, owner: str, repo: str) -> Result:
    """POST /repos/{owner}/{repo}/git/commits {message, tree, parents, author, committer}."""
    full = full_name(ctx, owner, repo)
    _writer(ctx, full)
    body = ctx.body()
    message = field_of(body, "message", str, "Commit", required=True)
    tree = field_of(body, "tree", str, "Commit", required=True)
    parents = field_of(body, "parents", list, "Commit", default=[])
    g = ctx.b.git(full)
    if g.object_type(tree) != "tree":
        raise validation("Commit", "tree", "invalid", "Tree SHA does not exist")
    for p in parents:
        if not isinstance(p, str) or g.object_type(p) != "commit":
            raise validation(
                "Commit",
                "parents",
                "invalid",
                "Parent SHA does not exist or is not a commit object",
            )
    author, when = _person(ctx, body.get("author"), "author")
    committer, cwhen = (
        _person(ctx, body.get("committer"), "committer")
        if body.get("committer")
        else (author, when)
    )
    sha = g.commit_tree(tree, parents, message, author, when, committer, cwhen)
    info = g.commit_info(sha)
    assert info is not None
    return Result(201, render_objects.git_commit(ctx.urls, full, info))


# -- trees and blobs -----------------------------------------------------------------------


def _tree_body(ctx: Ctx, full: str, sha: str, recursive: bool) -> dict[str, Any]:
    g = ctx.b.git(full)
    entries = g.ls_tree(sha, recursive=recursive)
    tree = []
    for e in entries:
        item: dict[str, Any] = {
            "path": e["path"],
            "mode": e["mode"],
            "type": e["type"],
            "sha": e["sha"],
        }
        if e["type"] == "blob":
            item["size"] = e["size"]
            item["url"] = f"{ctx.urls.api}/repos/{full}/git/blobs/{e['sha']}"
        elif e["type"] == "tree":
            item["url"] = f"{ctx.urls.api}/repos/{full}/git/trees/{e['sha']}"
        tree.append(item)
    return {
        "sha": sha,
        "url": f"{ctx.urls.api}/repos/{full}/git/trees/{sha}",
        "tree": tree,
        "truncated": False,
    }


@route("GET", "/repos/<owner>/<repo>/git/trees/<path:tree_sha>")
def get_tree(ctx: Ctx, owner: str, repo: str, tree_sha: str) -> Result:
    """GET /repos/{owner}/{repo}/git/trees/{sha}?recursive=1 (tree/commit sha or branch)."""
    full = full_name(ctx, owner, repo)
    g = ctx.b.git(full)
    typ = g.object_type(tree_sha) if len(tree_sha) == 40 else None
    if typ == "commit" or typ is None:
        commit = g.resolve_ref_or_sha(tree_sha)
        if commit is None:
            raise not_found()
        tree_sha = g.out("rev-parse", f"{commit}^{{tree}}")
    elif typ != "tree":
        raise not_found()
    recursive = ctx.req.args.get("recursive") not in (None, "", "0", "false")
    return Result(200, _tree_body(ctx, full, tree_sha, recursive))


@route("POST", "/repos/<owner>/<repo>/git/trees")
def create_tree(ctx: Ctx, owner: str, repo: str) -> Result:
    """POST /repos/{owner}/{repo}/git/trees {tree: [...], base_tree}."""
    full = full_name(ctx, owner, repo)
    _writer(ctx, full)
    body = ctx.body()
    entries = field_of(body, "tree", list, "Tree", required=True)
    base_tree = field_of(body, "base_tree", str, "Tree")
    g = ctx.b.git(full)
    if base_tree is not None:
        typ = g.object_type(base_tree)
        if typ == "commit":
            base_tree = g.out("rev-parse", f"{base_tree}^{{tree}}")
        elif typ != "tree":
            raise validation("Tree", "base_tree", "invalid", "base_tree is not a valid tree oid")
    clean = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise validation("Tree", f"tree[{i}]", "invalid")
        path = field_of(e, "path", str, "Tree", required=True)
        mode = field_of(e, "mode", str, "Tree", required=True, choices=MODES)
        typ = field_of(e, "type", str, "Tree", default="blob", choices=("blob", "tree", "commit"))
        if "content" in e:
            content = field_of(e, "content", str, "Tree")
            clean.append({"path": path, "mode": mode, "type": typ, "content": content})
            continue
        sha = e.get("sha", "missing")
        if sha == "missing":
            raise validation("Tree", f"tree[{i}].sha", "missing_field")
        if sha is not None and (
            not isinstance(sha, str) or (typ != "commit" and g.object_type(sha) is None)
        ):
            raise validation("Tree", f"tree[{i}].sha", "invalid")
        clean.append({"path": path, "mode": mode, "type": typ, "sha": sha})
    sha = g.build_tree(base_tree, clean)
    return Result(201, _tree_body(ctx, full, sha, recursive=False))


@route("GET", "/repos/<owner>/<repo>/git/blobs/<sha>")
def get_blob(ctx: Ctx, owner: str, repo: str, sha: str) -> Result:
    """GET /repos/{owner}/{repo}/git/blobs/{sha} (base64)."""
    full = full_name(ctx, owner, repo)
    g = ctx.b.git(full)
    if g.object_type(sha) != "blob":
        raise not_found()
    data = g.cat_blob(sha)
    enc = base64.b64encode(data).decode()
    return Result(
        200,
        {
            "sha": sha,
            "node_id": render.node_id("Blob", sha),
            "size": len(data),
            "url": f"{ctx.urls.api}/repos/{full}/git/blobs/{sha}",
            "content": "\n".join(enc[i : i + 60] for i in range(0, len(enc), 60))
            + ("\n" if enc else ""),
            "encoding": "base64",
        },
    )


@route("POST", "/repos/<owner>/<repo>/git/blobs")
def create_blob(ctx: Ctx, owner: str, repo: str) -> Result:
    """POST /repos/{owner}/{repo}/git/blobs {content, encoding: utf-8|base64}."""
    full = full_name(ctx, owner, repo)
    _writer(ctx, full)
    body = ctx.body()
    content = field_of(body, "content", str, "Blob", required=True)
    encoding = field_of(body, "encoding", str, "Blob", default="utf-8", choices=("utf-8", "base64"))
    if encoding == "base64":
        try:
            data = base64.b64decode(content, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise validation("Blob", "content", "invalid") from exc
    else:
        data = content.encode("utf-8")
    sha = ctx.b.git(full).hash_blob(data)
    return Result(201, {"sha": sha, "url": f"{ctx.urls.api}/repos/{full}/git/blobs/{sha}"})

"""REST handlers for labels: a repository's labels and the labels on an issue or pull."""

from __future__ import annotations

from typing import Any

from . import render
from .api_repos import full_name
from .errors import SandboxApiError, not_found, validation
from .routing import Ctx, Paged, Result, RouteList, field_of

ROUTES = RouteList()
route = ROUTES.route


def label_names(value: Any) -> list[str]:
    """The label names of a request body's ``labels`` (strings or ``{"name": ...}``); else 422."""
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
    return label_names(data)


def _need_triage(ctx: Ctx, full: str) -> None:
    if ctx.ident.kind == "anonymous":
        raise SandboxApiError(401, "Requires authentication")
    ctx.require(full, "triage", "issues")


@route("GET", "/repos/<owner>/<repo>/issues/<int:number>/labels")
def list_issue_labels(ctx: Ctx, owner: str, repo: str, number: int) -> Paged:
    """GET /repos/{owner}/{repo}/issues/{number}/labels."""
    full = full_name(ctx, owner, repo)
    rec = ctx.b.issue(full, number)
    return Paged(_labels_of(ctx, full, rec))


@route("POST", "/repos/<owner>/<repo>/issues/<int:number>/labels")
def add_issue_labels(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """POST /repos/{owner}/{repo}/issues/{number}/labels (object or bare array body)."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    names = _label_body(ctx)
    rec = ctx.b.issue(full, number)
    ctx.b.add_labels(full, number, names, ctx.actor)
    return Result(200, _labels_of(ctx, full, rec))


@route("PUT", "/repos/<owner>/<repo>/issues/<int:number>/labels")
def set_issue_labels(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """PUT /repos/{owner}/{repo}/issues/{number}/labels (replace the set)."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    names = _label_body(ctx)
    with ctx.b.lock:
        rec = ctx.b.issue(full, number)
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
    rec = ctx.b.issue(full, number)
    ctx.b.remove_label(full, number, name, ctx.actor)
    return Result(200, _labels_of(ctx, full, rec))


@route("DELETE", "/repos/<owner>/<repo>/issues/<int:number>/labels")
def clear_issue_labels(ctx: Ctx, owner: str, repo: str, number: int) -> Result:
    """DELETE /repos/{owner}/{repo}/issues/{number}/labels."""
    full = full_name(ctx, owner, repo)
    _need_triage(ctx, full)
    with ctx.b.lock:
        rec = ctx.b.issue(full, number)
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

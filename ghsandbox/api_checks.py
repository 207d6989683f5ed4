"""REST handlers for commit statuses and check runs."""

from __future__ import annotations

from typing import Any

from . import render, render_objects
from .api_repos import full_name, resolve_commit
from .clock import iso, parse_iso
from .errors import SandboxApiError, not_found, validation
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
    return Result(201, render_objects.status(ctx.b, ctx.urls, full, s))


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
            "statuses": [render_objects.status(ctx.b, ctx.urls, full, s) for s in latest],
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
    return Paged(
        ctx.b.statuses_for(full, sha), lambda s: render_objects.status(ctx.b, ctx.urls, full, s)
    )


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
    return Result(201, render_objects.check_run(ctx.b, ctx.urls, full, run))


def _run(ctx: Ctx, full: str, check_run_id: int) -> dict[str, Any]:
    run: dict[str, Any] | None = ctx.b.repo(full)["check_runs"].get(str(check_run_id))
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
    return Result(200, render_objects.check_run(ctx.b, ctx.urls, full, run))


@route("GET", "/repos/<owner>/<repo>/check-runs/<int:check_run_id>")
def get_check_run(ctx: Ctx, owner: str, repo: str, check_run_id: int) -> Result:
    """GET /repos/{owner}/{repo}/check-runs/{id}."""
    full = full_name(ctx, owner, repo)
    return Result(
        200, render_objects.check_run(ctx.b, ctx.urls, full, _run(ctx, full, check_run_id))
    )


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
    return Paged(
        runs, lambda r: render_objects.check_run(ctx.b, ctx.urls, full, r), wrap="check_runs"
    )

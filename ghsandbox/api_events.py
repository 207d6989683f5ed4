"""REST handler for the repository events feed, rendered in GitHub's event shapes."""

from __future__ import annotations

from typing import Any

from .events import POLL_INTERVAL, FeedEvent
from .render import issue as render_issue
from .render import user as render_user
from .render_objects import comment as render_comment
from .routing import Ctx, Paged, RouteList

ROUTES = RouteList()
route = ROUTES.route


@route("GET", "/repos/<owner>/<repo>/events")
def list_repo_events(ctx: Ctx, owner: str, repo: str) -> Paged:
    """GET /repos/{owner}/{repo}/events: newest first, at most 300, with X-Poll-Interval."""
    full: str = ctx.b.repo(f"{owner}/{repo}")["full_name"]  # 404 when unknown
    ctx.require(full, "read")  # 404 when the caller may not see it
    events = ctx.b.events.visible(full, ctx.b.clock.window_time())
    return Paged(
        events,
        lambda e: _render(ctx, e),
        headers={"X-Poll-Interval": str(POLL_INTERVAL)},
    )


def _actor(ctx: Ctx, login: str) -> dict[str, Any]:
    u = render_user(ctx.b, ctx.urls, login) or {}
    return {
        "id": u.get("id", 0),
        "login": login,
        "display_login": login,
        "gravatar_id": "",
        "url": u.get("url", ""),
        "avatar_url": u.get("avatar_url", ""),
    }


def _render(ctx: Ctx, e: FeedEvent) -> dict[str, Any]:
    r = ctx.b.repo(e.full)
    out: dict[str, Any] = {
        "id": str(e.id),
        "type": e.type,
        "actor": _actor(ctx, e.actor),
        "repo": {"id": r["id"], "name": e.full, "url": f"{ctx.urls.api}/repos/{e.full}"},
        "payload": _payload(ctx, e, r["id"]),
        "public": not r.get("private", False),
        "created_at": e.created_at,
    }
    owner = ctx.b.data["users"].get(r["owner"])
    if owner and owner["type"] == "Organization":
        out["org"] = _actor(ctx, r["owner"])
    return out


def _payload(ctx: Ctx, e: FeedEvent, repo_id: int) -> dict[str, Any]:
    p = e.payload
    if e.type == "PushEvent":
        return {
            "repository_id": repo_id,
            "push_id": e.id,
            "ref": p["ref"],
            "head": p["head"],
            "before": p["before"],
        }
    rec = ctx.b.issue(e.full, p["number"])
    if e.type == "PullRequestEvent":
        return {"action": p["action"], "number": p["number"], "pull_request": _pr_min(ctx, e, rec)}
    issue = render_issue(ctx.b, ctx.urls, e.full, rec, ctx.cache)
    if e.type == "IssueCommentEvent":
        c = ctx.b.comment(e.full, p["comment_id"])
        body = render_comment(ctx.b, ctx.urls, e.full, c, ctx.cache)
        return {"action": p["action"], "issue": issue, "comment": body}
    return {"action": p["action"], "issue": issue}


def _pr_min(ctx: Ctx, e: FeedEvent, rec: dict[str, Any]) -> dict[str, Any]:
    pr = rec["pull"]
    r = ctx.b.repo(e.full)
    repo = {"id": r["id"], "url": f"{ctx.urls.api}/repos/{e.full}", "name": e.full.split("/")[1]}
    return {
        "id": pr["id"],
        "number": rec["number"],
        "url": f"{ctx.urls.api}/repos/{e.full}/pulls/{rec['number']}",
        "head": {"ref": pr["head_ref"], "sha": pr["head_sha"], "repo": repo},
        "base": {"ref": pr["base_ref"], "sha": pr["base_sha"], "repo": repo},
    }

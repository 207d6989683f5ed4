"""GitHub's JSON shapes for commits and diffs, Apps, checks, statuses, comments and events."""

from __future__ import annotations

from typing import Any

from .clock import iso
from .core import Backend
from .gittypes import CommitInfo
from .render import RepoCache, Urls, author_association, node_id, reaction_rollup, user


def diff_file(u: Urls, full: str, sha: str, f: dict[str, Any]) -> dict[str, Any]:
    """A diff-entry object."""
    from urllib.parse import quote

    path = quote(f["filename"])
    out = {
        "sha": f["sha"],
        "filename": f["filename"],
        "status": f["status"],
        "additions": f["additions"],
        "deletions": f["deletions"],
        "changes": f["changes"],
        "blob_url": f"{u.web}/{full}/blob/{sha}/{path}",
        "raw_url": f"{u.web}/{full}/raw/{sha}/{path}",
        "contents_url": f"{u.api}/repos/{full}/contents/{path}?ref={sha}",
    }
    if "patch" in f:
        out["patch"] = f["patch"]
    if "previous_filename" in f:
        out["previous_filename"] = f["previous_filename"]
    return out


def git_person(p: Any, when: Any) -> dict[str, Any]:
    """A git author/committer object."""
    return {"name": p.name, "email": p.email, "date": iso(when)}


def _verification() -> dict[str, Any]:
    return {
        "verified": False,
        "reason": "unsigned",
        "signature": None,
        "payload": None,
        "verified_at": None,
    }


def git_commit(u: Urls, full: str, c: CommitInfo) -> dict[str, Any]:
    """A git-commit object (``/git/commits``)."""
    api = f"{u.api}/repos/{full}/git/commits/{c.sha}"
    return {
        "sha": c.sha,
        "node_id": node_id("Commit", c.sha),
        "url": api,
        "html_url": f"{u.web}/{full}/commit/{c.sha}",
        "author": git_person(c.author, c.author_date),
        "committer": git_person(c.committer, c.committer_date),
        "message": c.message,
        "tree": {"sha": c.tree, "url": f"{u.api}/repos/{full}/git/trees/{c.tree}"},
        "parents": [
            {
                "sha": p,
                "url": f"{u.api}/repos/{full}/git/commits/{p}",
                "html_url": f"{u.web}/{full}/commit/{p}",
            }
            for p in c.parents
        ],
        "verification": _verification(),
    }


def _login_for_email(b: Backend, email: str) -> str | None:
    users: dict[str, dict[str, Any]] = b.data["users"]
    for login, rec in users.items():
        if rec.get("email") == email or email == f"{rec['id']}+{login}@users.noreply.github.com":
            return login
    return None


def commit(
    b: Backend, u: Urls, full: str, c: CommitInfo, files: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A commit object (``/commits/{sha}``, PR commits, compare); ``files`` adds stats and files."""
    api = f"{u.api}/repos/{full}/commits/{c.sha}"
    out: dict[str, Any] = {
        "sha": c.sha,
        "node_id": node_id("Commit", c.sha),
        "commit": {
            "author": git_person(c.author, c.author_date),
            "committer": git_person(c.committer, c.committer_date),
            "message": c.message,
            "tree": {"sha": c.tree, "url": f"{u.api}/repos/{full}/git/trees/{c.tree}"},
            "url": f"{u.api}/repos/{full}/git/commits/{c.sha}",
            "comment_count": 0,
            "verification": _verification(),
        },
        "url": api,
        "html_url": f"{u.web}/{full}/commit/{c.sha}",
        "comments_url": f"{api}/comments",
        "author": user(b, u, _login_for_email(b, c.author.email)),
        "committer": user(b, u, _login_for_email(b, c.committer.email)),
        "parents": [
            {
                "sha": p,
                "url": f"{u.api}/repos/{full}/commits/{p}",
                "html_url": f"{u.web}/{full}/commit/{p}",
            }
            for p in c.parents
        ],
    }
    if files is not None:
        adds = sum(f["additions"] for f in files)
        dels = sum(f["deletions"] for f in files)
        out["stats"] = {"total": adds + dels, "additions": adds, "deletions": dels}
        out["files"] = [diff_file(u, full, c.sha, f) for f in files]
    return out


def app(b: Backend, u: Urls, a: dict[str, Any]) -> dict[str, Any]:
    """An integration (GitHub App) object."""
    return {
        "id": a["id"],
        "slug": a["slug"],
        "node_id": node_id("App", a["id"]),
        "client_id": f"Iv1.{a['id']:016x}",
        "owner": user(b, u, a["owner"])
        if a.get("owner") in b.data["users"]
        else user(b, u, a["slug"]),
        "name": a["name"],
        "description": a.get("description") or "",
        "external_url": f"{u.web}/apps/{a['slug']}",
        "html_url": f"{u.web}/apps/{a['slug']}",
        "created_at": a["created_at"],
        "updated_at": a["created_at"],
        "permissions": dict(a.get("permissions") or {}),
        "events": list(a.get("events") or []),
        "installations_count": sum(
            1 for i in b.data["installations"].values() if i["app_id"] == a["id"]
        ),
    }


def installation(b: Backend, u: Urls, inst: dict[str, Any]) -> dict[str, Any]:
    """An installation object."""
    a = b.data["apps"][str(inst["app_id"])]
    acct = b.data["users"].get(inst["account"])
    return {
        "id": inst["id"],
        "account": user(b, u, inst["account"]),
        "access_tokens_url": f"{u.api}/app/installations/{inst['id']}/access_tokens",
        "repositories_url": f"{u.api}/installation/repositories",
        "html_url": f"{u.web}/organizations/{inst['account']}/settings/installations/{inst['id']}",
        "app_id": a["id"],
        "client_id": f"Iv1.{a['id']:016x}",
        "app_slug": a["slug"],
        "target_id": acct["id"] if acct else 0,
        "target_type": acct["type"] if acct else "Organization",
        "permissions": dict(a.get("permissions") or {}),
        "events": list(a.get("events") or []),
        "repository_selection": "all" if inst["repositories"] == "all" else "selected",
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "created_at": inst["created_at"],
        "updated_at": inst["created_at"],
        "suspended_by": None,
        "suspended_at": None,
    }


def check_run(b: Backend, u: Urls, full: str, r: dict[str, Any]) -> dict[str, Any]:
    """A check-run object with its ``app``."""
    api = f"{u.api}/repos/{full}/check-runs/{r['id']}"
    a = b.data["apps"].get(str(r["app_id"]))
    return {
        "id": r["id"],
        "head_sha": r["head_sha"],
        "node_id": node_id("CheckRun", r["id"]),
        "external_id": r.get("external_id") or "",
        "url": api,
        "html_url": f"{u.web}/{full}/runs/{r['id']}",
        "details_url": r.get("details_url") or f"{u.web}/{full}/runs/{r['id']}",
        "status": r["status"],
        "conclusion": r["conclusion"],
        "started_at": r["started_at"],
        "completed_at": r["completed_at"],
        "output": {
            "title": r["output"].get("title"),
            "summary": r["output"].get("summary"),
            "text": r["output"].get("text"),
            "annotations_count": r["output"].get("annotations_count", 0),
            "annotations_url": f"{api}/annotations",
        },
        "name": r["name"],
        "check_suite": {"id": r["check_suite_id"]},
        "app": app(b, u, a) if a else None,
        "pull_requests": [],
    }


def status(b: Backend, u: Urls, full: str, s: dict[str, Any]) -> dict[str, Any]:
    """A commit status object."""
    return {
        "url": f"{u.api}/repos/{full}/statuses/{s['sha']}",
        "avatar_url": f"{u.web}/avatars/u/{b.data['users'].get(s['creator'], {}).get('id', 0)}?v=4",
        "id": s["id"],
        "node_id": node_id("StatusContext", s["id"]),
        "state": s["state"],
        "description": s["description"],
        "target_url": s["target_url"],
        "context": s["context"],
        "created_at": s["created_at"],
        "updated_at": s["updated_at"],
        "creator": user(b, u, s["creator"]),
    }


def comment(
    b: Backend, u: Urls, full: str, c: dict[str, Any], cache: RepoCache | None = None
) -> dict[str, Any]:
    """An issue comment object."""
    api = f"{u.api}/repos/{full}/issues/comments/{c['id']}"
    rec = b.repo(full)["issues"][str(c["issue"])]
    kind = "pull" if rec["pull"] else "issues"
    return {
        "id": c["id"],
        "node_id": node_id("IssueComment", c["id"]),
        "url": api,
        "html_url": f"{u.web}/{full}/{kind}/{c['issue']}#issuecomment-{c['id']}",
        "body": c["body"],
        "user": (cache or RepoCache(b, u)).user(c["user"]),
        "created_at": c["created_at"],
        "updated_at": c["updated_at"],
        "issue_url": f"{u.api}/repos/{full}/issues/{c['issue']}",
        "author_association": author_association(b, full, c["user"]),
        "performed_via_github_app": None,
        "reactions": reaction_rollup(b, u, full, "comment", c["id"], api),
    }


def reaction(b: Backend, u: Urls, r: dict[str, Any]) -> dict[str, Any]:
    """A reaction object."""
    return {
        "id": r["id"],
        "node_id": node_id("Reaction", r["id"]),
        "user": user(b, u, r["user"]),
        "content": r["content"],
        "created_at": r["created_at"],
    }


def event(b: Backend, u: Urls, full: str, e: dict[str, Any]) -> dict[str, Any]:
    """An issue event object."""
    out: dict[str, Any] = {
        "id": e["id"],
        "node_id": node_id("IssueEvent", e["id"]),
        "url": f"{u.api}/repos/{full}/issues/events/{e['id']}",
        "actor": user(b, u, e["actor"]),
        "event": e["event"],
        "commit_id": e.get("commit_id"),
        "commit_url": f"{u.api}/repos/{full}/commits/{e['commit_id']}"
        if e.get("commit_id")
        else None,
        "created_at": e["created_at"],
        "performed_via_github_app": None,
    }
    if "label" in e:
        out["label"] = dict(e["label"])
    return out

"""GitHub's REST shapes for users, repositories, labels, issues and pulls (as PyGithub parses)."""

from __future__ import annotations

import base64
import functools
import zlib
from dataclasses import dataclass
from typing import Any

from .core import Backend
from .http import Fragments


@dataclass(frozen=True)
class Urls:
    """Where the client reached us: ``api`` (REST root) and ``web`` (html_url root)."""

    api: str
    web: str


@functools.lru_cache(maxsize=65536)
def node_id(kind: str, ident: int | str) -> str:
    """A legacy-style GraphQL node id (opaque, stable)."""
    raw = f"0{len(kind)}:{kind}{ident}".encode()
    return base64.b64encode(raw).decode().rstrip("=")


_USERS: dict[tuple[Any, ...], dict[str, Any]] = {}


def user(b: Backend, u: Urls, login: str | None) -> dict[str, Any] | None:
    """A simple-user object (None for a null user); a fresh dict the caller may change."""
    if login is None:
        return None
    rec = b.data["users"].get(login) or {
        "login": login,
        "id": 10000000 + zlib.crc32(login.encode()) % 1000000,
        "type": "User",
    }
    key = (u.api, u.web, login, rec["id"], rec["type"], bool(rec.get("site_admin", False)))
    hit = _USERS.get(key)
    if hit is None:
        if len(_USERS) >= 10_000:
            _USERS.clear()
        hit = _USERS[key] = _user(u, login, rec)
    return dict(hit)


def _user(u: Urls, login: str, rec: dict[str, Any]) -> dict[str, Any]:
    api = f"{u.api}/users/{login}"
    typ = rec["type"]
    return {
        "login": login,
        "id": rec["id"],
        "node_id": node_id("Bot" if typ == "Bot" else "User", rec["id"]),
        "avatar_url": f"{u.web}/avatars/u/{rec['id']}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{u.web}/{login.removesuffix('[bot]')}"
        if typ != "Bot"
        else f"{u.web}/apps/{login.removesuffix('[bot]')}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": typ,
        "user_view_type": "public",
        "site_admin": bool(rec.get("site_admin", False)),
    }


def full_user(b: Backend, u: Urls, login: str, private: bool = False) -> dict[str, Any]:
    """A public-user (or private-user, for ``GET /user``) object."""
    rec = b.data["users"][login]
    out = user(b, u, login)
    assert out is not None
    owned = [r for r in b.data["repos"].values() if r["owner"] == login]
    out.update(
        {
            "name": rec.get("name"),
            "company": None,
            "blog": "",
            "location": None,
            "email": rec.get("email"),
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "public_repos": sum(1 for r in owned if not r["private"]),
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": rec["created_at"],
            "updated_at": rec["created_at"],
        }
    )
    if private:
        out.update(
            {
                "private_gists": 0,
                "total_private_repos": sum(1 for r in owned if r["private"]),
                "owned_private_repos": sum(1 for r in owned if r["private"]),
                "disk_usage": 0,
                "collaborators": 0,
                "two_factor_authentication": True,
                "plan": {
                    "name": "free",
                    "space": 976562499,
                    "private_repos": 10000,
                    "collaborators": 0,
                },
            }
        )
    return out


def repo(
    b: Backend, u: Urls, r: dict[str, Any], full: bool = True, viewer_perm: str | None = None
) -> dict[str, Any]:
    """A repository (full-repository when ``full``)."""
    fn = r["full_name"]
    api = f"{u.api}/repos/{fn}"
    host = u.web.split("://", 1)[-1]
    open_count = sum(1 for i in r["issues"].values() if i["state"] == "open" and i["pull"] is None)
    out: dict[str, Any] = {
        "id": r["id"],
        "node_id": node_id("Repository", r["id"]),
        "name": r["name"],
        "full_name": fn,
        "private": r["private"],
        "owner": user(b, u, r["owner"]),
        "html_url": f"{u.web}/{fn}",
        "description": r["description"],
        "fork": False,
        "url": api,
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        "assignees_url": f"{api}/assignees{{/user}}",
        "blobs_url": f"{api}/git/blobs{{/sha}}",
        "branches_url": f"{api}/branches{{/branch}}",
        "collaborators_url": f"{api}/collaborators{{/collaborator}}",
        "comments_url": f"{api}/comments{{/number}}",
        "commits_url": f"{api}/commits{{/sha}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "contributors_url": f"{api}/contributors",
        "deployments_url": f"{api}/deployments",
        "downloads_url": f"{api}/downloads",
        "events_url": f"{api}/events",
        "forks_url": f"{api}/forks",
        "git_commits_url": f"{api}/git/commits{{/sha}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "git_tags_url": f"{api}/git/tags{{/sha}}",
        "git_url": f"git://{host}/{fn}.git",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "issue_events_url": f"{api}/issues/events{{/number}}",
        "issues_url": f"{api}/issues{{/number}}",
        "keys_url": f"{api}/keys{{/key_id}}",
        "labels_url": f"{api}/labels{{/name}}",
        "languages_url": f"{api}/languages",
        "merges_url": f"{api}/merges",
        "milestones_url": f"{api}/milestones{{/number}}",
        "notifications_url": f"{api}/notifications{{?since,all,participating}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "releases_url": f"{api}/releases{{/id}}",
        "ssh_url": f"git@{host}:{fn}.git",
        "stargazers_url": f"{api}/stargazers",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "subscribers_url": f"{api}/subscribers",
        "subscription_url": f"{api}/subscription",
        "tags_url": f"{api}/tags",
        "teams_url": f"{api}/teams",
        "trees_url": f"{api}/git/trees{{/sha}}",
        "clone_url": f"{u.web}/{fn}.git",
        "mirror_url": None,
        "hooks_url": f"{api}/hooks",
        "svn_url": f"{u.web}/{fn}",
        "homepage": None,
        "language": None,
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "size": 0,
        "default_branch": r["default_branch"],
        "open_issues_count": open_count,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": False,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "private" if r["private"] else "public",
        "pushed_at": r["pushed_at"],
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "license": None,
        "forks": 0,
        "open_issues": open_count,
        "watchers": 0,
    }
    if viewer_perm is not None:
        rank = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}[
            viewer_perm
        ]
        out["permissions"] = {
            "admin": rank >= 5,
            "maintain": rank >= 4,
            "push": rank >= 3,
            "triage": rank >= 2,
            "pull": rank >= 1,
        }
    if full:
        out.update(
            {
                "allow_squash_merge": True,
                "allow_merge_commit": True,
                "allow_rebase_merge": True,
                "allow_auto_merge": False,
                "delete_branch_on_merge": False,
                "allow_update_branch": False,
                "use_squash_pr_title_as_default": False,
                "squash_merge_commit_title": "COMMIT_OR_PR_TITLE",
                "squash_merge_commit_message": "COMMIT_MESSAGES",
                "merge_commit_title": "MERGE_MESSAGE",
                "merge_commit_message": "PR_TITLE",
                "network_count": 0,
                "subscribers_count": 0,
            }
        )
        owner = b.data["users"].get(r["owner"])
        if owner and owner["type"] == "Organization":
            out["organization"] = user(b, u, r["owner"])
    return out


class RepoCache:
    """Per-request rendering cache: each repository and user object is rendered once.

    With ``fragments`` (the app's serialisation path) it returns placeholders that the JSON
    encoder splices the once-encoded object into (PR lists embed the repository twice per
    item); without, plain dicts.
    """

    def __init__(self, b: Backend, u: Urls, fragments: Fragments | None = None) -> None:
        self.b, self.u = b, u
        self.fragments = fragments
        self._cache: dict[str, dict[str, Any]] = {}

    def get(self, full: str) -> Any:
        """The repository object (full-repository fields; PR heads use the same shape)."""
        if full not in self._cache:
            self._cache[full] = repo(self.b, self.u, self.b.repo(full), full=False)
        if self.fragments is not None:
            return self.fragments.add(("repo", full), lambda: self._cache[full])
        return self._cache[full]

    def user(self, login: str | None) -> Any:
        """A simple-user object (or its placeholder), None for a null user."""
        if login is None:
            return None
        if self.fragments is not None:
            return self.fragments.add(("user", login), lambda: user(self.b, self.u, login))
        return user(self.b, self.u, login)


def label(u: Urls, full: str, rec: dict[str, Any]) -> dict[str, Any]:
    """A label object."""
    return {
        "id": rec["id"],
        "node_id": node_id("Label", rec["id"]),
        "url": f"{u.api}/repos/{full}/labels/{rec['name']}",
        "name": rec["name"],
        "color": rec["color"],
        "default": rec.get("default", False),
        "description": rec.get("description"),
    }


def _labels(b: Backend, u: Urls, full: str, names: list[str]) -> list[dict[str, Any]]:
    out = []
    for n in names:
        rec = b.label(full, n) or {"id": 0, "name": n, "color": "ededed", "description": None}
        out.append(label(u, full, rec))
    return out


def author_association(b: Backend, full: str, login: str | None) -> str:
    """OWNER, MEMBER, COLLABORATOR or NONE."""
    if login is None:
        return "NONE"
    r = b.repo(full)
    if login == r["owner"]:
        return "OWNER"
    owner = b.data["users"].get(r["owner"], {})
    if login in owner.get("admins", []) or login in owner.get("members", []):
        return "MEMBER"
    if login in r["collaborators"]:
        return "COLLABORATOR"
    return "NONE"


def reaction_rollup(
    b: Backend, u: Urls, full: str, subject: str, target: int, url: str
) -> dict[str, Any]:
    """The ``reactions`` summary object embedded in issues and comments."""
    counts = {k: 0 for k in ("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes")}
    rs = b.reactions(full, subject, target)
    for r in rs:
        counts[r["content"]] += 1
    return {"url": f"{url}/reactions", "total_count": len(rs), **counts}


def issue(
    b: Backend, u: Urls, full: str, rec: dict[str, Any], cache: RepoCache | None = None
) -> dict[str, Any]:
    """An issue object (PRs carry a ``pull_request`` key, as in GitHub's issue list)."""
    cache = cache or RepoCache(b, u)
    n = rec["number"]
    api = f"{u.api}/repos/{full}/issues/{n}"
    out: dict[str, Any] = {
        "url": api,
        "repository_url": f"{u.api}/repos/{full}",
        "labels_url": f"{api}/labels{{/name}}",
        "comments_url": f"{api}/comments",
        "events_url": f"{api}/events",
        "html_url": f"{u.web}/{full}/{'pull' if rec['pull'] else 'issues'}/{n}",
        "id": rec["id"],
        "node_id": node_id("Issue", rec["id"]),
        "number": n,
        "title": rec["title"],
        "user": cache.user(rec["user"]),
        "labels": _labels(b, u, full, rec["labels"]),
        "state": rec["state"],
        "locked": rec["locked"],
        "assignee": cache.user(rec["assignees"][0]) if rec["assignees"] else None,
        "assignees": [cache.user(a) for a in rec["assignees"]],
        "milestone": None,
        "comments": len(rec["comment_ids"]),
        "created_at": rec["created_at"],
        "updated_at": rec["updated_at"],
        "closed_at": rec["closed_at"],
        "closed_by": cache.user(rec["closed_by"]),
        "author_association": author_association(b, full, rec["user"]),
        "active_lock_reason": None,
        "body": rec["body"],
        "reactions": reaction_rollup(b, u, full, "issue", n, api),
        "timeline_url": f"{api}/timeline",
        "performed_via_github_app": None,
        "state_reason": rec["state_reason"],
    }
    if rec["pull"] is not None:
        out["draft"] = rec["pull"]["draft"]
        out["pull_request"] = {
            "url": f"{u.api}/repos/{full}/pulls/{n}",
            "html_url": f"{u.web}/{full}/pull/{n}",
            "diff_url": f"{u.web}/{full}/pull/{n}.diff",
            "patch_url": f"{u.web}/{full}/pull/{n}.patch",
            "merged_at": rec["pull"]["merged_at"],
        }
    return out


def _pr_part(
    b: Backend, u: Urls, cache: RepoCache, full: str, ref: str, sha: str
) -> dict[str, Any]:
    owner = full.split("/", 1)[0]
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": cache.user(owner),
        "repo": cache.get(full),
    }


def pull(
    b: Backend,
    u: Urls,
    full: str,
    rec: dict[str, Any],
    cache: RepoCache,
    detail: bool = True,
    read: bool = True,
) -> dict[str, Any]:
    """A pull-request object; ``detail`` adds mergeable and diff stats (GET, not list);
    ``read=False`` for a write's answer, which does not count as a read of the mergeability."""
    pr = rec["pull"]
    n = rec["number"]
    api = f"{u.api}/repos/{full}/pulls/{n}"
    issue_api = f"{u.api}/repos/{full}/issues/{n}"
    html = f"{u.web}/{full}/pull/{n}"
    g = b.git(full)
    base_sha = pr["base_sha"]  # kept at the base tip for open PRs by Backend.after_push
    out: dict[str, Any] = {
        "url": api,
        "id": pr["id"],
        "node_id": node_id("PullRequest", pr["id"]),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": issue_api,
        "commits_url": f"{api}/commits",
        "review_comments_url": f"{api}/comments",
        "review_comment_url": f"{u.api}/repos/{full}/pulls/comments{{/number}}",
        "comments_url": f"{issue_api}/comments",
        "statuses_url": f"{u.api}/repos/{full}/statuses/{pr['head_sha']}",
        "number": n,
        "state": rec["state"],
        "locked": rec["locked"],
        "title": rec["title"],
        "user": cache.user(rec["user"]),
        "body": rec["body"],
        "labels": _labels(b, u, full, rec["labels"]),
        "milestone": None,
        "active_lock_reason": None,
        "created_at": rec["created_at"],
        "updated_at": rec["updated_at"],
        "closed_at": rec["closed_at"],
        "merged_at": pr["merged_at"],
        "merge_commit_sha": pr["merge_commit_sha"],
        "assignee": cache.user(rec["assignees"][0]) if rec["assignees"] else None,
        "assignees": [cache.user(a) for a in rec["assignees"]],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": _pr_part(b, u, cache, full, pr["head_ref"], pr["head_sha"]),
        "base": _pr_part(b, u, cache, full, pr["base_ref"], base_sha),
        "_links": {
            "self": {"href": api},
            "html": {"href": html},
            "issue": {"href": issue_api},
            "comments": {"href": f"{issue_api}/comments"},
            "review_comments": {"href": f"{api}/comments"},
            "review_comment": {"href": f"{u.api}/repos/{full}/pulls/comments{{/number}}"},
            "commits": {"href": f"{api}/commits"},
            "statuses": {"href": f"{u.api}/repos/{full}/statuses/{pr['head_sha']}"},
        },
        "author_association": author_association(b, full, rec["user"]),
        "auto_merge": None,
        "draft": pr["draft"],
    }
    if detail:
        mergeable, state = b.observed_mergeability(full, rec, read)
        mb = g.merge_base(base_sha, pr["head_sha"]) or base_sha
        files = g.diff_files(mb, pr["head_sha"])
        out.update(
            {
                "merged": pr["merged"],
                "mergeable": mergeable,
                "rebaseable": mergeable,
                "mergeable_state": state,
                "merged_by": cache.user(pr["merged_by"]),
                "comments": len(rec["comment_ids"]),
                "review_comments": 0,
                "maintainer_can_modify": pr["maintainer_can_modify"],
                "commits": g.count_range(mb, pr["head_sha"]),
                "additions": sum(f["additions"] for f in files),
                "deletions": sum(f["deletions"] for f in files),
                "changed_files": len(files),
            }
        )
    return out

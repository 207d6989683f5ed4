"""The sandbox domain: users, apps, repos, issues, pulls, checks, merges (no HTTP)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

from .clock import Clock, iso
from .fidelity import MergeabilityClock, SecondaryLimits, settings
from .git import CommitSpec, GitRepo, Person
from .http import RateLimiter
from .protection import SUCCESSFUL, effective_rule, missing_required_checks
from .seed import PERMISSIONS, load_seed
from .store import Store

REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
PERMISSION_RANK = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}
TOKEN_TTL = 3600


class SandboxApiError(Exception):
    """A GitHub-style API error raised by the domain layer (the app renders it as JSON)."""

    def __init__(
        self, status: int, message: str, errors: list[dict[str, Any]] | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors
        self.extra = extra


def not_found() -> SandboxApiError:
    """GitHub's 404."""
    return SandboxApiError(404, "Not Found")


def validation(
    resource: str, field: str, code: str = "missing_field", message: str | None = None
) -> SandboxApiError:
    """GitHub's 422 Validation Failed with one error entry."""
    err: dict[str, Any] = {"resource": resource, "field": field, "code": code}
    if message:
        err["message"] = message
    return SandboxApiError(422, "Validation Failed", errors=[err])


def filter_state(items: list[dict[str, Any]], state: str, resource: str) -> list[dict[str, Any]]:
    """The `state` filter of GitHub's issue and pull lists (open, closed, all; else 422)."""
    if state not in ("open", "closed", "all"):
        raise validation(resource, "state", "invalid")
    return items if state == "all" else [i for i in items if i["state"] == state]


def sort_items(
    items: list[dict[str, Any]],
    keys: dict[str, Any],
    sort: str,
    reverse: bool,
    resource: str,
) -> None:
    """Sort a list in place by one of GitHub's named sort keys (an unknown one is a 422)."""
    if sort not in keys:
        raise validation(resource, "sort", "invalid")
    items.sort(key=keys[sort], reverse=reverse)


class Backend:
    """All sandbox state and behaviour; thread-safe through the store's lock."""

    def __init__(self, root: Path, clock: Clock) -> None:
        self.root = root
        self.clock = clock
        root.mkdir(parents=True, exist_ok=True)
        (root / "git").mkdir(exist_ok=True)
        self.store = Store(root)
        self.lock = self.store.lock
        self._gits: dict[str, GitRepo] = {}
        self.limiter = RateLimiter()
        self.secondary = SecondaryLimits()
        self.merge_clock = MergeabilityClock()

    # -- basics ----------------------------------------------------------------------------

    @property
    def data(self) -> dict[str, Any]:
        """The raw state document."""
        return self.store.data

    def now(self) -> str:
        """The sandbox time as a GitHub timestamp."""
        return iso(self.clock.now())

    def git(self, full: str) -> GitRepo:
        """The bare repository of ``owner/name``."""
        g = self._gits.get(full)
        if g is None:
            g = GitRepo(self.root / "git" / f"{full}.git")
            self._gits[full] = g
        return g

    # -- seed ------------------------------------------------------------------------------

    def apply_seed(self, seed: dict[str, Any] | Path | str | None) -> None:
        """Create what the seed describes; existing objects are kept (idempotent on restart)."""
        s = load_seed(seed)
        with self.store.batch():
            self.data["rate_limit"] = dict(s["rate_limit"])
            self.data["fidelity"] = dict(s["fidelity"])
            self.data["admin_token"] = s["admin_token"]
            for u in s["users"]:
                self.add_user(
                    u["login"],
                    u["token"],
                    type=u["type"],
                    name=u["name"],
                    email=u["email"],
                    rate_limit=u["rate_limit"],
                    site_admin=u["site_admin"],
                )
            for o in s["orgs"]:
                self._ensure_account(o["login"], "Organization", name=o["name"])
                self.data["users"][o["login"]]["admins"] = o["admins"]
                self.data["users"][o["login"]]["members"] = o["members"]
            for a in s["apps"]:
                self.add_app(a)
            for full in self.data["repos"]:
                self.git(full).install_hooks()  # the hook names this interpreter: refresh it
            for r in s["repos"]:
                full = f"{r['owner']}/{r['name']}"
                if full not in self.data["repos"]:
                    self.create_repo(
                        r["owner"],
                        r["name"],
                        files=r["files"] or {"README.md": f"# {r['name']}\n"},
                        default_branch=r["default_branch"],
                        private=r["private"],
                        description=r["description"],
                    )
                repo = self.data["repos"][full]
                repo["collaborators"].update(r["collaborators"])
                for lab in r["labels"]:
                    if lab["name"].lower() not in {n.lower() for n in repo["labels"]}:
                        self.create_label(full, lab["name"], lab["color"], lab["description"])
                for branch, body in r["protection"].items():
                    self.set_protection(full, branch, body)
            self.store.save()

    def _ensure_account(self, login: str, type: str, **fields: Any) -> dict[str, Any]:
        users = self.data["users"]
        if login not in users:
            uid = self.store.new_id()
            users[login] = {
                "login": login,
                "id": uid,
                "type": type,
                "name": None,
                "email": None,
                "site_admin": False,
                "created_at": self.now(),
                "admins": [],
                "members": [],
                "rate_limit": None,
            }
        rec = users[login]
        rec["type"] = type
        for k, v in fields.items():
            if v is not None:
                rec[k] = v
        return rec

    def add_user(
        self, login: str, token: str | None, type: str = "User", **fields: Any
    ) -> dict[str, Any]:
        """Create or update a user; ``token`` becomes a valid personal access token for it."""
        with self.lock:
            rec = self._ensure_account(login, type, **fields)
            if token:
                self.data["tokens"][token] = {"login": login}
            self.store.save()
            return rec

    def add_app(self, app: dict[str, Any]) -> None:
        """Register a GitHub App, its bot user and its installations."""
        with self.lock:
            key = str(app["id"])
            existing = self.data["apps"].get(key, {})
            self.data["apps"][key] = {
                "id": app["id"],
                "slug": app["slug"],
                "name": app.get("name", app["slug"]),
                "owner": app.get("owner"),
                "description": app.get("description", ""),
                "public_key": app["public_key"],
                "permissions": app.get("permissions", {}),
                "events": app.get("events", []),
                "created_at": existing.get("created_at", self.now()),
            }
            self._ensure_account(f"{app['slug']}[bot]", "Bot")
            for inst in app.get("installations", []):
                ikey = str(inst["id"])
                prev = self.data["installations"].get(ikey, {})
                self.data["installations"][ikey] = {
                    "id": inst["id"],
                    "app_id": app["id"],
                    "account": inst["account"],
                    "repositories": inst.get("repositories", "all"),
                    "rate_limit": inst.get("rate_limit"),
                    "created_at": prev.get("created_at", self.now()),
                }
            self.store.save()

    def app_by_id(self, app_id: int) -> dict[str, Any] | None:
        """An app record."""
        return self.data["apps"].get(str(app_id))

    def bot_login(self, app_id: int) -> str:
        """``<slug>[bot]`` for an app."""
        return f"{self.data['apps'][str(app_id)]['slug']}[bot]"

    def issue_installation_token(self, installation_id: int) -> tuple[str, float]:
        """A fresh ``ghs_`` token valid for one hour (real time)."""
        with self.lock:
            token = "ghs_" + secrets.token_urlsafe(27)[:36]
            expires = time.time() + TOKEN_TTL
            self.data["tokens"][token] = {"installation": installation_id, "expires_at": expires}
            # Drop expired installation tokens so the store does not grow without bound.
            now = time.time()
            for t in [
                t for t, v in self.data["tokens"].items() if v.get("expires_at", now + 1) < now
            ]:
                del self.data["tokens"][t]
            self.store.save()
            return token, expires

    def installation_repos(self, inst: dict[str, Any]) -> list[str]:
        """Full names of the repositories an installation can reach."""
        owned = [f for f, r in self.data["repos"].items() if r["owner"] == inst["account"]]
        if inst["repositories"] == "all":
            return owned
        return [f for f in owned if f.split("/", 1)[1] in inst["repositories"]]

    # -- permissions -----------------------------------------------------------------------

    def permission(self, full: str, login: str | None) -> str:
        """A user's role on a repo: admin, maintain, write, triage, read or none."""
        repo = self.data["repos"].get(full)
        if repo is None or login is None:
            return "none" if repo is None or repo["private"] else "read"
        if login == repo["owner"]:
            return "admin"
        owner = self.data["users"].get(repo["owner"], {})
        if login in owner.get("admins", []):
            return "admin"
        role = repo["collaborators"].get(login)
        if role in PERMISSIONS:
            return role
        if login in owner.get("members", []):
            return "read"
        return "none" if repo["private"] else "read"

    # -- repositories ----------------------------------------------------------------------

    def repo(self, full: str) -> dict[str, Any]:
        """A repo record or a 404 error."""
        repo = self.data["repos"].get(full)
        if repo is None:
            # GitHub matches owner and name case-insensitively.
            for name, rec in self.data["repos"].items():
                if name.lower() == full.lower():
                    return rec
            raise not_found()
        return repo

    def create_repo(
        self,
        owner: str,
        name: str,
        files: dict[str, Any] | None = None,
        default_branch: str = "main",
        private: bool = False,
        description: str | None = None,
        auto_init: bool = True,
    ) -> str:
        """Create a repository (a bare git repo plus its record); return ``owner/name``."""
        with self.lock:
            if owner not in self.data["users"]:
                raise SandboxApiError(404, "Not Found")
            full = f"{owner}/{name}"
            if full.lower() in {f.lower() for f in self.data["repos"]}:
                raise validation(
                    "Repository", "name", "custom", "name already exists on this account"
                )
            g = self.git(full)
            g.init_bare(default_branch)
            now = self.now()
            self.data["repos"][full] = {
                "id": self.store.new_id(),
                "owner": owner,
                "name": name,
                "full_name": full,
                "default_branch": default_branch,
                "private": private,
                "description": description,
                "created_at": now,
                "updated_at": now,
                "pushed_at": now,
                "collaborators": {},
                "labels": {},
                "protection": {},
                "issue_seq": 0,
                "issues": {},
                "comments": {},
                "reactions": [],
                "events": [],
                "check_runs": {},
                "statuses": [],
            }
            if auto_init:
                self.commit_files(
                    full,
                    default_branch,
                    files or {"README.md": f"# {name}\n"},
                    "Initial commit",
                    author=owner,
                )
            self.store.save()
            return full

    def person(self, login: str | None) -> Person:
        """A git identity for a login."""
        if login is None:
            return Person("GitHub", "noreply@github.com")
        u = self.data["users"].get(login)
        if u is None:
            return Person(login, f"{login}@users.noreply.github.com")
        return Person(
            u.get("name") or login, u.get("email") or f"{u['id']}+{login}@users.noreply.github.com"
        )

    def commit_files(
        self,
        full: str,
        branch: str,
        files: dict[str, Any],
        message: str,
        author: str | Person | None = None,
        parent_branch: str | None = None,
    ) -> str:
        """Commit ``files`` (None deletes) on ``branch`` (new: from ``parent_branch``)."""
        with self.lock:
            self.repo(full)
            g = self.git(full)
            parent = g.resolve(f"refs/heads/{branch}")
            if parent is None and parent_branch is not None:
                parent = g.resolve(f"refs/heads/{parent_branch}") or g.resolve(parent_branch)
                if parent is None:
                    raise ValueError(f"{full}: no branch {parent_branch!r} to branch from")
            person = author if isinstance(author, Person) else self.person(author)
            spec = CommitSpec(
                branch=branch,
                files=files,
                message=message,
                author=person,
                when=self.clock.now(),
                parent=parent,
            )
            (sha,) = g.fast_import([spec])
            self.after_push(full)
            return sha

    def bulk_commits(self, full: str, specs: list[CommitSpec]) -> list[str]:
        """Write many commits with one fast-import run (for benchmarks and big scenarios)."""
        with self.lock:
            shas = self.git(full).fast_import(specs)
            self.after_push(full)
            return shas

    def after_push(self, full: str) -> None:
        """Refresh the store's view of git: PR heads follow their branches; refs/pull/N/head too.

        Refs moved outside the sandbox's own git helpers and git HTTP need
        ``self.git(full).invalidate_refs()`` first (the ref table is kept in memory).
        """
        with self.lock:
            repo = self.repo(full)
            repo["pushed_at"] = self.now()
            if not any(
                i["pull"] is not None and i["state"] == "open" for i in repo["issues"].values()
            ):
                return
            g = self.git(full)
            refs = g.refs("refs/")
            changed = False
            for issue in repo["issues"].values():
                pr = issue.get("pull")
                if pr is None or issue["state"] != "open":
                    continue
                head = refs.get(f"refs/heads/{pr['head_ref']}")
                if head and head != pr["head_sha"]:
                    pr["head_sha"] = head
                    issue["updated_at"] = self.now()
                    changed = True
                base = refs.get(f"refs/heads/{pr['base_ref']}")
                if base and base != pr["base_sha"]:
                    pr["base_sha"] = base
                    changed = True
                pull_ref = f"refs/pull/{issue['number']}/head"
                if refs.get(pull_ref) != pr["head_sha"]:
                    g.update_ref(pull_ref, pr["head_sha"])
            if changed:
                self.store.save()

    # -- labels ----------------------------------------------------------------------------

    def create_label(
        self, full: str, name: str, color: str = "ededed", description: str | None = None
    ) -> dict[str, Any]:
        """Create a repo label (422 already_exists if the name is taken)."""
        with self.lock:
            repo = self.repo(full)
            if any(n.lower() == name.lower() for n in repo["labels"]):
                raise validation("Label", "name", "already_exists")
            rec = {
                "id": self.store.new_id(),
                "name": name,
                "color": color.lstrip("#"),
                "description": description,
                "default": False,
            }
            repo["labels"][name] = rec
            self.store.save()
            return rec

    def label(self, full: str, name: str) -> dict[str, Any] | None:
        """A label by name (case-insensitive)."""
        repo = self.repo(full)
        if name in repo["labels"]:
            return repo["labels"][name]
        for n, rec in repo["labels"].items():
            if n.lower() == name.lower():
                return rec
        return None

    # -- issues and pulls ------------------------------------------------------------------

    def _new_issue(self, full: str, title: str, body: str | None, user: str) -> dict[str, Any]:
        repo = self.repo(full)
        repo["issue_seq"] += 1
        n = repo["issue_seq"]
        now = self.now()
        rec = {
            "number": n,
            "id": self.store.new_id(),
            "title": title,
            "body": body,
            "user": user,
            "state": "open",
            "state_reason": None,
            "labels": [],
            "assignees": [],
            "locked": False,
            "created_at": now,
            "updated_at": now,
            "closed_at": None,
            "closed_by": None,
            "comment_ids": [],
            "pull": None,
        }
        repo["issues"][str(n)] = rec
        return rec

    def issue(self, full: str, number: int | str) -> dict[str, Any]:
        """An issue or PR record by number, or 404."""
        rec = self.repo(full)["issues"].get(str(number))
        if rec is None:
            raise not_found()
        return rec

    def create_issue(
        self,
        full: str,
        title: str,
        body: str | None,
        user: str,
        labels: list[str] | None = None,
        assignees: list[str] | None = None,
    ) -> dict[str, Any]:
        """Open an issue."""
        with self.lock:
            rec = self._new_issue(full, title, body, user)
            rec["assignees"] = list(assignees or [])
            if labels:
                self.add_labels(full, rec["number"], labels, user, save=False)
            self.store.save()
            return rec

    def open_pr(
        self,
        full: str,
        head: str,
        base: str,
        title: str,
        body: str | None,
        user: str,
        draft: bool = False,
        maintainer_can_modify: bool = False,
    ) -> int:
        """Open a pull request from branch ``head`` into ``base``; return its number."""
        with self.lock:
            g = self.git(full)
            head_ref = head.split(":", 1)[1] if ":" in head else head
            head_sha = g.resolve(f"refs/heads/{head_ref}")
            base_sha = g.resolve(f"refs/heads/{base}")
            if base_sha is None:
                raise validation("PullRequest", "base", "invalid")
            if head_sha is None:
                raise validation("PullRequest", "head", "invalid")
            for other in self.repo(full)["issues"].values():
                p = other.get("pull")
                if (
                    p
                    and other["state"] == "open"
                    and p["head_ref"] == head_ref
                    and p["base_ref"] == base
                ):
                    raise validation(
                        "PullRequest",
                        "head",
                        "custom",
                        f"A pull request already exists for {full.split('/')[0]}:{head_ref}.",
                    )
            if head_sha == base_sha or g.is_ancestor(head_sha, base_sha):
                raise validation(
                    "PullRequest", "head", "custom", f"No commits between {base} and {head_ref}"
                )
            rec = self._new_issue(full, title, body, user)
            rec["pull"] = {
                "id": self.store.new_id(),
                "head_ref": head_ref,
                "base_ref": base,
                "head_sha": head_sha,
                "base_sha": base_sha,
                "draft": bool(draft),
                "merged": False,
                "merged_at": None,
                "merged_by": None,
                "merge_commit_sha": None,
                "maintainer_can_modify": bool(maintainer_can_modify),
            }
            g.update_ref(f"refs/pull/{rec['number']}/head", head_sha)
            self.store.save()
            return int(rec["number"])

    def set_state(
        self, full: str, number: int, state: str, actor: str, reason: str | None = None
    ) -> None:
        """Close or reopen an issue/PR, recording a closed/reopened event."""
        rec = self.issue(full, number)
        if state == rec["state"]:
            return
        now = self.now()
        rec["state"] = state
        rec["updated_at"] = now
        if state == "closed":
            rec["closed_at"] = now
            rec["closed_by"] = actor
            rec["state_reason"] = reason or ("completed" if rec["pull"] is None else None)
            self.add_event(full, number, "closed", actor)
        else:
            rec["closed_at"] = None
            rec["closed_by"] = None
            rec["state_reason"] = "reopened" if rec["pull"] is None else None
            self.add_event(full, number, "reopened", actor)
            if rec["pull"]:
                self.after_push(full)

    def add_event(
        self, full: str, number: int, event: str, actor: str, **extra: Any
    ) -> dict[str, Any]:
        """Append an issue event (labeled, unlabeled, closed, reopened, merged ...)."""
        ev = {
            "id": self.store.new_id(),
            "issue": int(number),
            "event": event,
            "actor": actor,
            "created_at": self.now(),
            **extra,
        }
        self.repo(full)["events"].append(ev)
        return ev

    def add_labels(
        self, full: str, number: int, names: list[str], actor: str, save: bool = True
    ) -> None:
        """Add labels to an issue (creating missing repo labels like GitHub does)."""
        with self.lock:
            rec = self.issue(full, number)
            for name in names:
                lab = self.label(full, name) or self.create_label(full, name)
                if lab["name"] not in rec["labels"]:
                    rec["labels"].append(lab["name"])
                    self.add_event(
                        full,
                        number,
                        "labeled",
                        actor,
                        label={"name": lab["name"], "color": lab["color"]},
                    )
            rec["updated_at"] = self.now()
            if save:
                self.store.save()

    def remove_label(self, full: str, number: int, name: str, actor: str) -> None:
        """Remove one label from an issue (404 if it is not there)."""
        with self.lock:
            rec = self.issue(full, number)
            match = next((n for n in rec["labels"] if n.lower() == name.lower()), None)
            if match is None:
                raise SandboxApiError(404, "Label does not exist")
            rec["labels"].remove(match)
            lab = self.label(full, match) or {"name": match, "color": "ededed"}
            self.add_event(
                full, number, "unlabeled", actor, label={"name": lab["name"], "color": lab["color"]}
            )
            rec["updated_at"] = self.now()
            self.store.save()

    def add_comment(self, full: str, number: int, body: str, user: str) -> dict[str, Any]:
        """Comment on an issue or PR."""
        with self.lock:
            rec = self.issue(full, number)
            now = self.now()
            c = {
                "id": self.store.new_id(),
                "issue": rec["number"],
                "user": user,
                "body": body,
                "created_at": now,
                "updated_at": now,
            }
            self.repo(full)["comments"][str(c["id"])] = c
            rec["comment_ids"].append(c["id"])
            rec["updated_at"] = now
            self.store.save()
            return c

    def comment(self, full: str, comment_id: int | str) -> dict[str, Any]:
        """A comment by id or 404."""
        c = self.repo(full)["comments"].get(str(comment_id))
        if c is None:
            raise not_found()
        return c

    def add_reaction(
        self, full: str, subject: str, target: int, content: str, user: str
    ) -> tuple[dict[str, Any], bool]:
        """React to an issue or comment; returns (reaction, created); duplicates are returned."""
        with self.lock:
            if content not in REACTIONS:
                raise validation("Reaction", "content", "invalid")
            repo = self.repo(full)
            for r in repo["reactions"]:
                if (
                    r["subject"] == subject
                    and r["target"] == target
                    and r["user"] == user
                    and r["content"] == content
                ):
                    return r, False
            r = {
                "id": self.store.new_id(),
                "subject": subject,
                "target": target,
                "user": user,
                "content": content,
                "created_at": self.now(),
            }
            repo["reactions"].append(r)
            self.store.save()
            return r, True

    def reactions(self, full: str, subject: str, target: int) -> list[dict[str, Any]]:
        """Reactions on an issue or comment, oldest first."""
        return [
            r
            for r in self.repo(full)["reactions"]
            if r["subject"] == subject and r["target"] == target
        ]

    # -- checks and statuses ---------------------------------------------------------------

    def check_runs_for(self, full: str, sha: str) -> list[dict[str, Any]]:
        """All check runs on a commit, newest first."""
        runs = [r for r in self.repo(full)["check_runs"].values() if r["head_sha"] == sha]
        return sorted(runs, key=lambda r: r["id"], reverse=True)

    def statuses_for(self, full: str, sha: str) -> list[dict[str, Any]]:
        """All commit statuses on a commit, newest first."""
        return sorted(
            (s for s in self.repo(full)["statuses"] if s["sha"] == sha),
            key=lambda s: s["id"],
            reverse=True,
        )

    def latest_statuses(self, full: str, sha: str) -> list[dict[str, Any]]:
        """The newest status per context."""
        seen: dict[str, dict[str, Any]] = {}
        for s in self.statuses_for(full, sha):
            seen.setdefault(s["context"], s)
        return list(seen.values())

    # -- protection ------------------------------------------------------------------------

    def set_protection(self, full: str, branch: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store a branch protection rule (GitHub's PUT body) and refresh the push hook table."""
        with self.lock:
            repo = self.repo(full)
            rsc = body.get("required_status_checks")
            if rsc is not None:
                checks = [
                    {
                        "context": c["context"],
                        "app_id": c.get("app_id") if c.get("app_id") not in (None, -1) else None,
                    }
                    for c in rsc.get("checks") or []
                ]
                known = {c["context"] for c in checks}
                for ctx in rsc.get("contexts") or []:
                    if ctx not in known:
                        checks.append({"context": ctx, "app_id": None})
                rsc = {"strict": bool(rsc.get("strict", False)), "checks": checks}
            reviews = body.get("required_pull_request_reviews")
            if reviews is not None:
                reviews = {
                    "dismiss_stale_reviews": bool(reviews.get("dismiss_stale_reviews", False)),
                    "require_code_owner_reviews": bool(
                        reviews.get("require_code_owner_reviews", False)
                    ),
                    "required_approving_review_count": int(
                        reviews.get("required_approving_review_count", 0) or 0
                    ),
                    "require_last_push_approval": bool(
                        reviews.get("require_last_push_approval", False)
                    ),
                }
            rule = {
                "required_status_checks": rsc,
                "enforce_admins": bool(body.get("enforce_admins")),
                "required_pull_request_reviews": reviews,
                "restrictions": body.get("restrictions"),
                "required_linear_history": bool(body.get("required_linear_history", False)),
                "allow_force_pushes": bool(body.get("allow_force_pushes", False)),
                "allow_deletions": bool(body.get("allow_deletions", False)),
                "block_creations": bool(body.get("block_creations", False)),
                "required_conversation_resolution": bool(
                    body.get("required_conversation_resolution", False)
                ),
                "lock_branch": bool(body.get("lock_branch", False)),
                "allow_fork_syncing": bool(body.get("allow_fork_syncing", False)),
            }
            repo["protection"][branch] = rule
            self.store.save()
            return rule

    def delete_protection(self, full: str, branch: str) -> None:
        """Remove a branch's protection (404 if it had none)."""
        with self.lock:
            repo = self.repo(full)
            if branch not in repo["protection"]:
                raise SandboxApiError(404, "Branch not protected")
            del repo["protection"][branch]
            self.store.save()

    def missing_required_checks(self, full: str, branch: str, sha: str) -> list[tuple[str, str]]:
        """Required checks of ``branch`` not satisfied on ``sha``: [(context, why)]."""
        return missing_required_checks(self.repo(full), branch, sha)

    # -- merge -----------------------------------------------------------------------------

    def mergeability(self, full: str, rec: dict[str, Any]) -> tuple[bool | None, str]:
        """(mergeable, mergeable_state) computed with git and branch protection."""
        pr = rec["pull"]
        if rec["state"] != "open":
            return None, "unknown"
        g = self.git(full)
        base_sha = g.resolve(f"refs/heads/{pr['base_ref']}") or pr["base_sha"]
        clean, _ = g.merge_tree(base_sha, pr["head_sha"])
        if not clean:
            return False, "dirty"
        if pr["draft"]:
            return True, "draft"
        rule = effective_rule(self.repo(full), pr["base_ref"])
        if self.missing_required_checks(full, pr["base_ref"], pr["head_sha"]):
            return True, "blocked"
        if (
            rule
            and (rule.get("required_pull_request_reviews") or {}).get(
                "required_approving_review_count", 0
            )
            > 0
        ):
            return True, "blocked"
        if (
            rule
            and rule["required_status_checks"]
            and rule["required_status_checks"]["strict"]
            and not g.is_ancestor(base_sha, pr["head_sha"])
        ):
            return True, "behind"
        runs = self.check_runs_for(full, pr["head_sha"])
        latest_runs: dict[tuple[int, str], dict[str, Any]] = {}
        for r in runs:
            latest_runs.setdefault((r["app_id"], r["name"]), r)
        bad = any(
            r["status"] == "completed" and r["conclusion"] not in SUCCESSFUL
            for r in latest_runs.values()
        )
        bad = bad or any(
            s["state"] in ("failure", "error") for s in self.latest_statuses(full, pr["head_sha"])
        )
        return True, "unstable" if bad else "clean"

    def observed_mergeability(self, full: str, rec: dict[str, Any]) -> tuple[bool | None, str]:
        """What a read of the PR shows: ``(None, "unknown")`` while GitHub would still be
        computing (the first reads or seconds after it opened or its base or head moved)."""
        pr = rec["pull"]
        if rec["state"] == "open":
            base = self.git(full).resolve(f"refs/heads/{pr['base_ref']}") or pr["base_sha"]
            now = self.clock.window_time()
            cfg = settings(self.data)
            if self.merge_clock.pending(full, rec["number"], (base, pr["head_sha"]), now, cfg):
                return None, "unknown"
        return self.mergeability(full, rec)

    def merge_pr(
        self,
        full: str,
        number: int,
        actor: str,
        actor_is_admin: bool,
        sha: str | None,
        method: str = "merge",
        title: str | None = None,
        message: str | None = None,
    ) -> dict[str, Any]:
        """Merge a PR like GitHub: state, head sha, conflicts, protection; real commits."""
        with self.lock:
            rec = self.issue(full, number)
            pr = rec["pull"]
            if pr is None:
                raise not_found()
            if method not in ("merge", "squash", "rebase"):
                raise validation("PullRequest", "merge_method", "invalid")
            if rec["state"] != "open" or pr["merged"]:
                raise SandboxApiError(405, "Pull Request is not mergeable")
            g = self.git(full)
            self.after_push(full)
            head = pr["head_sha"]
            if sha is not None and sha != head:
                raise SandboxApiError(
                    409, "Head branch was modified. Review and try the merge again."
                )
            if pr["draft"]:
                raise SandboxApiError(405, "Pull Request is still a draft")
            base_ref = f"refs/heads/{pr['base_ref']}"
            base_sha = g.resolve(base_ref)
            if base_sha is None:
                raise SandboxApiError(405, "Base branch was deleted")
            clean, tree = g.merge_tree(base_sha, head)
            if not clean or tree is None:
                raise SandboxApiError(405, "Pull Request is not mergeable")
            rule = effective_rule(self.repo(full), pr["base_ref"])
            bypass = actor_is_admin and rule is not None and not rule["enforce_admins"]
            if rule and not bypass:
                missing = self.missing_required_checks(full, pr["base_ref"], head)
                if missing:
                    ctx, why = missing[0]
                    raise SandboxApiError(405, f'Required status check "{ctx}" is {why}.')
                reviews = rule.get("required_pull_request_reviews") or {}
                count = reviews.get("required_approving_review_count", 0)
                if count > 0:
                    raise SandboxApiError(
                        405,
                        f"At least {count} approving review{'s are' if count > 1 else ' is'} "
                        "required by "
                        "reviewers with write access.",
                    )
                if (
                    rule["required_status_checks"]
                    and rule["required_status_checks"]["strict"]
                    and not g.is_ancestor(base_sha, head)
                ):
                    raise SandboxApiError(405, "Head branch is not up to date with the base branch")
            when = self.clock.now()
            committer = Person("GitHub", "noreply@github.com")
            author = self.person(actor)
            head_label = f"{full.split('/')[0]}:{pr['head_ref']}"
            if method == "merge":
                msg = title or f"Merge pull request #{number} from {head_label.replace(':', '/')}"
                msg += "\n\n" + (message if message is not None else rec["title"])
                new = g.commit_tree(
                    tree, [base_sha, head], msg.rstrip("\n") + "\n", author, when, committer
                )
            elif method == "squash":
                commits = g.log_range([f"{base_sha}..{head}"], reverse=True)
                if message is None:
                    message = "\n\n".join(f"* {c.message}" for c in commits)
                msg = (title or f"{rec['title']} (#{number})") + "\n\n" + message
                pr_author = self.person(rec["user"])
                new = g.commit_tree(
                    tree, [base_sha], msg.rstrip("\n") + "\n", pr_author, when, committer
                )
            else:
                commits = g.log_range([f"{base_sha}..{head}"], reverse=True)
                new_tip = g.rebase_commits(base_sha, commits, committer, when)
                if new_tip is None:
                    raise SandboxApiError(405, "This branch can't be rebased")
                new = new_tip
            g.update_ref(base_ref, new, base_sha)
            now = self.now()
            pr.update(
                {"merged": True, "merged_at": now, "merged_by": actor, "merge_commit_sha": new}
            )
            rec["state"] = "closed"
            rec["closed_at"] = now
            rec["updated_at"] = now
            self.add_event(full, number, "merged", actor, commit_id=new)
            self.add_event(full, number, "closed", actor, commit_id=new)
            self.after_push(full)
            self.store.save()
            return {"sha": new, "merged": True, "message": "Pull Request successfully merged"}

    def check_ref_update(
        self, full: str, branch: str, old: str, new: str, fast_forward: bool, is_admin: bool
    ) -> None:
        """Branch protection for API ref updates (mirrors the pre-receive hook used for pushes)."""
        rule = effective_rule(self.repo(full), branch)
        if not rule:
            return
        if not fast_forward and not rule["allow_force_pushes"]:
            raise SandboxApiError(422, "Cannot force-push to this branch")
        if rule["required_pull_request_reviews"] is not None and (
            not is_admin or rule["enforce_admins"]
        ):
            raise SandboxApiError(422, "Changes must be made through a pull request.")
        if rule["required_status_checks"] and (not is_admin or rule["enforce_admins"]):
            missing = self.missing_required_checks(full, branch, new)
            if missing:
                raise SandboxApiError(
                    422, f'Required status check "{missing[0][0]}" is {missing[0][1]}.'
                )

    def bulk_open_prs(self, full: str, prs: list[dict[str, Any]]) -> list[int]:
        """Open many PRs at once (dicts with head, base, title, body, user, draft); one git call.

        Unlike :meth:`open_pr` it does not check for duplicates or empty ranges (benchmarks, demo).
        """
        with self.store.batch():
            g = self.git(full)
            refs = g.refs("refs/heads/")
            numbers = []
            updates: dict[str, str] = {}
            for spec in prs:
                head_sha = refs.get(f"refs/heads/{spec['head']}")
                base_sha = refs.get(f"refs/heads/{spec.get('base', 'main')}")
                if head_sha is None or base_sha is None:
                    raise validation(
                        "PullRequest", "head" if head_sha is None else "base", "invalid"
                    )
                rec = self._new_issue(
                    full,
                    spec.get("title", spec["head"]),
                    spec.get("body"),
                    spec.get("user", "agent-1"),
                )
                rec["pull"] = {
                    "id": self.store.new_id(),
                    "head_ref": spec["head"],
                    "base_ref": spec.get("base", "main"),
                    "head_sha": head_sha,
                    "base_sha": base_sha,
                    "draft": bool(spec.get("draft", False)),
                    "merged": False,
                    "merged_at": None,
                    "merged_by": None,
                    "merge_commit_sha": None,
                    "maintainer_can_modify": False,
                }
                numbers.append(int(rec["number"]))
                updates[f"refs/pull/{rec['number']}/head"] = head_sha
            g.update_refs(updates)
            self.store.save()
            return numbers

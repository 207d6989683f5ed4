"""Backend layer: users, organisations, GitHub Apps, installations and their tokens."""

from __future__ import annotations

import secrets
from typing import Any

from ..seed import PERMISSIONS
from .base import BackendState

PERMISSION_RANK = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}
TOKEN_TTL = 3600


class Accounts(BackendState):
    """Users, organisations, Apps and installation tokens over the shared state."""

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
        rec: dict[str, Any] = users[login]
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
        apps: dict[str, dict[str, Any]] = self.data["apps"]
        return apps.get(str(app_id))

    def bot_login(self, app_id: int) -> str:
        """``<slug>[bot]`` for an app."""
        return f"{self.data['apps'][str(app_id)]['slug']}[bot]"

    def issue_installation_token(self, installation_id: int) -> tuple[str, float]:
        """A fresh ``ghs_`` token valid for one hour (the server's wall clock)."""
        with self.lock:
            token = "ghs_" + secrets.token_urlsafe(27)[:36]
            now = self.clock.wall()
            expires = now + TOKEN_TTL
            self.data["tokens"][token] = {"installation": installation_id, "expires_at": expires}
            # Drop expired installation tokens so the store does not grow without bound.
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
        role: str | None = repo["collaborators"].get(login)
        if role in PERMISSIONS:
            return role
        if login in owner.get("members", []):
            return "read"
        return "none" if repo["private"] else "read"

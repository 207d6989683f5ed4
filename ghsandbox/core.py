"""The sandbox domain: users, apps, repos, issues, pulls, checks, merges (no HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .backend.pulls import Pulls
from .seed import load_seed


class Backend(Pulls):
    """All sandbox state and behaviour (the layers in backend/), plus seeding."""

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

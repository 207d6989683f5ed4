"""Backend layer: repositories, commits and pushes, labels."""

from __future__ import annotations

from typing import Any

from ..errors import SandboxApiError, validation
from ..fidelity import settings
from ..gittypes import CommitSpec, Person
from .accounts import Accounts


class Repos(Accounts):
    """Repositories, commits, pushes and labels."""

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

    def after_push(self, full: str, actor: str | None = None) -> None:
        """Refresh the store's view of git: PR heads follow their branches; refs/pull/N/head too.

        Refs moved outside the sandbox's own git helpers and git HTTP need
        ``self.git(full).invalidate_refs()`` first (the ref table is kept in memory).
        """
        with self.lock:
            repo = self.repo(full)
            repo["pushed_at"] = self.now()
            self.events.note_heads(
                full,
                self.git(full).refs("refs/heads/"),
                actor or repo["owner"],
                self.now(),
                self.clock.window_time(),
                settings(self.data),
            )
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
        labels: dict[str, dict[str, Any]] = self.repo(full)["labels"]
        if name in labels:
            return labels[name]
        for n, rec in labels.items():
            if n.lower() == name.lower():
                return rec
        return None

"""Backend layer: issues (and the issue side of pulls), events, labels, comments, reactions."""

from __future__ import annotations

from typing import Any

from ..errors import SandboxApiError, not_found, validation
from .repos import Repos

REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


class Issues(Repos):
    """Issues, their events, labels, comments and reactions."""

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
        rec: dict[str, Any] | None = self.repo(full)["issues"].get(str(number))
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
            self.feed(full, "IssuesEvent", user, {"action": "opened", "number": rec["number"]})
            self.store.save()
            return rec

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
            self._feed_state(full, rec, "closed", actor)
        else:
            rec["closed_at"] = None
            rec["closed_by"] = None
            rec["state_reason"] = "reopened" if rec["pull"] is None else None
            self.add_event(full, number, "reopened", actor)
            self._feed_state(full, rec, "reopened", actor)
            if rec["pull"]:
                self.after_push(full)

    def _feed_state(self, full: str, rec: dict[str, Any], action: str, actor: str) -> None:
        kind = "IssuesEvent" if rec["pull"] is None else "PullRequestEvent"
        self.feed(full, kind, actor, {"action": action, "number": rec["number"]})

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
            payload = {"action": "created", "number": rec["number"], "comment_id": c["id"]}
            self.feed(full, "IssueCommentEvent", user, payload)
            self.store.save()
            return c

    def comment(self, full: str, comment_id: int | str) -> dict[str, Any]:
        """A comment by id or 404."""
        c: dict[str, Any] | None = self.repo(full)["comments"].get(str(comment_id))
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

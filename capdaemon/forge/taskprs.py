"""The PR of a task branch that passed finish-task: opened once, found again on a retry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from capdaemon.forge.convert import log

if TYPE_CHECKING:
    from capdaemon.forge.session import ForgeSession


class TaskPulls:
    """Opens (idempotently) the PR of a pushed task branch, as whoever the forge acts as."""

    def __init__(self, session: ForgeSession) -> None:
        self._http = session.http

    def open_task_pr(
        self, repo: str, head: str, base: str, *, title: str, body: str
    ) -> tuple[int, str]:
        """(PR number, "opened" | "open" | "draft"): the open PR of branch `head` into `base`
        when there is one (a draft stays a draft: GitHub's REST API cannot mark it ready),
        else a new one."""
        owner = repo.split("/")[0]
        query = {"state": "open", "head": f"{owner}:{head}", "base": base}
        for p in self._http.pages(f"/repos/{repo}/pulls", query):
            if p["head"].get("ref") == head:
                return int(p["number"]), "draft" if p.get("draft") else "open"
        _, pr = self._http.req(
            "POST",
            f"/repos/{repo}/pulls",
            body={"title": title, "head": head, "base": base, "body": body},
        )
        number = int(pr["number"])
        log.info("forge.write", op="open_task_pr", repo=repo, number=number, head=head)
        return number, "opened"

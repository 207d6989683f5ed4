"""Forge reads of check runs and commit statuses through REST (every page, or Incomplete)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from capdaemon.forge.convert import _check_run, _dt, _login, _next_link
from capdaemon.forge.errors import Incomplete
from capdaemon.model import CheckRun

if TYPE_CHECKING:
    from capdaemon.forge.session import ForgeSession


class Checks:
    """Check runs and commit statuses on a commit, as CheckRuns (statuses have no App)."""

    def __init__(self, session: ForgeSession) -> None:
        self._http = session.http

    def check_runs(self, repo: str, sha: str) -> list[CheckRun]:
        """The check runs on `sha`, every page (Incomplete when GitHub lists fewer than it has)."""
        url = f"/repos/{repo}/commits/{sha}/check-runs"
        headers, data = self._http.req("GET", url, params={"per_page": 100})
        runs = list(data.get("check_runs") or [])
        nxt = _next_link(headers.get("link"))
        while nxt:
            headers, data = self._http.req("GET", nxt)
            runs.extend(data.get("check_runs") or [])
            nxt = _next_link(headers.get("link"))
        total = int(data.get("total_count", len(runs)))
        if total > len(runs):
            raise Incomplete(f"check runs of {repo}@{sha[:12]}: {len(runs)} of {total} listed")
        return [_check_run(r) for r in runs]

    def statuses(self, repo: str, sha: str) -> list[CheckRun]:
        """The latest commit status per context on `sha`, as CheckRuns without an App."""
        data = self._http.get(f"/repos/{repo}/commits/{sha}/status", {"per_page": 100})
        return [_status_run(s) for s in data.get("statuses") or ()]

    def status_history(self, repo: str, sha: str) -> list[CheckRun]:
        """Every commit status ever posted on `sha` (all pages), as CheckRuns without an App."""
        items = self._http.pages(f"/repos/{repo}/commits/{sha}/statuses")
        return [_status_run(s) for s in items]

    def commit_checks(self, repo: str, sha: str, *, status_history: bool = False) -> list[CheckRun]:
        """Check runs and commit statuses on `sha`; statuses have no App.

        Statuses are the latest per context (GitHub's merge semantics), or with
        `status_history` every status ever posted (the post-merge probe: anyone with write
        access can post a green status over a red one, so a red one must stay visible).
        """
        statuses = self.status_history(repo, sha) if status_history else self.statuses(repo, sha)
        return self.check_runs(repo, sha) + statuses


def _status_run(s: dict[str, Any]) -> CheckRun:
    """A commit status as a CheckRun without an App (pending → in progress)."""
    state = s.get("state")
    return CheckRun(
        name=s.get("context", ""),
        status="in_progress" if state == "pending" else "completed",
        conclusion=None if state == "pending" else ("success" if state == "success" else "failure"),
        output_summary=s.get("description") or "",
        started_at=_dt(s.get("created_at")),
        completed_at=_dt(s.get("updated_at")),
        id=s.get("id"),
        creator=_login(s.get("creator")) or None,
    )

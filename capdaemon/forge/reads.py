"""Forge reads besides snapshots: open PRs, files, ballots (comments, reactions), issues, checks."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from capdaemon.forge.convert import (
    _comment,
    _decode,
    _dt,
    _login,
)
from capdaemon.forge.errors import (
    Forbidden,
    NotFound,
)
from capdaemon.forge.markers import marker_key, parse_marker
from capdaemon.forge.types import (
    Comment,
    IssueActivity,
    MarkedIssue,
    PRStatus,
    PRSummary,
    Reaction,
)
from capdaemon.model import (
    CheckRun,
)


class ReadsMixin:
    """Forge methods that read lists, ballots, marked issues, checks and protection."""

    # ================================================================ reads
    def _rest_open_prs(self, repo: str) -> list[PRSummary]:
        """All open PRs of `repo` through REST (a failed page raises Incomplete: never a partial
        list); `list_open_prs` (batch.py) uses it where the GraphQL batch cannot be used."""
        items = self._pages(
            f"/repos/{repo}/pulls", {"state": "open", "sort": "created", "direction": "asc"}
        )
        return [self._summary(repo, p) for p in items]

    def _summary(self, repo: str, p: dict[str, Any]) -> PRSummary:
        return PRSummary(
            repo=repo,
            number=int(p["number"]),
            head_sha=p["head"]["sha"],
            head_ref=p["head"].get("ref", ""),
            base_ref=p["base"].get("ref", ""),
            author=_login(p.get("user")),
            draft=bool(p.get("draft")),
            labels=tuple(lb["name"] for lb in p.get("labels") or ()),
            state=p.get("state", "open"),
            updated_at=_dt(p.get("updated_at")),
        )

    def pull_status(self, repo: str, number: int) -> PRStatus:
        """Open, merged (and at which merge commit) or closed: one ETag-cached GET of the PR."""
        p = self._get(f"/repos/{repo}/pulls/{number}")
        merged = bool(p.get("merged"))
        return PRStatus(
            repo=repo,
            number=int(p["number"]),
            state=str(p.get("state", "open")),
            merged=merged,
            merge_sha=p.get("merge_commit_sha") if merged else None,
            head_sha=p["head"]["sha"],
            mergeable=p.get("mergeable"),
            base_ref=str((p.get("base") or {}).get("ref") or ""),
        )

    def branch_contains(self, repo: str, branch: str, sha: str) -> bool:
        """True when commit `sha` is on `branch` (its head or an ancestor of it): one compare."""
        cmp = self._get(f"/repos/{repo}/compare/{quote(branch, safe='/')}...{sha}")
        return cmp.get("status") in ("identical", "behind")

    def read_file(self, repo: str, path: str, ref: str, *, strict: bool = False) -> str | None:
        """A file's text at `ref` (None when absent or binary; strict: absence raises NotFound)."""
        try:
            data = self._get(f"/repos/{repo}/contents/{quote(path)}", {"ref": ref})
        except NotFound:
            if strict:
                raise
            return None
        if not isinstance(data, dict) or data.get("type") not in ("file", "symlink", None):
            return None
        if data.get("content") is None and data.get("sha"):
            return self._blob(repo, data["sha"])
        return _decode(data.get("content"))

    def _rest_comments(self, repo: str, issue_no: int) -> list[Comment]:
        """All comments of an issue through REST (every page), oldest first; no edit record
        (the GraphQL read in gql.py is the one the forge uses while GraphQL is there)."""
        items = self._pages(f"/repos/{repo}/issues/{issue_no}/comments")
        return [_comment(c) for c in items]

    def _rest_reactions(self, repo: str, issue_no: int) -> list[Reaction]:
        """All reactions on the issue itself through REST (every page; the fallback)."""
        items = self._pages(f"/repos/{repo}/issues/{issue_no}/reactions")
        out = []
        for r in items:
            at = _dt(r.get("created_at"))
            assert at is not None
            out.append(
                Reaction(
                    id=int(r["id"]), user=_login(r.get("user")), content=r["content"], created_at=at
                )
            )
        return out

    def issue_activity(self, repo: str, state: str = "open") -> dict[int, IssueActivity]:
        """Comment count, update time and reaction rollup of every issue of `repo` (no PRs).

        From the issue list: one request per 100 issues, 304s (not counted) when nothing
        changed. With a token only our own issues are listed (`creator`), as an App all.
        A failed page raises Incomplete: never a partial map.
        """
        params: dict[str, Any] = {"state": state, "sort": "created", "direction": "asc"}
        if not self.as_app:
            params["creator"] = self.login
        out: dict[int, IssueActivity] = {}
        for it in self._pages(f"/repos/{repo}/issues", params):
            if "pull_request" in it:
                continue
            rollup = it.get("reactions")
            reactions = None
            if isinstance(rollup, dict):
                reactions = tuple(
                    sorted(
                        (str(k), int(v))
                        for k, v in rollup.items()
                        if isinstance(v, int) and not isinstance(v, bool)
                    )
                )
            out[int(it["number"])] = IssueActivity(
                repo=repo,
                number=int(it["number"]),
                state=str(it.get("state", "open")),
                comments=int(it.get("comments") or 0),
                updated_at=_dt(it.get("updated_at")),
                reactions=reactions,
                body=it.get("body") if isinstance(it.get("body"), str) else None,
                title=it.get("title") if isinstance(it.get("title"), str) else None,
            )
        return out

    def permission(self, repo: str, login: str) -> str:
        """`admin`, `maintain`, `write`, `triage`, `read` or `none` for `login` on `repo`."""
        try:
            data = self._get(f"/repos/{repo}/collaborators/{quote(login, safe='')}/permission")
        except NotFound:
            return "none"
        return str(data.get("role_name") or data.get("permission") or "none")

    def collaborators(self, repo: str) -> list[tuple[str, str]] | None:
        """(login, role) of every collaborator of `repo`; None when GitHub does not let us
        list them (403/404: e.g. no push access, or a server without the endpoint)."""
        try:
            items = self._pages(f"/repos/{repo}/collaborators", {"affiliation": "all"})
        except (NotFound, Forbidden):
            return None
        out = []
        for c in items:
            role = c.get("role_name")
            if not role:
                perms = c.get("permissions") or {}
                role = next(
                    (
                        name
                        for key, name in (
                            ("admin", "admin"),
                            ("maintain", "maintain"),
                            ("push", "write"),
                            ("triage", "triage"),
                            ("pull", "read"),
                        )
                        if perms.get(key)
                    ),
                    "none",
                )
            out.append((_login(c), str(role)))
        return out

    def marked_issues(
        self, repo: str, kind: str | None = None, state: str = "all"
    ) -> list[MarkedIssue]:
        """Issues we wrote (our login + a capdaemon marker), optionally of one marker kind."""
        params: dict[str, Any] = {"state": state, "sort": "created", "direction": "asc"}
        if not self.as_app:
            params["creator"] = (
                self.login
            )  # a user login is a reliable filter; for Apps we filter here
        items = self._pages(f"/repos/{repo}/issues", params)
        out = []
        for it in items:
            mi = self._marked(repo, it)
            if mi is None:
                continue
            self._issue_index.setdefault((repo, marker_key(mi.marker)), mi.number)
            if kind is None or mi.marker.get("kind") == kind:
                out.append(mi)
        if state == "all":
            self._indexed.add(repo)
        return out

    def _ours(self, login: str) -> bool:
        return login.lower() == self.login.lower()

    def _marked(self, repo: str, it: dict[str, Any]) -> MarkedIssue | None:
        if "pull_request" in it or not self._ours(_login(it.get("user"))):
            return None
        marker = parse_marker(it.get("body"))
        if marker is None:
            return None
        return MarkedIssue(
            repo=repo,
            number=int(it["number"]),
            state=it.get("state", "open"),
            title=it.get("title") or "",
            body=it.get("body") or "",
            labels=tuple(lb["name"] for lb in it.get("labels") or ()),
            marker=marker,
            created_at=_dt(it.get("created_at")),
            closed_at=_dt(it.get("closed_at")),
            author=_login(it.get("user")),
        )

    def commit_checks(self, repo: str, sha: str, *, status_history: bool = False) -> list[CheckRun]:
        """Check runs and commit statuses on `sha`; statuses have no App.

        Statuses are the latest per context (GitHub's merge semantics), or with
        `status_history` every status ever posted (the post-merge probe: anyone with write
        access can post a green status over a red one, so a red one must stay visible).
        """
        statuses = (
            self.commit_status_history(repo, sha)
            if status_history
            else self._rest_statuses(repo, sha)
        )
        return self._check_runs(repo, sha) + statuses

    def _rest_check_runs(self, repo: str, sha: str) -> list[CheckRun]:
        """The check runs on `sha` only, through REST (batch.py's `check_runs` falls back here)."""
        return self._check_runs(repo, sha)

    def _rest_statuses(self, repo: str, sha: str) -> list[CheckRun]:
        """The latest commit status per context on `sha` through REST, as CheckRuns without an
        App (batch.py's `commit_statuses` falls back here)."""
        data = self._get(f"/repos/{repo}/commits/{sha}/status", {"per_page": 100})
        return [_status_run(s) for s in data.get("statuses") or ()]

    def commit_status_history(self, repo: str, sha: str) -> list[CheckRun]:
        """Every commit status ever posted on `sha` (all pages), as CheckRuns without an App."""
        return [_status_run(s) for s in self._pages(f"/repos/{repo}/commits/{sha}/statuses")]

    def commit_parents(self, repo: str, sha: str) -> tuple[str, ...]:
        """The parent shas of a commit (immutable: served from the sha cache after one read)."""
        key = ("parents", repo, sha)
        cached = self._sha_cache.get_(key)
        if cached is not None:
            return cached
        data = self._get(f"/repos/{repo}/git/commits/{sha}")
        parents = tuple(str(p["sha"]) for p in data.get("parents") or ())
        self._sha_cache.put(key, parents)
        return parents

    def repo_permissions(self, repo: str) -> dict[str, bool]:
        """Our permissions on `repo` (`push`, `admin`, …); NotFound when it is not visible."""
        return dict(self._get(f"/repos/{repo}").get("permissions") or {})

    def rate_limit_core(self) -> dict[str, Any]:
        """The core REST budget: `limit`, `remaining`, `reset` (GET /rate_limit is free)."""
        data = self._get("/rate_limit")
        return dict((data.get("resources") or {}).get("core") or data.get("rate") or {})

    def get_protection(self, repo: str, branch: str) -> dict[str, Any] | None:
        """The branch protection document, or None when the branch is not protected."""
        try:
            return self._get(f"/repos/{repo}/branches/{quote(branch, safe='')}/protection")
        except NotFound:
            return None


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

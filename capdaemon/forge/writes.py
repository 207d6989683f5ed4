"""Forge writes, idempotent and marked: checks (or statuses), merges, PR closing, protection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from capdaemon.forge.convert import (
    CHECK_NAME,
    _check_run,
    _iso,
    _login,
    log,
    pr_status,
    protection_ok,
    review_count,
)
from capdaemon.forge.errors import (
    BaseMoved,
    ForgeError,
    HeadMoved,
    Invalid,
    NotFound,
    NotMergeable,
)
from capdaemon.forge.gql import PULL_BEFORE_MERGE_QUERY, Graphql, GraphqlUnavailable
from capdaemon.forge.overflow import CHECK_SUMMARY_LIMIT, fit_body
from capdaemon.forge.types import PRStatus
from capdaemon.model import CheckRun

if TYPE_CHECKING:
    from capdaemon.forge.batch import Batch
    from capdaemon.forge.issues import Issues
    from capdaemon.forge.protection import Protection
    from capdaemon.forge.session import ForgeSession


class Writes:
    """Writes that compare desired with current first (never a duplicate, never a no-op write)."""

    def __init__(
        self,
        session: ForgeSession,
        issues: Issues,
        protection: Protection,
        batch: Batch,
        graphql: Graphql,
    ) -> None:
        self._http = session.http
        self._graphql = graphql
        self._batch = batch
        self._identity = session.identity
        self._clock = session.clock
        self._overflow = session.overflow
        self._memo = session.memo
        self._issues = issues
        self._protection = protection

    def publish_check(
        self,
        repo: str,
        head_sha: str,
        *,
        success: bool,
        title: str,
        summary: str,
        marker: dict[str, Any],
        name: str = CHECK_NAME,
        details_url: str | None = None,
        known_runs: Sequence[CheckRun] | None = None,
    ) -> bool:
        """Publish L1.C3 on `head_sha` (a check run as an App, a commit status with a token).

        Returns False when the same conclusion and text are already there (no write). Our
        current run is looked up in this tick's batch rollup of `head_sha` when it carried
        one, else in `known_runs` (the head's check runs this tick already read), else read
        through REST; the run written is noted in that rollup.
        """
        conclusion = "success" if success else "failure"
        if not self._identity.as_app:
            return self._publish_status(repo, head_sha, conclusion, title, name, details_url)
        text = fit_body(summary, marker, self._overflow.path, limit=CHECK_SUMMARY_LIMIT)
        out = {"title": title[:1000], "summary": text}
        cur = self._my_latest_run(repo, head_sha, name, known_runs)
        if cur is not None and _same_run(cur, conclusion, out):
            log.info("forge.write", op="publish_check", repo=repo, sha=head_sha[:12], noop=True)
            return False
        body: dict[str, Any] = {
            "status": "completed",
            "conclusion": conclusion,
            "completed_at": _iso(self._clock()),
            "output": out,
        }
        if details_url:
            body["details_url"] = details_url
        if cur is not None and cur.id is not None:
            _, data = self._http.req("PATCH", f"/repos/{repo}/check-runs/{cur.id}", body=body)
        else:
            body = {"name": name, "head_sha": head_sha, **body}
            _, data = self._http.req("POST", f"/repos/{repo}/check-runs", body=body)
        written = _check_run(data) if isinstance(data, dict) else None
        if written is None or written.name != name or written.app_id != self._identity.app_id:
            written = None  # an answer that is not our run: the kept rollup is dropped
        self._batch.note_run(repo, head_sha, written)
        log.info(
            "forge.write", op="publish_check", repo=repo, sha=head_sha[:12], conclusion=conclusion
        )
        return True

    def _my_latest_run(
        self, repo: str, head_sha: str, name: str, known: Sequence[CheckRun] | None
    ) -> CheckRun | None:
        """Our App's newest check run called `name` on `head_sha`, if any (from this tick's
        batch rollup when it carried `head_sha`, else `known`, else one REST read)."""
        kept = self._batch.kept_runs(repo, head_sha)
        if kept is not None:
            runs = list(kept)
        elif known is not None:
            runs = list(known)
        else:
            items = self._http.pages(
                f"/repos/{repo}/commits/{head_sha}/check-runs",
                {"check_name": name},
                key="check_runs",
            )
            runs = [_check_run(r) for r in items]
        app_id = self._identity.app_id
        mine = [r for r in runs if r.name == name and r.app_id == app_id]
        mine.sort(key=lambda r: int(r.id or 0), reverse=True)
        return mine[0] if mine else None

    def _publish_status(
        self, repo: str, sha: str, conclusion: str, title: str, name: str, details_url: str | None
    ) -> bool:
        description = title[:140]
        statuses = self._http.get(f"/repos/{repo}/commits/{sha}/statuses", {"per_page": 100})
        for s in statuses:  # newest first
            if s.get("context") == name and self._identity.ours(_login(s.get("creator"))):
                if s.get("state") == conclusion and (s.get("description") or "") == description:
                    log.info("forge.write", op="publish_status", repo=repo, sha=sha[:12], noop=True)
                    return False
                break
        body: dict[str, Any] = {"state": conclusion, "context": name, "description": description}
        if details_url:
            body["target_url"] = details_url
        self._http.req("POST", f"/repos/{repo}/statuses/{sha}", body=body)
        log.info("forge.write", op="publish_status", repo=repo, sha=sha[:12], conclusion=conclusion)
        return True

    def close_pr(self, repo: str, number: int, comment: str | None) -> bool:
        """Comment once and close the PR; False when it was already closed and commented."""
        wrote = False
        if comment:
            wrote = self._issues.comment_once(
                repo, number, {"kind": "close-pr", "pr": f"{repo}#{number}"}, comment
            )
        pr = self._http.get(f"/repos/{repo}/pulls/{number}")
        if pr.get("state") != "closed":
            self._http.req("PATCH", f"/repos/{repo}/pulls/{number}", body={"state": "closed"})
            log.info("forge.write", op="close_pr", repo=repo, number=number)
            wrote = True
        return wrote

    def merge(
        self, repo: str, number: int, sha: str, method: str, *, base: str | None = None
    ) -> str:
        """Merge at exactly `sha` with `method`; the merge commit's sha. HeadMoved if head moved;
        BaseMoved if `base` is given and the PR targets another branch (read right before the
        merge call; GitHub's merge call guards the head sha only).

        Idempotent: a PR already merged at `sha` returns its merge commit without a second merge.
        """
        pr = self._pull_before_merge(repo, number)
        if base is not None and pr.base_ref != base:
            raise BaseMoved(
                f"{repo}#{number} targets {pr.base_ref or '?'}, not the approved base {base}",
                found=pr.base_ref,
                status=409,
            )
        if pr.merged:
            if pr.head_sha != sha:
                raise HeadMoved(
                    f"{repo}#{number} was merged at {pr.head_sha[:12]}, not {sha[:12]}",
                    status=409,
                )
            return str(pr.merge_sha)
        if pr.head_sha != sha:
            raise HeadMoved(
                f"{repo}#{number} head is {pr.head_sha[:12]}, expected {sha[:12]}", status=409
            )
        try:
            _, data = self._http.req(
                "PUT",
                f"/repos/{repo}/pulls/{number}/merge",
                body={"sha": sha, "merge_method": method},
            )
        except NotMergeable:  # a retried PUT after a lost reply: merged by the first one?
            again = pr_status(repo, self._http.get(f"/repos/{repo}/pulls/{number}"))
            if again.merged and again.head_sha == sha:
                return str(again.merge_sha)
            raise
        log.info("forge.write", op="merge", repo=repo, number=number, sha=sha[:12], method=method)
        return str(data["sha"])

    def _pull_before_merge(self, repo: str, number: int) -> PRStatus:
        """The PR right before its merge call: one GraphQL point (``PULL_BEFORE_MERGE_QUERY``),
        else the REST PR (GraphQL not there, or its answer failed or could not be read)."""
        if self._graphql.available:
            owner, name = repo.split("/", 1)
            variables = {"owner": owner, "name": name, "number": number}
            try:
                data = self._graphql.graphql(
                    PULL_BEFORE_MERGE_QUERY, variables, f"{repo}#{number} before its merge"
                )
                return status_from_graphql(repo, number, data)
            except GraphqlUnavailable:
                self._graphql.fall_back()
            except ForgeError as exc:
                log.warning("forge.pull_via_rest", pr=f"{repo}#{number}", error=str(exc)[:200])
        return pr_status(repo, self._http.get(f"/repos/{repo}/pulls/{number}"))

    def set_protection(
        self,
        repo: str,
        branch: str,
        check_name: str = CHECK_NAME,
        app_id: int | None = None,
        *,
        enforce_admins: bool = False,
        reviewers: int | None = None,
    ) -> bool:
        """Require `check_name` (from `app_id`), PRs, no force pushes on `branch`; False if so.

        `reviewers`: the approving reviews PRs need (`protect --reviewers N`); None keeps the
        branch's current number (0 on a new protection: capdaemon is the reviewer of record).
        """
        cur = self._protection.get_protection(repo, branch)
        count = review_count(cur)
        wanted = count if reviewers is None else reviewers
        if cur is not None and protection_ok(cur, check_name, app_id) and count == wanted:
            return False
        body = protection_body(
            cur, check_name, app_id, enforce_admins=enforce_admins, reviews=wanted
        )
        self._memo.forget_branch((repo, branch))
        self._http.req(
            "PUT", f"/repos/{repo}/branches/{quote(branch, safe='')}/protection", body=body
        )
        log.info("forge.write", op="set_protection", repo=repo, branch=branch, check=check_name)
        return True


def protection_body(
    cur: dict[str, Any] | None,
    check_name: str,
    app_id: int | None,
    *,
    enforce_admins: bool = False,
    reviews: int = 0,
) -> dict[str, Any]:
    """The branch protection `capdaemon protect` writes (the PUT body): `check_name` required
    (from `app_id`), the branch's other required checks kept, PRs with `reviews` approving
    reviews, no force pushes, no deletions. One home for what is applied and what a read-only
    App's operator is told to set by hand."""
    strict, checks = _other_checks(cur, check_name)
    mine: dict[str, Any] = {"context": check_name}
    if app_id is not None:
        mine["app_id"] = app_id
    checks.append(mine)
    return {
        "required_status_checks": {"strict": strict, "checks": checks},
        "enforce_admins": enforce_admins,
        "required_pull_request_reviews": {"required_approving_review_count": reviews},
        "restrictions": None,
        "allow_force_pushes": False,
        "allow_deletions": False,
    }


def _other_checks(cur: dict[str, Any] | None, check_name: str) -> tuple[bool, list[dict[str, Any]]]:
    """A protection's `strict` flag and its required checks other than `check_name` (kept)."""
    if cur is None:
        return False, []
    rsc = cur.get("required_status_checks") or {}
    checks = [
        {k: v for k, v in c.items() if k in ("context", "app_id") and v is not None}
        for c in rsc.get("checks") or [{"context": ctx} for ctx in rsc.get("contexts") or ()]
        if c.get("context") != check_name
    ]
    return bool(rsc.get("strict")), checks


def _same_run(cur: CheckRun, conclusion: str, out: dict[str, str]) -> bool:
    """Does check run `cur` already say this (completed, same conclusion, title and summary)?"""
    return bool(
        cur.status == "completed"
        and cur.conclusion == conclusion
        and cur.output_title == out["title"]
        and cur.output_summary == out["summary"]
    )


def status_from_graphql(repo: str, number: int, data: dict[str, Any]) -> PRStatus:
    """`PULL_BEFORE_MERGE_QUERY`'s answer as where the PR stands (its mergeability is not
    asked: None); NotFound when GitHub has no such PR, Invalid when a field is missing or of
    another type."""
    pr = (data.get("repository") or {}).get("pullRequest")
    if pr is None:
        raise NotFound(f"GitHub GraphQL: {repo}#{number} not found")
    base, head, merged = pr.get("baseRefName"), pr.get("headRefOid"), pr.get("merged")
    state = pr.get("state")
    commit = pr.get("mergeCommit")
    merge_sha = commit.get("oid") if isinstance(commit, dict) else None
    if not (isinstance(base, str) and isinstance(head, str) and isinstance(merged, bool)):
        raise Invalid(f"GitHub GraphQL: {repo}#{number}: base, head or merged state missing")
    if not isinstance(state, str) or (merged and not isinstance(merge_sha, str)):
        raise Invalid(f"GitHub GraphQL: {repo}#{number}: state or merge commit missing")
    return PRStatus(
        repo=repo,
        number=number,
        state="open" if state == "OPEN" else "closed",
        merged=merged,
        merge_sha=merge_sha if merged else None,
        head_sha=head,
        mergeable=None,
        base_ref=base,
    )

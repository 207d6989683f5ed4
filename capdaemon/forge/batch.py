"""Batch gathering: one GraphQL query per page of a repo's open PRs, with each head's checks.

``list_open_prs`` reads every open PR of a repo with its head's check rollup (check runs and
the latest commit status per context) in one GraphQL request per 100 PRs, and keeps the
checks for this tick, so ``check_runs`` and ``commit_statuses`` of an unchanged head cost no
request. It fails closed piece by piece:

- a PR whose rollup is incomplete (more than 100 contexts, a head that moved, an error
  under its ``commits``) gets no kept checks: it is read through REST like before;
- anything else wrong with the answer (an error elsewhere, a PR node missing, more than 100
  labels, a later page failing) drops the whole batch for that repo: the REST list and
  per-PR reads are used, never a partial list.

Each PR's own facts (``PullFacts``: base, counts, title, body, mergeability) are kept too,
so a snapshot of a PR in this tick's batch needs no ``GET /pulls/N``. A check run capdaemon
writes on a kept head replaces its earlier one in the kept rollup (``note_run``): the merge
step decides on the rollup plus what capdaemon wrote, with no per-PR check read; the merge
call is bound to the head sha, so a push in between is refused by GitHub (409).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capdaemon.forge.checks import Checks
from capdaemon.forge.convert import _dt, log
from capdaemon.forge.errors import ForgeError
from capdaemon.forge.gql import (
    OPEN_PULLS_QUERY,
    OPEN_PULLS_WITH_BASE_QUERY,
    PULLS_PAGE,
    SMALL_PULLS_PAGE,
    Graphql,
    GraphqlUnavailable,
    _author,
)
from capdaemon.forge.pullfacts import MERGEABLE_STATE, PullFacts, facts_from_node, mergeable_of
from capdaemon.forge.refrules import BranchFacts, branch_facts
from capdaemon.forge.session import TickMemo
from capdaemon.forge.types import PRSummary
from capdaemon.model import CheckRun

MAX_PR_PAGES = 100  # 10,000 open PRs in one repo
SMALL_PAGE_ROOM = 10  # new PRs a small first page has room for before a second page is needed

Kept = tuple[tuple[CheckRun, ...], tuple[CheckRun, ...]]  # (check runs, statuses)
OpenPrLister = Callable[[str], list[PRSummary]]  # the REST list of a repo's open PRs


class BatchIncomplete(ForgeError):
    """The batch answer cannot stand in for the REST list (the caller falls back to REST)."""


def _run(node: dict[str, Any]) -> CheckRun:
    """A GraphQL CheckRun as the REST check-run conversion gives it."""
    app = (node.get("checkSuite") or {}).get("app") or {}
    conclusion = node.get("conclusion")
    return CheckRun(
        name=str(node.get("name") or ""),
        status=str(node.get("status") or "").lower(),
        conclusion=str(conclusion).lower() if conclusion else None,
        app_slug=app.get("slug"),
        app_id=app.get("databaseId"),
        output_title=node.get("title") or "",
        output_summary=node.get("summary") or "",
        output_text=node.get("text") or "",
        started_at=_dt(node.get("startedAt")),
        completed_at=_dt(node.get("completedAt")),
        id=node.get("databaseId"),
    )


def _status(node: dict[str, Any]) -> CheckRun:
    """A GraphQL StatusContext as the REST status conversion gives it (pending → in progress)."""
    state = str(node.get("state") or "").lower()
    pending = state in ("pending", "expected")
    at = _dt(node.get("createdAt"))
    return CheckRun(
        name=str(node.get("context") or ""),
        status="in_progress" if pending else "completed",
        conclusion=None if pending else ("success" if state == "success" else "failure"),
        output_summary=node.get("description") or "",
        started_at=at,
        completed_at=at,
    )


def _kept(node: dict[str, Any]) -> Kept | None:
    """The head's (check runs, statuses), or None when the rollup is not complete."""
    commits = (node.get("commits") or {}).get("nodes") or []
    if len(commits) != 1 or not isinstance(commits[0], dict):
        return None
    commit = commits[0].get("commit") or {}
    if commit.get("oid") != node.get("headRefOid"):
        return None
    rollup = commit.get("statusCheckRollup")
    if rollup is None:
        return (), ()
    contexts = rollup.get("contexts") or {}
    if (contexts.get("pageInfo") or {}).get("hasNextPage") or contexts.get("nodes") is None:
        return None
    return _contexts(contexts["nodes"])


def _contexts(nodes: list[Any]) -> Kept | None:
    """A complete rollup's contexts as (check runs, newest first; statuses), or None when one
    of them is of a kind not known here."""
    runs: list[CheckRun] = []
    statuses: list[CheckRun] = []
    for ctx in nodes:
        if not isinstance(ctx, dict):
            return None
        if ctx.get("__typename") == "CheckRun":
            runs.append(_run(ctx))
        elif ctx.get("__typename") == "StatusContext":
            statuses.append(_status(ctx))
        else:
            return None
    runs.sort(key=lambda r: r.id or 0, reverse=True)  # newest first, as REST lists them
    return tuple(runs), tuple(statuses)


def _summary(repo: str, node: Any) -> tuple[PRSummary, PullFacts | None]:
    """The list entry of one PR node, and its facts for a snapshot (None: read through REST)."""
    if not isinstance(node, dict) or not node.get("number") or not node.get("headRefOid"):
        raise BatchIncomplete(f"GitHub GraphQL: an open PR of {repo} came back empty")
    labels = node.get("labels") or {}
    names = [str(lb.get("name")) for lb in labels.get("nodes") or () if isinstance(lb, dict)]
    if int(labels.get("totalCount") or 0) != len(names):
        raise BatchIncomplete(f"GitHub GraphQL: PR {repo}#{node['number']} has more labels")
    author = _author(node.get("author"))
    known = node.get("mergeable") in MERGEABLE_STATE  # else: as the REST list, not known
    pr = PRSummary(
        repo=repo,
        number=int(node["number"]),
        head_sha=str(node["headRefOid"]),
        head_ref=str(node.get("headRefName") or ""),
        base_ref=str(node.get("baseRefName") or ""),
        author=author,
        draft=bool(node.get("isDraft")),
        labels=tuple(names),
        state="open",
        updated_at=_dt(node.get("updatedAt")),
        mergeable=mergeable_of(node) if known else None,
        mergeable_known=known,
    )
    return pr, facts_from_node(node, author, tuple(names))


def _ref_error(err: dict[str, Any]) -> bool:
    """Is an error confined to the base branch's ``ref`` (its facts are then read via REST)?"""
    path = err.get("path")
    return isinstance(path, list) and path[:2] == ["repository", "ref"]


def _commits_error(err: dict[str, Any]) -> int | None:
    """The page index of the PR an error is confined to (under its ``commits``), else None."""
    path = err.get("path")
    if (
        isinstance(path, list)
        and len(path) > 4
        and path[:3] == ["repository", "pullRequests", "nodes"]
        and isinstance(path[3], int)
        and path[4] == "commits"
    ):
        return path[3]
    return None


class Batch:
    """``list_open_prs`` through GraphQL, keeping each head's checks for this tick."""

    def __init__(
        self, graphql: Graphql, checks: Checks, rest_open_prs: OpenPrLister, memo: TickMemo
    ) -> None:
        self._graphql = graphql
        self._checks = checks
        self._rest_open_prs = rest_open_prs
        self._memo = memo
        self._kept: dict[tuple[str, str], Kept] = {}
        self._facts: dict[tuple[str, int], PullFacts] = {}
        self._open: dict[str, int] = {}  # repo → open PRs at its last listing (this process)

    def page_size(self, repo: str, after: str | None) -> int:
        """PRs a page asks for: a repo that had few open PRs at its last listing in this process
        is read in pages of SMALL_PULLS_PAGE (1 point instead of 3, GitHub's formula), with
        room for a few new ones; any other page, or a repo not listed yet, 100."""
        few = self._open.get(repo, PULLS_PAGE) <= SMALL_PULLS_PAGE - SMALL_PAGE_ROOM
        return SMALL_PULLS_PAGE if after is None and few else PULLS_PAGE

    def forget(self) -> None:
        """Drop the kept checks and PR facts (at the start of each tick)."""
        self._kept.clear()
        self._facts.clear()

    def list_open_prs(
        self, repo: str, *, base: str | None = None, batch: bool = True
    ) -> list[PRSummary]:
        """All open PRs of `repo`, oldest first; never a partial list (a failed page raises).

        `base`: the supervised base branch, whose head and protection the first page carries
        into this tick's memo (``refrules``; REST reads them when the page could not).
        `batch` off: the REST list and per-PR check reads (benchmarks compare the two).
        """
        for key in [k for k in self._kept if k[0] == repo]:
            del self._kept[key]
        for fkey in [k for k in self._facts if k[0] == repo]:
            del self._facts[fkey]
        if batch and self._graphql.available:
            try:
                prs, checks, facts = self._batch(repo, base)
            except GraphqlUnavailable:
                self._graphql.fall_back()
            except ForgeError as exc:
                log.warning("forge.batch_failed", repo=repo, error=str(exc), fallback="REST")
            else:
                self._kept.update(checks)
                self._facts.update(facts)
                return prs
        return self._rest_open_prs(repo)

    def _carry(self, repo: str, base: str, ref: Any) -> None:
        """Keep what the page said of the base branch for this tick (nothing when unsure)."""
        got: BranchFacts | None = branch_facts(ref)
        if got is None:
            log.info("forge.base_branch_via_rest", repo=repo, branch=base)
            return
        self._memo.heads[(repo, base)] = got.sha
        self._memo.effective[(repo, base)] = got.protection
        if got.policy_blob is not None:
            self._memo.policy_blobs[(repo, base)] = got.policy_blob

    def _page(
        self, repo: str, base: str | None, after: str | None
    ) -> tuple[dict[str, Any], set[int | None], Any]:
        """One page: (its pullRequests connection, the PR indexes errors are confined to, the
        base branch's ref when this page asked for it and no error touched it)."""
        owner, name = repo.split("/", 1)
        variables: dict[str, Any] = {
            "owner": owner,
            "name": name,
            "after": after,
            "first": self.page_size(repo, after),
        }
        with_base = base is not None and after is None
        if with_base:
            variables["base"] = f"refs/heads/{base}"
        query = OPEN_PULLS_WITH_BASE_QUERY if with_base else OPEN_PULLS_QUERY
        data, errors = self._graphql.graphql_partial(query, variables, f"open PRs of {repo}")
        repository = data.get("repository") or {}
        ref = repository.get("ref") if with_base and not any(map(_ref_error, errors)) else None
        errors = [e for e in errors if not _ref_error(e)]
        confined = {_commits_error(e) for e in errors}
        if None in confined:
            text = "; ".join(str(e.get("message", "")) for e in errors)[:300]
            raise BatchIncomplete(f"GitHub GraphQL open PRs of {repo}: {text}")
        conn = repository.get("pullRequests")
        if not isinstance(conn, dict) or not isinstance(conn.get("nodes"), list):
            raise BatchIncomplete(f"GitHub GraphQL: no open PR list for {repo}")
        return conn, confined, ref

    def _batch(
        self, repo: str, base: str | None
    ) -> tuple[list[PRSummary], dict[tuple[str, str], Kept], dict[tuple[str, int], PullFacts]]:
        prs: list[PRSummary] = []
        checks: dict[tuple[str, str], Kept] = {}
        facts: dict[tuple[str, int], PullFacts] = {}
        after: str | None = None
        ref: Any = None
        for _ in range(MAX_PR_PAGES):
            conn, confined, got_ref = self._page(repo, base, after)
            ref = got_ref if after is None else ref
            for i, node in enumerate(conn["nodes"]):
                pr, pull = _summary(repo, node)
                prs.append(pr)
                got = None if i in confined else _kept(node)
                if got is not None:
                    checks[(repo, pr.head_sha)] = got
                if pull is not None and i not in confined:
                    facts[(repo, pr.number)] = pull
            info = conn.get("pageInfo") or {}
            if not info.get("hasNextPage"):
                if base is not None:
                    self._carry(repo, base, ref)
                self._open[repo] = len(prs)
                return prs, checks, facts
            after = info.get("endCursor")
            if not after:
                break
        raise BatchIncomplete(f"GitHub GraphQL: open PRs of {repo} did not end")

    def check_runs(self, repo: str, sha: str) -> list[CheckRun]:
        """The check runs on `sha` (what a PRSnapshot carries): this tick's batch, else REST."""
        got = self._kept.get((repo, sha))
        return list(got[0]) if got is not None else self._checks.check_runs(repo, sha)

    def commit_statuses(self, repo: str, sha: str) -> list[CheckRun]:
        """The latest commit status per context on `sha`: this tick's batch, else REST."""
        got = self._kept.get((repo, sha))
        return list(got[1]) if got is not None else self._checks.statuses(repo, sha)

    def pull_facts(self, repo: str, number: int) -> PullFacts | None:
        """PR `number`'s facts as this tick's batch carried them; None when it did not."""
        return self._facts.get((repo, number))

    def rollup(self, repo: str, sha: str) -> list[CheckRun] | None:
        """The check runs and statuses on `sha` as this tick's batch rollup carried them, with
        the check runs capdaemon wrote since (``note_run``); None when the batch did not carry
        a complete rollup of `sha` (the caller reads through REST)."""
        got = self._kept.get((repo, sha))
        return list(got[0]) + list(got[1]) if got is not None else None

    def kept_runs(self, repo: str, sha: str) -> tuple[CheckRun, ...] | None:
        """The check runs on `sha` from this tick's batch (with ours noted); None: not kept."""
        got = self._kept.get((repo, sha))
        return got[0] if got is not None else None

    def note_run(self, repo: str, sha: str, run: CheckRun | None) -> None:
        """Check run `run` (just written by us) replaces its App's earlier run of that name in
        the kept rollup of `sha`; nothing when the batch did not carry that rollup. None (we
        wrote, but cannot tell what GitHub now shows) drops the kept rollup: `sha` is read
        through REST from then on this tick."""
        got = self._kept.get((repo, sha))
        if got is None:
            return
        if run is None:
            del self._kept[(repo, sha)]
            return
        others = tuple(r for r in got[0] if (r.name, r.app_id) != (run.name, run.app_id))
        self._kept[(repo, sha)] = ((run, *others), got[1])

"""ForgePort: the daemon's typed view of GitHub — every read and write it needs from the forge."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from capdaemon.forge.convert import CHECK_NAME
from capdaemon.forge.types import (
    Comment,
    IssueList,
    IssueListing,
    MarkedIssue,
    PRStatus,
    PRSummary,
    Reaction,
    RecentChanges,
)
from capdaemon.forge.wirestats import WireCounts
from capdaemon.model import CheckRun, PRSnapshot

if TYPE_CHECKING:
    from capdaemon.forge.installations import Installations
    from capdaemon.forge.transport import Transport

__all__ = ["ForgePort", "JsonObject", "Marker", "RateBudget"]

# A JSON object as GitHub sends it (branch protection, rate limits): its shape is GitHub's.
JsonObject = dict[str, Any]
# The hidden marker written into a body to find an issue, comment or check again (JSON object).
Marker = dict[str, Any]


class RateBudget(TypedDict):
    """The last primary rate-limit figures plus this tick's wait budget (tick metrics)."""

    remaining: int | None
    limit: int | None
    used: int | None
    reset: str | None  # ISO 8601, UTC
    wait_budget_left: float
    wait_spent: float
    requests: int
    not_modified: int
    writes: int
    by_installation: dict[str, int | None]  # an App's installation id → requests left


class ForgePort(Protocol):
    """What the daemon, its commands and its checks need from GitHub, and nothing more.

    Reads return frozen values (forge.types, model); writes are idempotent and marked, and
    return whether they changed anything. Failures raise forge.errors.ForgeError subclasses.
    """

    # ------------------------------------------------------------ identity and plumbing
    @property
    def state_dir(self) -> Path | None:
        """Where over-long bodies are saved in full (see forge.overflow); None: nowhere."""
        ...

    @property
    def transport(self) -> Transport:
        """The one HTTP adapter: retries, ETag cache, pacing, counters."""
        ...

    @property
    def installations(self) -> Installations | None:
        """The App's installations and their tokens; None with a personal token."""
        ...

    @property
    def as_app(self) -> bool:
        """True as a GitHub App installation (check runs), False with a token (statuses)."""
        ...

    @property
    def login(self) -> str:
        """Who we act as: `<app-slug>[bot]` for an App, the token's user login otherwise."""
        ...

    def installation_info(
        self, account: str | None = None
    ) -> tuple[int, str, dict[str, str]] | None:
        """(installation id, account login, granted permissions) of the installation serving
        `account` (None: the home one); None with a token."""
        ...

    def renew_token(self) -> None:
        """As an App: the home installation's token, minted when none is held or it is due."""
        ...

    def new_tick(self, *, full: bool = True) -> None:
        """Reset the wait budget and the per-tick caches (`full` False: a targeted tick)."""
        ...

    def rate_budget(self) -> RateBudget:
        """Rate-limit figures and this tick's wait budget."""
        ...

    def graphql_room(self, points: int, own_per_hour: int) -> bool:
        """May a spender whose share of the GraphQL budget is `own_per_hour` spend `points`
        now, as the budget's last answer said (capdaemon.forge.ratelimit.pro_rata_room)?"""
        ...

    def wire_counts(self) -> WireCounts:
        """What went over the wire so far (running counters: requests, 304s, writes, seconds
        waited); the difference of two readings is what happened between them."""
        ...

    def pause(self, seconds: float) -> bool:
        """Wait `seconds`, spent from this tick's wait budget; False (no wait) when it does not
        allow that much."""
        ...

    def rate_limit_core(self) -> JsonObject:
        """The core REST budget: `limit`, `remaining`, `reset`."""
        ...

    def close(self) -> None:
        """Close HTTP connections."""
        ...

    # ------------------------------------------------------------ reads
    def list_open_prs(self, repo: str, base: str | None = None) -> list[PRSummary]:
        """Every open PR of `repo` (`base`: the supervised branch, whose head and protection
        the same read may carry for this tick)."""
        ...

    def snapshot(
        self,
        repo: str,
        number: int,
        *,
        contents_for: Callable[[str], bool] | None = None,
        known_runs: tuple[str, Iterable[CheckRun]] | None = None,
    ) -> PRSnapshot:
        """One PR, gathered once, immutable."""
        ...

    def pull_status(self, repo: str, number: int) -> PRStatus:
        """Where a PR stands right now."""
        ...

    def check_runs(self, repo: str, sha: str) -> list[CheckRun]:
        """Check runs on a commit."""
        ...

    def commit_statuses(self, repo: str, sha: str) -> list[CheckRun]:
        """Commit statuses on a commit, as check runs."""
        ...

    def commit_checks(self, repo: str, sha: str, *, status_history: bool = False) -> list[CheckRun]:
        """Check runs and commit statuses on a commit."""
        ...

    def rollup_checks(self, repo: str, sha: str) -> list[CheckRun] | None:
        """Check runs and statuses on a commit as this tick's batch carried them, with the
        check runs we wrote since; None when the batch did not carry them."""
        ...

    def commit_parents(self, repo: str, sha: str) -> tuple[str, ...]:
        """The parents of a commit."""
        ...

    def branch_contains(self, repo: str, branch: str, sha: str) -> bool:
        """True when `sha` is reachable from `branch`."""
        ...

    def comments(self, repo: str, issue_no: int) -> list[Comment]:
        """Every comment on an issue or PR."""
        ...

    def reactions(self, repo: str, issue_no: int) -> list[Reaction]:
        """Every reaction on an issue or PR."""
        ...

    def recent_changes(self, repo: str, kind: str, count: int = 1) -> RecentChanges:
        """The top of a repo's PR ("pulls") or issue ("issues") list by update time."""
        ...

    def issue_listing(self, repo: str, lists: tuple[IssueList, ...]) -> IssueListing:
        """The open issues' activity from issue listings read in full, and what the first
        (the changes list) carried."""
        ...

    def issue_list_marks(self, repo: str, lst: IssueList, page: int = 1) -> RecentChanges:
        """One page of an issue listing, each issue with a mark that moves when it changes."""
        ...

    def check_marks(self, repo: str, sha: str, feed: str = "checks") -> RecentChanges:
        """Marks that move when a check run (or, `feed` "checks", a commit status) changes."""
        ...

    def merge_checks(
        self, commits: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[CheckRun] | None]:
        """The check runs on each (repo, merge sha) in GraphQL queries of many commits each
        (capdaemon.forge.mergechecks); None for one REST must read; raises on any failure."""
        ...

    def head_rollups(self, heads: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """The check rollup state of each (repo, sha) known to GitHub, in GraphQL queries of
        many heads each (capdaemon.forge.rollups); raises on any failure."""
        ...

    def permission(self, repo: str, login: str) -> str:
        """A user's permission on `repo` (`admin`, `write`, `read`, `none`, …)."""
        ...

    def collaborators(self, repo: str) -> list[tuple[str, str]] | None:
        """(login, permission) of every collaborator; None when the list cannot be read."""
        ...

    def repo_permissions(self, repo: str, max_age: timedelta | None = None) -> dict[str, bool]:
        """Our permissions on `repo` (`push`, `admin`, …); `max_age`: a recent answer will do."""
        ...

    def get_protection(self, repo: str, branch: str) -> JsonObject | None:
        """The branch protection document; None when the branch is not protected."""
        ...

    def effective_protection(self, repo: str, branch: str) -> JsonObject | None:
        """Branch protection and rulesets merged into one document; None when unprotected."""
        ...

    def policy_text(self, repo: str, branch: str) -> str | None:
        """`.capdaemon.yml` as committed on `branch`; None when absent."""
        ...

    # ------------------------------------------------------------ writes
    def publish_check(
        self,
        repo: str,
        head_sha: str,
        *,
        success: bool,
        title: str,
        summary: str,
        marker: Marker,
        name: str = CHECK_NAME,
        details_url: str | None = None,
        known_runs: Sequence[CheckRun] | None = None,
    ) -> bool:
        """Publish the verdict as a check run (App) or a commit status (token); `known_runs`:
        the head's check runs as this tick read them (our current run is looked up there)."""
        ...

    def ensure_issue(
        self,
        repo: str,
        marker: Marker,
        title: str,
        body: str,
        labels: Iterable[str] = (),
        *,
        reopen: bool = False,
        number: int | None = None,
    ) -> MarkedIssue:
        """The issue carrying `marker`, created or updated to this title, body and labels."""
        ...

    def close_issue(self, repo: str, number: int, comment: str | None = None) -> bool:
        """Close an issue, with an optional closing comment."""
        ...

    def find_issue(self, repo: str, marker: Marker) -> MarkedIssue | None:
        """The issue carrying `marker` (kind and key), open or closed; None when there is none."""
        ...

    def comment_once(self, repo: str, number: int, marker: Marker, body: str) -> bool:
        """Comment unless a comment with this marker is already there."""
        ...

    def close_pr(self, repo: str, number: int, comment: str | None) -> bool:
        """Close a PR, with an optional comment."""
        ...

    def merge(
        self, repo: str, number: int, sha: str, method: str, *, base: str | None = None
    ) -> str:
        """Merge a PR at exactly `sha` (and base `base`); the merge commit's sha."""
        ...

    def open_revert_pr(
        self, repo: str, merge_sha: str, base: str, *, title: str, body: str, label: str
    ) -> tuple[int, str]:
        """Open a PR reverting `merge_sha` on `base`: (number, head sha)."""
        ...

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
        """Require the capdaemon check on `branch` (and `reviewers` approving reviews when
        given; None keeps what the branch requires)."""
        ...

"""Forge: the only PyGithub user — gathers PR snapshots and makes idempotent, marked writes.

`Forge` builds its collaborators once (HTTP, identity, caches in one ForgeSession; GraphQL,
files, checks, batch, snapshots, reads, protection, issues, writes, reverts) and exposes the
ForgePort methods by delegating to them; `Forge.from_config` connects (see forge.build).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from github import Github, GithubIntegration

from capdaemon.config import GitHubConfig
from capdaemon.forge.batch import Batch
from capdaemon.forge.build import connect
from capdaemon.forge.checks import Checks
from capdaemon.forge.convert import (
    CHECK_NAME,
    COMMITS_CAP,
    COMPARE_MAX_FILES,
    CONTENT_MAX_BYTES,
    DEFAULT_CONTENT_GLOBS,
    FILES_CAP,
    LABEL_COLOR,
    USER_AGENT,
    _from_patch,
    default_contents_for,
    git_blob_sha,
    protection_ok,
)
from capdaemon.forge.files import Files
from capdaemon.forge.gql import Graphql
from capdaemon.forge.http import Http
from capdaemon.forge.installations import Installations
from capdaemon.forge.issues import Issues
from capdaemon.forge.mergechecks import merge_checks
from capdaemon.forge.port import JsonObject, Marker, RateBudget
from capdaemon.forge.protection import Protection
from capdaemon.forge.ratelimit import WaitBudget, pro_rata_room
from capdaemon.forge.reads import Reads
from capdaemon.forge.reverts import Reverts
from capdaemon.forge.rollups import head_rollups
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.session import ForgeSession, Identity, OverflowDir, ShaCaches, TickMemo
from capdaemon.forge.snapshot import Snapshots
from capdaemon.forge.taskprs import TaskPulls
from capdaemon.forge.transport import Clock, Sleeper, Transport
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
from capdaemon.forge.writes import Writes
from capdaemon.model import CheckRun, PRSnapshot

__all__ = [
    "CHECK_NAME",
    "COMMITS_CAP",
    "COMPARE_MAX_FILES",
    "CONTENT_MAX_BYTES",
    "DEFAULT_CONTENT_GLOBS",
    "FILES_CAP",
    "LABEL_COLOR",
    "USER_AGENT",
    "Forge",
    "_from_patch",
    "default_contents_for",
    "git_blob_sha",
    "protection_ok",
]


class Forge:
    """The GitHub adapter: immutable snapshots in, idempotent marked writes out."""

    batch_gathering: bool = True  # off: the REST list and per-PR check reads (benchmarks)

    def __init__(
        self,
        gh: Github,
        transport: Transport,
        *,
        scrubber: Scrubber,
        clock: Clock,
        app_id: int | None = None,
        integration: GithubIntegration | None = None,
        installations: Installations | None = None,
        login: str | None = None,
        state_dir: Path | None = None,
    ) -> None:
        http = Http(gh, transport, scrubber)
        identity = Identity(
            http,
            app_id=app_id,
            integration=integration,
            installations=installations,
            login=login,
        )
        session = ForgeSession(
            http=http,
            identity=identity,
            scrubber=scrubber,
            clock=clock,
            caches=ShaCaches(),
            overflow=OverflowDir(state_dir),
            memo=TickMemo(),
        )
        self.session = session
        self.transport = transport
        self.scrubber = scrubber
        self.clock = clock
        self._build(session)

    def _build(self, session: ForgeSession) -> None:
        """The collaborators, each given what it needs."""
        self._graphql = Graphql(session)
        self._files = Files(session)
        self._checks = Checks(session)
        self._reads = Reads(session, self._graphql)
        self._batch = Batch(self._graphql, self._checks, self._reads.rest_open_prs, session.memo)
        self._protection = Protection(session, self._files)
        self._snapshots = Snapshots(
            session, self._files, self._checks, self._protection, self._batch.pull_facts
        )
        self._issues = Issues(session)
        self._writes = Writes(session, self._issues, self._protection, self._batch, self._graphql)
        self._reverts = Reverts(session, self._files, self._issues)
        self._task_pulls = TaskPulls(session)

    # ================================================================ construction
    @classmethod
    def from_config(
        cls,
        gh: GitHubConfig,
        *,
        token: str | None = None,
        key_pem: bytes | None = None,
        clock: Clock | None = None,
        sleep: Sleeper | None = None,
        write_interval: float = 1.0,
        attempts: int = 4,
        timeout: int = 30,
        state_dir: Path | None = None,
    ) -> Forge:
        """Build from config: as an App installation when app_id and a key are given, else a token.

        The token defaults to the variable `gh.token_env`; the key to `gh.private_key_file`.
        `sleep` and `clock` are injectable (tests pass a recording sleeper); `write_interval`
        paces writes (GitHub asks for about one write a second).
        """
        c = connect(
            gh,
            token=token,
            key_pem=key_pem,
            clock=clock,
            sleep=sleep,
            write_interval=write_interval,
            attempts=attempts,
            timeout=timeout,
        )
        return cls(
            c.client,
            c.transport,
            scrubber=c.scrubber,
            clock=c.clock,
            app_id=c.app_id,
            integration=c.integration,
            installations=c.installations,
            state_dir=state_dir,
        )

    def close(self) -> None:
        """Close HTTP connections."""
        self.session.http.close()

    # ================================================================ identity, budget
    @property
    def app_id(self) -> int | None:
        """The App's id (None with a token)."""
        return self.session.identity.app_id

    @property
    def installations(self) -> Installations | None:
        """The App's installations and their tokens; None with a personal token."""
        return self.session.identity.installations

    @property
    def state_dir(self) -> Path | None:
        """Where over-long bodies are saved in full (the daemon's state dir; see forge.overflow)."""
        return self.session.overflow.path

    @property
    def as_app(self) -> bool:
        """True as a GitHub App installation (check runs), False with a token (statuses)."""
        return self.session.identity.as_app

    @property
    def login(self) -> str:
        """Who we act as: `<app-slug>[bot]` for an App, the token's user login otherwise."""
        return self.session.identity.login

    @property
    def app_slug(self) -> str | None:
        """The App's slug (None with a token)."""
        return self.session.identity.app_slug

    def installation_info(
        self, account: str | None = None
    ) -> tuple[int, str, dict[str, str]] | None:
        """(installation id, account login, granted permissions) of the installation serving
        `account` (None: the home one); None with a token."""
        return self.session.identity.installation_info(account)

    def renew_token(self) -> None:
        """As an App: the home installation's token, minted when none is held or it is due."""
        self.session.identity.renew_token()

    @property
    def budget(self) -> WaitBudget:
        """This tick's wait budget."""
        return self.transport.budget

    def new_tick(self, *, full: bool = True) -> None:
        """Call at the start of each tick: resets the wait budget and per-tick negative caches.
        A targeted tick (`full` False) reads a few repos only: the ETag cache is not aged by it
        (the full tick's working set stays held)."""
        self.transport.budget.reset()
        if full:
            self.transport.cache.new_tick()
        self.session.memo.clear()
        self._batch.forget()

    def pause(self, seconds: float) -> bool:
        """Wait `seconds`, spent from this tick's wait budget; False (no wait) when it does not
        allow that much."""
        budget = self.transport.budget
        if not budget.allows(seconds):
            return False
        budget.spend(seconds)
        self.transport.sleep(seconds)
        return True

    def rate_budget(self) -> RateBudget:
        """The last primary rate-limit figures (the tightest installation's) plus this tick's
        wait budget, for tick metrics."""
        r = self.transport.rate
        reset = datetime.fromtimestamp(r.reset, tz=UTC) if r.reset else None
        wire = self.wire_counts()
        return {
            "remaining": r.remaining,
            "limit": r.limit,
            "used": r.used,
            "reset": reset.isoformat() if reset else None,
            "wait_budget_left": round(self.transport.budget.remaining, 3),
            "wait_spent": round(self.transport.budget.spent, 3),
            "requests": wire.sent,
            "not_modified": wire.not_modified,
            "writes": wire.writes,
            "by_installation": {
                key: rate.remaining for key, rate in self.transport.rates.items() if key
            },
        }

    def graphql_room(self, points: int, own_per_hour: int) -> bool:
        rate = self.transport.book.graphql_tightest
        return pro_rata_room(rate, self.transport.clock().timestamp(), points, own_per_hour)

    def wire_counts(self) -> WireCounts:
        """The transport's running counters (requests, 304s, writes, seconds waited)."""
        return self.transport.stats.counts()

    def list_open_prs(self, repo: str, base: str | None = None) -> list[PRSummary]:
        """All open PRs of `repo`, oldest first; never a partial list (a failed page raises)."""
        return self._batch.list_open_prs(repo, base=base, batch=self.batch_gathering)

    # ================================================================ reads
    def snapshot(
        self,
        repo: str,
        number: int,
        *,
        contents_for: Callable[[str], bool] | None = None,
        known_runs: tuple[str, Iterable[CheckRun]] | None = None,
    ) -> PRSnapshot:
        """A complete, immutable PRSnapshot, or one marked incomplete (see forge.snapshot)."""
        return self._snapshots.snapshot(
            repo, number, contents_for=contents_for, known_runs=known_runs
        )

    def pull_status(self, repo: str, number: int) -> PRStatus:
        return self._reads.pull_status(repo, number)

    def check_runs(self, repo: str, sha: str) -> list[CheckRun]:
        return self._batch.check_runs(repo, sha)

    def commit_statuses(self, repo: str, sha: str) -> list[CheckRun]:
        return self._batch.commit_statuses(repo, sha)

    def rollup_checks(self, repo: str, sha: str) -> list[CheckRun] | None:
        return self._batch.rollup(repo, sha)

    def forget_batch(self) -> None:
        self._batch.forget()

    def commit_checks(self, repo: str, sha: str, *, status_history: bool = False) -> list[CheckRun]:
        return self._checks.commit_checks(repo, sha, status_history=status_history)

    def commit_status_history(self, repo: str, sha: str) -> list[CheckRun]:
        return self._checks.status_history(repo, sha)

    def commit_parents(self, repo: str, sha: str) -> tuple[str, ...]:
        return self._reads.commit_parents(repo, sha)

    def branch_contains(self, repo: str, branch: str, sha: str) -> bool:
        return self._reads.branch_contains(repo, branch, sha)

    def read_file(self, repo: str, path: str, ref: str, *, strict: bool = False) -> str | None:
        return self._files.read_file(repo, path, ref, strict=strict)

    def comments(self, repo: str, issue_no: int) -> list[Comment]:
        return self._reads.comments(repo, issue_no)

    def reactions(self, repo: str, issue_no: int) -> list[Reaction]:
        return self._reads.reactions(repo, issue_no)

    def recent_changes(self, repo: str, kind: str, count: int = 1) -> RecentChanges:
        return self._reads.recent_changes(repo, kind, count)

    def issue_listing(self, repo: str, lists: tuple[IssueList, ...]) -> IssueListing:
        return self._reads.issue_listing(repo, lists)

    def issue_list_marks(self, repo: str, lst: IssueList, page: int = 1) -> RecentChanges:
        return self._reads.issue_list_marks(repo, lst, page)

    def check_marks(self, repo: str, sha: str, feed: str = "checks") -> RecentChanges:
        return self._reads.check_marks(repo, sha, feed)

    def head_rollups(self, heads: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        return head_rollups(self._graphql, heads)

    def merge_checks(
        self, commits: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[CheckRun] | None]:
        return merge_checks(self._graphql, commits)

    def permission(self, repo: str, login: str) -> str:
        return self._reads.permission(repo, login)

    def collaborators(self, repo: str) -> list[tuple[str, str]] | None:
        return self._reads.collaborators(repo)

    def repo_permissions(self, repo: str, max_age: timedelta | None = None) -> dict[str, bool]:
        return self._reads.repo_permissions(repo, max_age)

    def rate_limit_core(self) -> JsonObject:
        return self._reads.rate_limit_core()

    def graphql(self, query: str, variables: JsonObject, what: str) -> JsonObject:
        return self._graphql.graphql(query, variables, what)

    def get_protection(self, repo: str, branch: str) -> JsonObject | None:
        return self._protection.get_protection(repo, branch)

    def effective_protection(self, repo: str, branch: str) -> JsonObject | None:
        return self._protection.effective_protection(repo, branch)

    def branch_rules(self, repo: str, branch: str) -> list[JsonObject]:
        return self._protection.branch_rules(repo, branch)

    def policy_text(self, repo: str, branch: str) -> str | None:
        return self._protection.policy_text(repo, branch)

    def marked_issues(
        self, repo: str, kind: str | None = None, state: str = "all"
    ) -> list[MarkedIssue]:
        return self._issues.marked_issues(repo, kind, state)

    def find_issue(self, repo: str, marker: Marker) -> MarkedIssue | None:
        return self._issues.find_issue(repo, marker)

    # ================================================================ writes
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
        """Publish the verdict on `head_sha`; False when already there (see forge.writes)."""
        return self._writes.publish_check(
            repo,
            head_sha,
            success=success,
            title=title,
            summary=summary,
            marker=marker,
            name=name,
            details_url=details_url,
            known_runs=known_runs,
        )

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
        """The issue for `marker`, created or brought up to date (see forge.issues)."""
        return self._issues.ensure_issue(
            repo, marker, title, body, labels, reopen=reopen, number=number
        )

    def close_issue(self, repo: str, number: int, comment: str | None = None) -> bool:
        return self._issues.close_issue(repo, number, comment)

    def comment_once(self, repo: str, number: int, marker: Marker, body: str) -> bool:
        return self._issues.comment_once(repo, number, marker, body)

    def add_labels(self, repo: str, number: int, labels: Iterable[str]) -> bool:
        return self._issues.add_labels(repo, number, labels)

    def remove_label(self, repo: str, number: int, label: str) -> bool:
        return self._issues.remove_label(repo, number, label)

    def close_pr(self, repo: str, number: int, comment: str | None) -> bool:
        return self._writes.close_pr(repo, number, comment)

    def merge(
        self, repo: str, number: int, sha: str, method: str, *, base: str | None = None
    ) -> str:
        return self._writes.merge(repo, number, sha, method, base=base)

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
        return self._writes.set_protection(
            repo, branch, check_name, app_id, enforce_admins=enforce_admins, reviewers=reviewers
        )

    def create_revert_pr(
        self, repo: str, merge_sha: str, base: str, *, title: str, body: str, label: str
    ) -> int:
        return self._reverts.create_revert_pr(
            repo, merge_sha, base, title=title, body=body, label=label
        )

    def open_revert_pr(
        self, repo: str, merge_sha: str, base: str, *, title: str, body: str, label: str
    ) -> tuple[int, str]:
        return self._reverts.open_revert_pr(
            repo, merge_sha, base, title=title, body=body, label=label
        )

    def open_task_pr(
        self, repo: str, head: str, base: str, *, title: str, body: str
    ) -> tuple[int, str]:
        return self._task_pulls.open_task_pr(repo, head, base, title=title, body=body)

"""What every part of the Forge shares: HTTP, who we are, the clock, the caches (ForgeSession)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from github import GithubIntegration

from capdaemon.forge.convert import Entry, Lru
from capdaemon.forge.http import Http
from capdaemon.forge.installations import Installations
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.transport import Clock
from capdaemon.model import FileChange


class Identity:
    """Who the Forge acts as: an App's installations (`<slug>[bot]`) or a token's user."""

    def __init__(
        self,
        http: Http,
        *,
        app_id: int | None,
        integration: GithubIntegration | None,
        installations: Installations | None,
        login: str | None,
    ) -> None:
        self._http = http
        self.app_id = app_id
        self.integration = integration
        self.installations = installations
        self._login = login
        self._app_slug: str | None = None
        self.slug_read_at: datetime | None = None  # set when adopted from the cache file

    @property
    def as_app(self) -> bool:
        """True as a GitHub App installation (check runs), False with a token (statuses)."""
        return self.installations is not None

    @property
    def login(self) -> str:
        """`<app-slug>[bot]` for an App, the token's user login otherwise (asked once)."""
        if self._login is None:
            if self.integration is not None:
                with self._http.errors("GET /app"):
                    app = self.integration.get_app()
                self._app_slug = app.slug
                self._login = f"{app.slug}[bot]"
            else:
                self._login = str(self._http.get("/user")["login"])
        return self._login

    def adopt_slug(self, slug: str, read_at: datetime) -> None:
        """The App's slug as an earlier process read it at `read_at` (the cross-process cache):
        no GET /app in this one."""
        if self.integration is not None and self._login is None:
            self._app_slug, self._login, self.slug_read_at = slug, f"{slug}[bot]", read_at

    @property
    def known_slug(self) -> str | None:
        """The App's slug if already read or adopted (never a request)."""
        return self._app_slug

    @property
    def app_slug(self) -> str | None:
        """The App's slug (None with a token)."""
        if self.integration is not None and self._app_slug is None:
            _ = self.login
        return self._app_slug

    def ours(self, login: str) -> bool:
        """Is `login` us (case-insensitive, as GitHub compares logins)?"""
        return login.lower() == self.login.lower()

    def installation_info(self, account: str | None) -> tuple[int, str, dict[str, str]] | None:
        """(installation id, account login, granted permissions) of the installation serving
        `account` (None: the home one); None with a token. NotInstalled when there is none."""
        if self.installations is None:
            return None
        insts = self.installations
        inst_id = insts.for_account(account) if account else insts.home()
        return insts.info(inst_id)

    def renew_token(self) -> None:
        """As an App: the home installation's token, minted when none is held or it is due
        (Forbidden / NotInstalled / Transient as GitHub answers); nothing with a token."""
        if self.installations is not None:
            _ = self.installations.token(self.installations.home()).value


class Compared(TypedDict):
    """What one compare of two shas says (all bound to those shas)."""

    files: list[dict[str, Any]]
    commits: list[dict[str, Any]]
    total_commits: int
    merge_base: str | None


@dataclass
class ShaCaches:
    """Content-addressed caches: keyed by shas, so never stale."""

    compare: Lru[tuple[str, str, str], Compared] = field(default_factory=lambda: Lru(128))
    tree: Lru[tuple[str, str], dict[str, Entry]] = field(default_factory=lambda: Lru(16))
    # merge bases' trees (shared by many PRs: kept apart from PR heads, and across processes)
    base_tree: Lru[tuple[str, str], dict[str, Entry]] = field(default_factory=lambda: Lru(8))
    subtree: Lru[tuple[str, str], dict[str, Entry]] = field(default_factory=lambda: Lru(512))
    blob: Lru[tuple[str, str], str | None] = field(default_factory=lambda: Lru(512))
    # (repo, base, head, picker) → FileChanges with modes
    bound: Lru[tuple[str, str, str, object], list[FileChange]] = field(
        default_factory=lambda: Lru(1024)
    )
    parents: Lru[tuple[str, str], tuple[str, ...]] = field(default_factory=lambda: Lru(1024))
    # (repo, commit) → {path: its entry, or None when absent} for exactly the paths asked
    paths: Lru[tuple[str, str], dict[str, Entry | None]] = field(default_factory=lambda: Lru(1024))
    # (repo, commit) → (`.capdaemon.yml` at that commit or None,)
    policy: Lru[tuple[str, str], tuple[str | None]] = field(default_factory=lambda: Lru(1024))


@dataclass
class OverflowDir:
    """Where over-long bodies are saved in full (the daemon's state dir; see forge.overflow)."""

    path: Path | None = None


@dataclass
class TickMemo:
    """What the Forge remembers for one tick only (cleared by `Forge.new_tick`)."""

    # (repo, branch) → the branch object and the effective protection, read once a tick (the
    # policy, the merge gate and the probes all ask; GitHub enforces protection at merge anyway)
    branches: dict[tuple[str, str], dict[str, Any] | None] = field(default_factory=dict)
    effective: dict[tuple[str, str], dict[str, Any] | None] = field(default_factory=dict)
    # (repo, branch) → its head sha as this tick's page of open PRs carried it (forge.refrules)
    heads: dict[tuple[str, str], str] = field(default_factory=dict)
    # (repo, branch) → the blob sha of `.capdaemon.yml` at that head ("": none), same page
    policy_blobs: dict[tuple[str, str], str] = field(default_factory=dict)
    # (repo, issue) → its state as read or written this tick, and the markers of our comments
    # on it (read once, then our own posts added: one writer under the tick lock)
    issue_states: dict[tuple[str, int], str] = field(default_factory=dict)
    our_comments: dict[tuple[str, int], set[str]] = field(default_factory=dict)

    def clear(self) -> None:
        """Forget everything (a new tick)."""
        self.forget_branch()
        self.issue_states.clear()
        self.our_comments.clear()

    def forget_branch(self, key: tuple[str, str] | None = None) -> None:
        """Forget one branch's reads (after the daemon changed its protection) or all."""
        for memo in (self.branches, self.effective, self.heads, self.policy_blobs):
            if key is None:
                memo.clear()
            else:
                memo.pop(key, None)


@dataclass
class SeenRepos:
    """Our permissions on each repo as last read, and when (kept across processes: a cron
    tick's start-up check of the configured repos need not ask every minute)."""

    at: dict[str, tuple[dict[str, bool], datetime]] = field(default_factory=dict)


@dataclass(frozen=True)
class ForgeSession:
    """The collaborators every part of the Forge receives (built once per Forge)."""

    http: Http
    identity: Identity
    scrubber: Scrubber
    clock: Clock
    caches: ShaCaches
    overflow: OverflowDir
    memo: TickMemo
    seen: SeenRepos = field(default_factory=SeenRepos)

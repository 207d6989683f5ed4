"""Forge: the only PyGithub user — gathers PR snapshots and makes idempotent, marked writes.

This module builds the Forge (auth, transport) and holds its HTTP choke point; the reads and
writes are its mixins in snapshot, reads and writes; pure helpers are in convert.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests
from github import Auth, Github, GithubException, GithubIntegration

from capdaemon.config import GitHubConfig
from capdaemon.forge.auth import InstallationTokenAuth
from capdaemon.forge.batch import BatchMixin
from capdaemon.forge.convert import (
    CHECK_NAME,
    COMMITS_CAP,
    COMPARE_MAX_FILES,
    CONTENT_MAX_BYTES,
    DEFAULT_CONTENT_GLOBS,
    FILES_CAP,
    LABEL_COLOR,
    POLICY_FILE,
    POLICY_TTL,
    USER_AGENT,
    _from_patch,
    _Lru,
    _next_link,
    default_contents_for,
    git_blob_sha,
    log,
    protection_ok,
)
from capdaemon.forge.errors import (
    Forbidden,
    ForgeError,
    HeadMoved,
    Incomplete,
    Invalid,
    NotFound,
    NotMergeable,
    RateLimited,
    Transient,
)
from capdaemon.forge.gql import GraphqlMixin
from capdaemon.forge.port import RateBudget
from capdaemon.forge.protection import ProtectionMixin
from capdaemon.forge.reads import ReadsMixin
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.snapshot import SnapshotMixin
from capdaemon.forge.transport import Clock, Sleeper, Transport, WaitBudget, utc_now
from capdaemon.forge.writes import WritesMixin

__all__ = [
    "CHECK_NAME",
    "COMMITS_CAP",
    "COMPARE_MAX_FILES",
    "CONTENT_MAX_BYTES",
    "DEFAULT_CONTENT_GLOBS",
    "FILES_CAP",
    "LABEL_COLOR",
    "POLICY_FILE",
    "POLICY_TTL",
    "USER_AGENT",
    "Forge",
    "_from_patch",
    "default_contents_for",
    "git_blob_sha",
    "protection_ok",
]


class Forge(GraphqlMixin, BatchMixin, SnapshotMixin, ReadsMixin, ProtectionMixin, WritesMixin):
    """The GitHub adapter: immutable snapshots in, idempotent marked writes out."""

    def __init__(
        self,
        gh: Github,
        transport: Transport,
        *,
        scrubber: Scrubber,
        clock: Clock,
        app_id: int | None = None,
        integration: GithubIntegration | None = None,
        installation_auth: InstallationTokenAuth | None = None,
        login: str | None = None,
    ) -> None:
        self._gh = gh
        self._rq = gh.requester
        # PyGithub's Requester is not safe for concurrent requests (its one connection object
        # keeps the verb/url/headers of the request being built between two calls), so each
        # concurrent request borrows a Requester of its own; all share the Transport (ETag
        # cache, retries, rate limits, counters) and the auth, so a 304 is a 304 whichever
        # thread asks.
        self._free: list[Any] = [self._rq]
        self._all_rq: list[Any] = [self._rq]
        self._rq_lock = threading.Lock()
        self.transport = transport
        self.scrubber = scrubber
        self.clock = clock
        self.app_id = app_id
        self._integration = integration
        self.installation_auth = installation_auth
        self._login = login
        self._app_slug: str | None = None
        self._lock = threading.RLock()
        # content-addressed caches: never stale
        self._compare_cache = _Lru(128)
        self._tree_cache = _Lru(16)
        self._subtree_cache = _Lru(512)
        self._blob_cache = _Lru(512)
        self._bound_cache = _Lru(1024)  # (repo, base, head, picker) → FileChanges with modes
        self._sha_cache = _Lru(1024)  # (kind, repo, sha) → facts about an immutable commit
        # marker index: (repo, marker_key) → issue number, built by one full scan per repo
        self._issue_index: dict[tuple[str, str], int] = {}
        self._indexed: set[str] = set()
        # markers whose create reply was lost: GitHub may create the issue later, so an index
        # scanned meanwhile cannot vouch that it does not exist (rescanned until found)
        self._unsure: set[tuple[str, str]] = set()
        self._labels: dict[str, set[str]] = {}
        # .capdaemon.yml per (repo, base ref), remembered for one tick (a minute at most)
        self._policy_seen: dict[tuple[str, str], tuple[str | None, datetime]] = {}
        # where over-long bodies are saved in full (the daemon's state dir; see forge.overflow)
        self.state_dir: Path | None = None

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
    ) -> Forge:
        """Build from config: as an App installation when app_id and a key are given, else a token.

        The token defaults to the variable `gh.token_env`; the key to `gh.private_key_file`.
        `sleep` and `clock` are injectable (tests pass a recording sleeper); `write_interval`
        paces writes (GitHub asks for about one write a second).
        """
        clock = clock if clock is not None else utc_now
        scrubber = Scrubber()
        budget = WaitBudget(gh.per_tick_wait_seconds)
        transport = Transport(
            budget=budget,
            sleep=sleep if sleep is not None else _real_sleep,
            clock=clock,
            scrubber=scrubber,
            attempts=attempts,
            write_interval=write_interval,
        )
        base_url = gh.base_url.rstrip("/")
        common: dict[str, Any] = {
            "base_url": base_url,
            "timeout": timeout,
            "user_agent": USER_AGENT,
            "per_page": 100,
            "retry": None,  # retries live in our Transport only
            "seconds_between_requests": None,
            "seconds_between_writes": None,
        }
        if gh.app_id is not None and (key_pem is not None or gh.private_key_file):
            if key_pem is None:
                assert gh.private_key_file is not None
                key_pem = Path(gh.private_key_file).read_bytes()
            key_text = key_pem.decode("utf-8") if isinstance(key_pem, bytes) else str(key_pem)
            scrubber.add(key_text)
            app_auth = Auth.AppAuth(gh.app_id, key_text)
            integration = GithubIntegration(auth=app_auth, **common)
            _mount(integration.requester, transport)
            installation_id = gh.installation_id
            if installation_id is None:
                installation_id = _only_installation(integration, scrubber)
            inst_auth = InstallationTokenAuth(
                integration, installation_id, clock=clock, scrubber=scrubber
            )
            client = Github(auth=inst_auth, **common)
            _mount(client.requester, transport)
            return cls(
                client,
                transport,
                scrubber=scrubber,
                clock=clock,
                app_id=gh.app_id,
                integration=integration,
                installation_auth=inst_auth,
            )
        if token is None:
            token = os.environ.get(gh.token_env) or None
        if not token:
            raise ForgeError(
                f"no GitHub credentials: set github.app_id + private_key_file, "
                f"or the {gh.token_env} variable"
            )
        scrubber.add(token)
        client = Github(auth=Auth.Token(token), **common)
        _mount(client.requester, transport)
        return cls(client, transport, scrubber=scrubber, clock=clock)

    def close(self) -> None:
        """Close HTTP connections."""
        self._gh.close()
        for rq in self._all_rq[1:]:
            rq.close()

    @contextmanager
    def _requester(self) -> Iterator[Any]:
        """A Requester for this one request (reads may run in several threads at once)."""
        with self._rq_lock:
            rq = self._free.pop() if self._free else None
        if rq is None:
            rq = self._rq.withAuth(self._rq.auth)
            _mount(rq, self.transport)
            with self._rq_lock:
                self._all_rq.append(rq)
        try:
            yield rq
        finally:
            with self._rq_lock:
                self._free.append(rq)

    # ================================================================ identity, budget
    @property
    def as_app(self) -> bool:
        """True as a GitHub App installation (check runs), False with a token (statuses)."""
        return self.installation_auth is not None

    @property
    def login(self) -> str:
        """Who we act as: `<app-slug>[bot]` for an App, the token's user login otherwise."""
        if self._login is None:
            if self._integration is not None:
                with self._errors("GET /app"):
                    app = self._integration.get_app()
                self._app_slug = app.slug
                self._login = f"{app.slug}[bot]"
            else:
                _, data = self._req("GET", "/user")
                self._login = data["login"]
        return self._login

    @property
    def app_slug(self) -> str | None:
        """The App's slug (None with a token)."""
        if self._integration is not None and self._app_slug is None:
            _ = self.login
        return self._app_slug

    def installation_info(self) -> tuple[int, str, dict[str, str]] | None:
        """(installation id, account login, granted permissions) of our App installation;
        None with a token."""
        if self._integration is None or self.installation_auth is None:
            return None
        inst_id = self.installation_auth.installation_id
        with self._errors(f"GET /app/installations/{inst_id}"):
            inst = self._integration.get_app_installation(inst_id)
        raw = inst.raw_data
        login = str((raw.get("account") or {}).get("login") or "")
        return inst_id, login, {str(k): str(v) for k, v in (raw.get("permissions") or {}).items()}

    @property
    def budget(self) -> WaitBudget:
        """This tick's wait budget."""
        return self.transport.budget

    def new_tick(self) -> None:
        """Call at the start of each tick: resets the wait budget and per-tick negative caches."""
        self.transport.budget.reset()
        self.transport.cache.new_tick()
        self._policy_seen.clear()
        self.forget_batch()

    def rate_budget(self) -> RateBudget:
        """The last primary rate-limit figures plus this tick's wait budget, for tick metrics."""
        r = self.transport.rate
        reset = datetime.fromtimestamp(r.reset, tz=UTC) if r.reset else None
        return {
            "remaining": r.remaining,
            "limit": r.limit,
            "used": r.used,
            "reset": reset.isoformat() if reset else None,
            "wait_budget_left": round(self.transport.budget.remaining, 3),
            "wait_spent": round(self.transport.budget.spent, 3),
            "requests": self.transport.stats.sent,
            "not_modified": self.transport.stats.not_modified,
            "writes": self.transport.stats.writes,
        }

    # ================================================================ HTTP helpers
    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except ForgeError:
            raise
        except GithubException as exc:
            raise self._translate(exc, what) from None
        except requests.RequestException as exc:
            raise Transient(self.scrubber.scrub(f"GitHub {what}: {type(exc).__name__}")) from None

    def _translate(self, exc: GithubException, what: str) -> ForgeError:
        status = exc.status
        message = ""
        if isinstance(exc.data, dict):
            message = str(exc.data.get("message", ""))
        text = self.scrubber.scrub(f"GitHub {what}: {status} {message}".strip())
        kind: type[ForgeError]
        if status == 404:
            kind = NotFound
        elif status == 409:
            kind = HeadMoved
        elif status == 405:
            kind = NotMergeable
        elif status in (401, 403):
            if status == 401 and self.installation_auth is not None:
                self.installation_auth.invalidate()
            kind = Forbidden
        elif status == 422:
            kind = Invalid
        elif status is not None and status >= 500:
            kind = Transient
        else:
            kind = ForgeError
        return kind(text, status=status)

    def _req(
        self, verb: str, url: str, *, params: dict[str, Any] | None = None, body: Any = None
    ) -> tuple[dict[str, Any], Any]:
        with self._errors(f"{verb} {url.split('?')[0]}"), self._requester() as rq:
            return rq.requestJsonAndCheck(verb, url, parameters=params, input=body)

    def _get(self, url: str, params: dict[str, Any] | None = None) -> Any:
        return self._req("GET", url, params=params)[1]

    def _pages(
        self,
        url: str,
        params: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        """Every item of a paginated list (per_page=100); any failed page raises (ForgeError)."""
        items, _ = self._pages_partial(url, params, key=key, limit=limit, strict=True)
        return items

    def _pages_partial(
        self,
        url: str,
        params: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        limit: int | None = None,
        strict: bool = False,
    ) -> tuple[list[Any], bool]:
        """(items, all read). A failed later page ends the walk with False (raises if strict)."""
        p = {"per_page": 100, **(params or {})}
        headers, data = self._req("GET", url, params=p)
        items = list(data[key] if key else data)
        nxt = _next_link(headers.get("link"))
        while nxt and (limit is None or len(items) < limit):
            try:
                headers, data = self._req("GET", nxt)
            except RateLimited:
                raise
            except ForgeError as exc:
                if strict:
                    raise Incomplete(f"{exc} (a later page of {url})", status=exc.status) from None
                log.warning("forge.page_failed", url=url, error=str(exc))
                return items, False
            items.extend(data[key] if key else data)
            nxt = _next_link(headers.get("link"))
        return items, True


def _real_sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


def _mount(requester: Any, transport: Transport) -> None:
    """Mount our Transport on every requests.Session this PyGithub Requester creates.

    PyGithub 2.x builds its session inside a connection class chosen per Requester; there is no
    public hook, so we wrap that (name-mangled) attribute of this one Requester only — no global
    injection, no change for other Requesters in the process.
    """
    attr = "_Requester__connectionClass"
    base_cls = getattr(requester, attr, None)
    if base_cls is None:
        raise ForgeError("unsupported PyGithub: Requester has no connection class to wrap")

    def factory(*args: Any, **kwargs: Any) -> Any:
        cnx = base_cls(*args, **kwargs)
        cnx.session.mount("http://", transport)
        cnx.session.mount("https://", transport)
        return cnx

    setattr(requester, attr, factory)


def _only_installation(integration: GithubIntegration, scrubber: Scrubber) -> int:
    try:
        ids = [i.id for i in integration.get_installations()]
    except GithubException as exc:
        raise ForgeError(
            scrubber.scrub(f"listing App installations failed: {exc.status}")
        ) from None
    if len(ids) != 1:
        raise ForgeError(f"the App has {len(ids)} installations; set github.installation_id")
    return ids[0]

"""Which App installation serves each account, and one renewing token per installation.

A GitHub App has one installation per account (organisation or user) it is installed on. An
installation token works only on that account's repositories, its ETags are its own, and each
installation has a primary rate-limit budget of its own. The Transport asks `route` for every
request the client sends: the account is read from the request (`/repos/{owner}/…`,
`/orgs/{owner}/…`, a `/repositories/{id}/…` page link learnt from an earlier answer, or a
GraphQL query's `owner` variable), and that installation's token goes into `Authorization`.
The installation id is the request's budget key.

With `github.installation_id` set, every request uses that one installation (one organisation).
Unset, the App's installations are listed (`GET /app/installations`, with the App's JWT) and
matched by account login; an account the App is not installed on is listed again at most every
`RELIST_AFTER`, and until then a request for it fails as NotInstalled (a 404: not visible).
Requests that name no account (`/rate_limit`) use the home installation: the configured one,
else the one with the lowest id. A request to any other host than the API's (a redirect) gets
no token at all.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import requests
import structlog
from github import GithubException
from github.GithubIntegration import GithubIntegration

from capdaemon.forge.auth import InstallationToken
from capdaemon.forge.errors import NotInstalled, kind_for_status
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.transport import Clock

log = structlog.get_logger(__name__)

RELIST_AFTER = timedelta(minutes=5)  # an account not found: list the installations again after
LIST_MAX_AGE = timedelta(hours=1)  # a listing older than this is refreshed (uninstalls, moves)

_REPO_PATH = re.compile(r"/(?:repos|orgs)/([^/?#]+)")
_BY_ID = re.compile(r"/repositories/(\d+)(?=[/?#]|$)")
_GRAPHQL = re.compile(r"/graphql$")


def _graphql_owner(body: object) -> str | None:
    """The `owner` variable of a GraphQL request body (every forge query has one)."""
    if not isinstance(body, (bytes, str)) or not body:
        return None
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    variables = doc.get("variables") if isinstance(doc, dict) else None
    owner = variables.get("owner") if isinstance(variables, dict) else None
    return owner if isinstance(owner, str) and owner else None


class Installations:
    """The App's installations by account, a token for each, and the routing of requests."""

    def __init__(
        self,
        integration: GithubIntegration,
        *,
        clock: Clock,
        scrubber: Scrubber,
        api_url: str,
        pinned: int | None = None,
    ) -> None:
        self.integration = integration
        self.pinned = pinned
        self._api_host = urlsplit(api_url).netloc.lower()
        self._clock = clock
        self._scrubber = scrubber
        self._tokens: dict[int, InstallationToken] = {}
        self._accounts: dict[str, int] = {}  # account login (lower case) → installation id
        self._logins: dict[int, str] = {}  # installation id → account login
        self._repo_ids: dict[str, int] = {}  # repository id (from page links) → installation id
        self.listed_at: datetime | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------ the Transport's Router
    def route(self, request: requests.PreparedRequest) -> str | None:
        """Put the right installation's token on a client request; its budget key (the id).

        The App's own requests (JWT, `Bearer`) are left alone, and a request to another host
        (a redirect off the API) gets no token: None.
        """
        if urlsplit(request.url or "").netloc.lower() != self._api_host:
            request.headers.pop("Authorization", None)
            return None
        if str(request.headers.get("Authorization", "")).startswith("Bearer"):
            return None
        inst = self._installation_of(request)
        request.headers["Authorization"] = f"token {self.token(inst).value}"
        return str(inst)

    def rejected(self, key: str) -> None:
        """GitHub answered 401 to this installation's token: the next request mints a new one."""
        self.token(int(key)).invalidate()

    def learn(self, key: str, headers: Mapping[str, str]) -> None:
        """Remember which installation a `/repositories/{id}/…` page link belongs to."""
        link = headers.get("link") or headers.get("Link")
        if link:
            for repo_id in _BY_ID.findall(link):
                self._repo_ids[repo_id] = int(key)

    def _installation_of(self, request: requests.PreparedRequest) -> int:
        if self.pinned is not None:
            return self.pinned
        path = urlsplit(request.url or "").path
        m = _REPO_PATH.search(path)
        if m:
            return self.for_account(m.group(1))
        by_id = _BY_ID.search(path)
        if by_id and by_id.group(1) in self._repo_ids:
            return self._repo_ids[by_id.group(1)]
        if _GRAPHQL.search(path):
            owner = _graphql_owner(request.body)
            if owner:
                return self.for_account(owner)
        return self.home()

    # ------------------------------------------------------------ accounts
    def for_account(self, account: str) -> int:
        """The installation serving `account` (NotInstalled when the App is not installed there)."""
        if self.pinned is not None:
            return self.pinned
        key = account.lower()
        with self._lock:
            now = self._clock()
            stale = self.listed_at is None or now - self.listed_at >= LIST_MAX_AGE
            missing = key not in self._accounts
            if stale or (missing and now - (self.listed_at or now) >= RELIST_AFTER):
                self._list()
            if key in self._accounts:
                return self._accounts[key]
            known = ", ".join(sorted(self._logins.values())) or "no account"
        raise NotInstalled(
            f"the GitHub App is not installed on {account!r} (installed on: {known}); "
            "install it there, or leave that account's repos out of the config",
            status=404,
        )

    def home(self) -> int:
        """The installation for requests that name no account."""
        if self.pinned is not None:
            return self.pinned
        with self._lock:
            if self.listed_at is None:
                self._list()
            if not self._logins:
                raise NotInstalled("the GitHub App has no installations", status=404)
            return min(self._logins)

    def account_of(self, installation_id: int) -> str | None:
        """The account an installation is on, when known from the listing."""
        return self._logins.get(installation_id)

    def accounts(self) -> dict[str, int]:
        """Account login (lower case) → installation id, as last listed."""
        with self._lock:
            return dict(self._accounts)

    def remember(self, accounts: Mapping[str, int], listed_at: datetime) -> None:
        """Adopt a listing made earlier (by another process); it ages like one made now."""
        with self._lock:
            self._accounts = {k.lower(): int(v) for k, v in accounts.items()}
            self._logins = {v: k for k, v in self._accounts.items()}
            self.listed_at = listed_at

    def _list(self) -> None:
        try:
            found = {
                str((i.raw_data.get("account") or {}).get("login") or "").lower(): int(i.id)
                for i in self.integration.get_installations()
            }
        except GithubException as exc:
            raise self._error(exc, "GET /app/installations") from None
        found.pop("", None)
        self._accounts = found
        self._logins = {v: k for k, v in found.items()}
        self.listed_at = self._clock()
        log.info("forge.installations_listed", installations=len(found))

    # ------------------------------------------------------------ tokens
    def token(self, installation_id: int) -> InstallationToken:
        """The (renewing) token of one installation."""
        with self._lock:
            tok = self._tokens.get(installation_id)
            if tok is None:
                tok = InstallationToken(
                    self.integration,
                    installation_id,
                    clock=self._clock,
                    scrubber=self._scrubber,
                )
                self._tokens[installation_id] = tok
            return tok

    def held(self) -> list[tuple[int, str, datetime]]:
        """(installation id, token, expires at) of every token held now (none minted here)."""
        with self._lock:
            toks = list(self._tokens.values())
        return [(t.installation_id, *held) for t in toks if (held := t.current()) is not None]

    def invalidate_all(self) -> None:
        """Forget every token (the next request of each installation mints a new one)."""
        with self._lock:
            for tok in self._tokens.values():
                tok.invalidate()

    def info(self, installation_id: int) -> tuple[int, str, dict[str, str]]:
        """(id, account login, granted permissions) of one installation."""
        try:
            inst = self.integration.get_app_installation(installation_id)
            raw = inst.raw_data
        except GithubException as exc:
            raise self._error(exc, f"GET /app/installations/{installation_id}") from None
        login = str((raw.get("account") or {}).get("login") or "")
        perms = raw.get("permissions") or {}
        return installation_id, login, {str(k): str(v) for k, v in perms.items()}

    def _error(self, exc: GithubException, what: str) -> Exception:
        message = exc.data.get("message", "") if isinstance(exc.data, dict) else ""
        text = self._scrubber.scrub(f"GitHub {what}: {exc.status} {message}".strip())
        return kind_for_status(exc.status)(text, status=exc.status)

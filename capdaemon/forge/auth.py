"""GitHub App installation tokens, minted from the App's JWT and refreshed before they expire."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import structlog
from github import GithubException
from github.Auth import Auth
from github.GithubIntegration import GithubIntegration

from capdaemon.forge.errors import ForgeError, NotInstalled, kind_for_status
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.transport import Clock

log = structlog.get_logger(__name__)

REFRESH_MARGIN = timedelta(minutes=5)


class RoutedAuth(Auth):
    """The client's PyGithub Auth as an App: it adds nothing, the Transport's router puts each
    request's installation token on it (see forge.installations); a request that bypassed the
    Transport would go out unauthenticated and be refused."""

    @property
    def token_type(self) -> str:
        """Installation tokens go in `Authorization: token ...`."""
        return "token"

    @property
    def token(self) -> str:
        """No one token: each request gets its installation's (see forge.installations)."""
        return ""

    def authentication(self, headers: dict[str, str]) -> None:
        """Nothing here: the Transport's router authorizes each request."""

    @property
    def _masked_token(self) -> str:
        return "token (installation token removed)"


class InstallationToken:
    """One installation's token, renewed `margin` before it expires.

    Unlike PyGithub's AppInstallationAuth it reads the injected clock (testable) and mints tokens
    through an integration whose HTTP goes through our Transport (retries, counters, scrubbing).
    """

    def __init__(
        self,
        integration: GithubIntegration,
        installation_id: int,
        *,
        clock: Clock,
        scrubber: Scrubber,
        margin: timedelta = REFRESH_MARGIN,
    ) -> None:
        self._integration = integration
        self.installation_id = installation_id
        self._clock = clock
        self._scrubber = scrubber
        self._margin = margin
        self._token: str | None = None
        self._expires_at: datetime | None = None
        self._lock = threading.Lock()
        self.rotations = 0
        # what GitHub granted the token minted in this process (None: none minted here yet)
        self.permissions: dict[str, str] | None = None

    @property
    def value(self) -> str:
        """The current token, minted or renewed when missing or about to expire."""
        with self._lock:
            if (
                self._token is None
                or self._expires_at is None
                or self._clock() >= self._expires_at - self._margin
            ):
                self._refresh()
            assert self._token is not None
            return self._token

    @property
    def expires_at(self) -> datetime | None:
        """When the current token expires (None before the first one)."""
        return self._expires_at

    def current(self) -> tuple[str, datetime] | None:
        """(token, expires_at) held now, without minting one (None when there is none)."""
        with self._lock:
            if self._token is None or self._expires_at is None:
                return None
            return self._token, self._expires_at

    def adopt(self, token: str, expires_at: datetime) -> None:
        """Use a token minted earlier (by another process) until `margin` before it expires."""
        self._scrubber.add(token)
        with self._lock:
            self._token = token
            self._expires_at = expires_at

    def invalidate(self) -> None:
        """Forget the token so the next request mints a new one (after a 401, or to rotate)."""
        with self._lock:
            self._token = None

    def _refused(self, exc: GithubException) -> ForgeError:
        """GitHub refused to mint this installation's token: one line saying which setting."""
        inst = self.installation_id
        if exc.status == 404:
            return NotInstalled(
                f"github.installation_id {inst}: the App has no installation {inst} (copy the "
                "id from the installation's settings page, or leave installation_id unset to "
                "find each account's installation)",
                status=404,
            )
        message = exc.data.get("message", "") if isinstance(exc.data, dict) else ""
        text = self._scrubber.scrub(f"minting a token for installation {inst}: {message}")
        return kind_for_status(exc.status)(text.strip(), status=exc.status)

    def _refresh(self) -> None:
        try:
            grant = self._integration.get_access_token(self.installation_id)
        except GithubException as exc:
            raise self._refused(exc) from None
        self._scrubber.add(grant.token)
        self._token = grant.token
        self._expires_at = grant.expires_at
        granted = grant.raw_data.get("permissions")
        if isinstance(granted, dict):
            self.permissions = {str(k): str(v) for k, v in granted.items()}
        self.rotations += 1
        log.info(
            "forge.token_refreshed",
            installation_id=self.installation_id,
            expires_at=grant.expires_at.isoformat() if grant.expires_at else None,
        )

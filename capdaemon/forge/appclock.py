"""GitHub's clock as seen from here: the offset read from its `Date` header, and App JWTs
minted on GitHub's time once it has refused one for its times (as octokit's App auth does).

GitHub judges an App JWT by its own clock: `iat` must not be in its future and `exp` must be
in its future, at most 10 minutes ahead. A JWT is issued `JWT_ISSUED_BACK` seconds back and
lives `JWT_LIFETIME`, so a local clock up to `AHEAD_TOLERANCE` seconds ahead of GitHub's or
`BEHIND_TOLERANCE` seconds behind it still mints JWTs GitHub accepts. Beyond that GitHub
answers 401 with one of `SKEW_REFUSALS`; the Transport then reads the answer's `Date`,
keeps the offset here and sends the request once more with a JWT minted on GitHub's time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import requests
import structlog
from github.Auth import AppAuth

log = structlog.get_logger(__name__)

JWT_ISSUED_BACK = 60  # GitHub recommends an `iat` 60 s in the past against clock drift
JWT_LIFETIME = 600  # exp = iat + 10 minutes
JWT_MAX_AHEAD = 600  # GitHub refuses an `exp` more than 10 minutes after its now
AHEAD_TOLERANCE = JWT_ISSUED_BACK  # local clock ahead of GitHub's by more: iat in its future
BEHIND_TOLERANCE = JWT_LIFETIME - JWT_ISSUED_BACK  # behind by more: exp already past
DRIFT_REPORT_SECONDS = 5  # an offset this large is worth an owner's attention (digest)

# GitHub's 401 messages that name the JWT's times (the ones octokit's App auth corrects for)
SKEW_REFUSALS: tuple[str, ...] = (
    "'Expiration time' claim ('exp') is too far in the future",
    "'Expiration time' claim ('exp') must be a numeric value representing the future time",
    "'Issued at' claim ('iat') must be an Integer representing the time",
)


def is_skew_refusal(message: str) -> bool:
    """True when a 401 message says the JWT's `iat`/`exp` do not fit GitHub's clock."""
    return any(text in message for text in SKEW_REFUSALS)


def date_offset(date_header: str | None, local: datetime) -> float | None:
    """GitHub's time (an HTTP `Date`) minus `local`, in seconds; None when unreadable."""
    if not date_header:
        return None
    try:
        theirs = parsedate_to_datetime(date_header)
    except (TypeError, ValueError, IndexError):
        return None
    if theirs.tzinfo is None:
        return None
    return (theirs - local).total_seconds()


def observed_offset(date_header: str | None, received: datetime) -> float | None:
    """GitHub's clock minus ours, from an answer's `Date` read at `received`: the header is
    cut to the second, so GitHub's time was on average half a second past it."""
    offset = date_offset(date_header, received)
    return None if offset is None else offset + 0.5


def within_jwt_window(offset: float) -> bool:
    """Would a JWT minted on the local clock be accepted, GitHub's clock being `offset` s on?"""
    return -AHEAD_TOLERANCE < offset < BEHIND_TOLERANCE


def describe_offset(offset: float) -> str:
    """`this machine is 412 s behind GitHub` (or ahead, or in step)."""
    seconds = round(offset)
    if seconds == 0:
        return "this machine's clock is in step with GitHub's"
    side = "behind" if seconds > 0 else "ahead of"
    return f"this machine's clock is {abs(seconds)} s {side} GitHub's"


class JwtMinter(Protocol):
    """Mints the App's JWTs; corrects their times when GitHub refuses them for their times."""

    def refused(self, message: str, date_header: str | None) -> str | None:
        """After a 401 with `message`: the Authorization value to send once more, or None."""


def skew_retry_auth(
    minter: JwtMinter | None, sent: Mapping[str, Any], resp: requests.Response
) -> str | None:
    """The Authorization to send once more when `resp` is GitHub's 401 to an App JWT (sent
    with headers `sent`) naming the JWT's times, the offset corrected from its `Date`."""
    if minter is None or resp.status_code != 401:
        return None
    if not str(sent.get("Authorization", "")).startswith("Bearer"):
        return None
    try:
        body = resp.json()
    except ValueError:
        return None
    message = str(body.get("message", "")) if isinstance(body, dict) else ""
    return minter.refused(message, resp.headers.get("Date"))


class AppClock:
    """The offset App JWTs are minted with (0 until GitHub refuses one for its times); JWTs
    are minted on the real clock plus it, as GitHub judges them by its real clock."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._offset = 0.0
        self.corrections = 0

    @property
    def offset(self) -> float:
        """Seconds added to the local clock when minting (GitHub's time minus ours)."""
        with self._lock:
            return self._offset

    def now(self) -> datetime:
        """GitHub's time as far as it is known: the local clock plus the kept offset."""
        return self._clock() + timedelta(seconds=self.offset)

    def shifted(self, clock: Callable[[], datetime]) -> Callable[[], datetime]:
        """`clock` plus the kept offset (installation tokens expire on GitHub's time)."""
        return lambda: clock() + timedelta(seconds=self.offset)

    def correct(self, date_header: str | None) -> bool:
        """Keep the offset GitHub's `Date` shows; False when it is missing or unreadable."""
        offset = date_offset(date_header, self._clock())
        if offset is None:
            return False
        with self._lock:
            self._offset = offset
            self.corrections += 1
        log.warning(
            "forge.clock_corrected",
            offset_seconds=round(offset),
            detail=describe_offset(offset) + "; App JWTs are minted on GitHub's time",
        )
        return True


class SkewedAppAuth(AppAuth):
    """PyGithub's App auth with JWT times from an AppClock (GitHub's time once corrected)."""

    def __init__(self, app_id: int, private_key: str, clock: AppClock) -> None:
        super().__init__(app_id, private_key)
        self.app_clock = clock

    def create_jwt(self, expiration: int | None = None) -> str:
        """A JWT issued JWT_ISSUED_BACK s before GitHub's now, valid JWT_LIFETIME s."""
        issued = int(self.app_clock.now().timestamp()) - JWT_ISSUED_BACK
        lifetime = JWT_LIFETIME if expiration is None else min(expiration, JWT_LIFETIME)
        payload = {"iat": issued, "exp": issued + lifetime, "iss": str(self.app_id)}
        assert self._sign_func is not None
        signed = self._sign_func(payload)
        return signed.decode("utf-8") if isinstance(signed, bytes) else str(signed)

    def refused(self, message: str, date_header: str | None) -> str | None:
        """The Transport's JwtMinter: after a 401 naming the JWT's times, correct the offset
        from GitHub's `Date` and return the `Authorization` value to retry with (else None)."""
        if not is_skew_refusal(message) or not self.app_clock.correct(date_header):
            return None
        return f"Bearer {self.create_jwt()}"

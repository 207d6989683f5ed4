"""The few typed errors the forge raises; callers never see PyGithub or requests exceptions."""

from __future__ import annotations

from datetime import datetime


class TickAbort(Exception):
    """What must end the current tick at once (a rate limit; the daemon adds its stop request).

    Not a ForgeError: a step that reports a ForgeError on one item and goes on to the next
    lets a TickAbort through without naming it."""


class ForgeError(Exception):
    """Any failure talking to GitHub. Messages never contain tokens or keys."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(ForgeError):
    """The resource does not exist (or is invisible to us): HTTP 404."""


class NotInstalled(NotFound):
    """The GitHub App is not installed on the account that owns the repository."""


class HeadMoved(ForgeError):
    """A conflict: the PR head (or a ref) is not at the expected sha: HTTP 409."""


class BaseMoved(ForgeError):
    """The PR's base branch is not the one the merge was decided for (retargeted): `found` is
    the branch it targets now."""

    def __init__(self, message: str, *, found: str, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.found = found


class NotMergeable(ForgeError):
    """GitHub refuses to merge (checks, conflicts, already merged): HTTP 405."""


class RevertConflict(NotMergeable):
    """A revert does not apply cleanly (a path changed since), or the commit has several parents."""


class Forbidden(ForgeError):
    """Authenticated but not allowed, or bad credentials: HTTP 401/403 (not a rate limit)."""


class Invalid(ForgeError):
    """GitHub rejected the request body: HTTP 422."""


class RateLimited(TickAbort):
    """A rate limit whose wait would exceed this tick's wait budget: stop the tick cleanly.

    `status` is 403 as for a ForgeError; a command that is not a tick catches it beside
    ForgeError (FORGE_FAILURES)."""

    def __init__(
        self, message: str, *, wait_seconds: float, reset_at: datetime | None = None
    ) -> None:
        super().__init__(message)
        self.status: int | None = 403
        self.wait_seconds = wait_seconds
        self.reset_at = reset_at


class Transient(ForgeError):
    """A 5xx, connection reset or timeout that persisted through the bounded retries."""


class Incomplete(ForgeError):
    """A read could not be completed (a failed page, a cap); never act on partial data."""


# Every failure of a forge call, for a caller that is not a tick (a command): there a rate
# limit is one more reason the call failed.
FORGE_FAILURES = (ForgeError, RateLimited)

_STATUS_KINDS: dict[int, type[ForgeError]] = {
    404: NotFound,
    409: HeadMoved,
    405: NotMergeable,
    401: Forbidden,
    403: Forbidden,
    422: Invalid,
}


def kind_for_status(status: int | None) -> type[ForgeError]:
    """The ForgeError class for a GitHub error status (5xx: Transient)."""
    if status is None:
        return ForgeError
    if status >= 500:
        return Transient
    return _STATUS_KINDS.get(status, ForgeError)

"""A settable clock for the sandbox: real time, a frozen instant, or an offset."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta


def iso(dt: datetime) -> str:
    """Format an aware datetime the way GitHub does: ``2026-01-01T00:00:00Z``."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    """Parse an ISO 8601 timestamp (``Z`` or an offset) into an aware UTC datetime."""
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        raise ValueError(f"timestamp without a time zone: {text!r}")
    return dt.astimezone(UTC)


class Clock:
    """The sandbox's notion of "now", used for created_at/updated_at and commit dates.

    Token expiry and rate-limit windows use the real clock (clients compute waits from it);
    the secondary-limit and mergeability windows use :meth:`window_time`, real time plus every
    :meth:`advance` so far, so a test can move past them even with the clock frozen.

    :meth:`wall` is the server's own wall clock: the machine's plus a settable ``skew``. It
    dates every response (``Date``), judges an App JWT's ``iat``/``exp`` and sets installation
    token expiry, as GitHub's clock does for a client whose clock has drifted.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frozen: datetime | None = None
        self._offset = timedelta(0)
        self._advanced = 0.0
        self._skew = 0.0

    def wall(self) -> float:
        """The server's wall clock in POSIX seconds: the machine's plus the skew."""
        with self._lock:
            return time.time() + self._skew

    def set_skew(self, seconds: float) -> None:
        """Run the server's wall clock ``seconds`` ahead of the machine's (negative: behind)."""
        with self._lock:
            self._skew = float(seconds)

    def window_time(self) -> float:
        """Monotonic seconds for sliding windows: real time plus all :meth:`advance` calls."""
        with self._lock:
            return time.monotonic() + self._advanced

    def now(self) -> datetime:
        """The current sandbox time (aware, UTC, whole seconds)."""
        with self._lock:
            if self._frozen is not None:
                return self._frozen
            return (datetime.now(UTC) + self._offset).replace(microsecond=0)

    def set(self, when: datetime | None) -> None:
        """Freeze the clock at ``when``; ``None`` goes back to real time (no offset)."""
        if when is not None and when.tzinfo is None:
            raise ValueError("the sandbox clock needs an aware datetime")
        with self._lock:
            self._frozen = when.astimezone(UTC).replace(microsecond=0) if when else None
            self._offset = timedelta(0)

    def set_offset(self, seconds: float) -> None:
        """Run on real time shifted by ``seconds`` (unfreezes the clock)."""
        with self._lock:
            self._frozen = None
            self._offset = timedelta(seconds=seconds)

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward (frozen or offset mode) and return the new time."""
        with self._lock:
            self._advanced += seconds
            if self._frozen is not None:
                self._frozen = self._frozen + timedelta(seconds=seconds)
            else:
                self._offset += timedelta(seconds=seconds)
        return self.now()

    def describe(self) -> dict[str, object]:
        """A JSON-friendly description for the admin endpoint."""
        with self._lock:
            frozen, offset, skew = self._frozen, self._offset.total_seconds(), self._skew
        return {
            "now": iso(self.now()),
            "frozen": frozen is not None,
            "offset_seconds": offset,
            "skew_seconds": skew,
        }

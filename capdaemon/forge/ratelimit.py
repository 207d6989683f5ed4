"""GitHub's rate limits as the Transport sees them: each budget's last headers, how long a
refusal says to wait, and how long this tick may still spend waiting."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

RATE_HEADERS = (
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-used",
    "x-ratelimit-reset",
    "x-ratelimit-resource",
)
SECONDARY_MIN_WAIT = 60.0
ONE_BUDGET = ""  # the budget key of every request when there is no Router (a token)


class WaitBudget:
    """How long this tick may still spend waiting (backoff and rate limits); reset each tick."""

    def __init__(self, seconds: float) -> None:
        self.limit = float(seconds)
        self.spent = 0.0
        self._lock = threading.Lock()

    @property
    def remaining(self) -> float:
        """Seconds left in this tick."""
        return max(0.0, self.limit - self.spent)

    def allows(self, seconds: float) -> bool:
        """Would waiting `seconds` more stay within the budget?"""
        return self.spent + seconds <= self.limit

    def spend(self, seconds: float) -> None:
        """Record a wait."""
        with self._lock:
            self.spent += seconds

    def reset(self, seconds: float | None = None) -> None:
        """Start a new tick (optionally with a new ceiling)."""
        with self._lock:
            if seconds is not None:
                self.limit = float(seconds)
            self.spent = 0.0


@dataclass
class RateState:
    """The last primary rate-limit headers GitHub sent."""

    limit: int | None = None
    remaining: int | None = None
    used: int | None = None
    reset: int | None = None  # epoch seconds
    resource: str | None = None


class RateBook:
    """The primary budget of each budget key (an App installation, or the one token)."""

    def __init__(self) -> None:
        self.rates: dict[str, RateState] = {}  # budget key → its last rate-limit headers
        self._lock = threading.Lock()

    @property
    def tightest(self) -> RateState:
        """The budget with the fewest requests left: what a tick plans by."""
        with self._lock:
            known = [r for r in self.rates.values() if r.remaining is not None]
            if not known:
                return next(iter(self.rates.values()), RateState())
            return min(known, key=lambda r: r.remaining if r.remaining is not None else 0)

    def note(self, headers: Mapping[str, str], budget: str) -> None:
        """Keep a REST answer's primary rate-limit headers (GraphQL has a budget of its own)."""
        if (
            "x-ratelimit-remaining" not in headers
            or headers.get("x-ratelimit-resource") == "graphql"
        ):
            return
        with self._lock:
            rate = self.rates.setdefault(budget, RateState())
            for attr, name in (
                ("limit", "x-ratelimit-limit"),
                ("remaining", "x-ratelimit-remaining"),
                ("used", "x-ratelimit-used"),
                ("reset", "x-ratelimit-reset"),
            ):
                if name in headers:
                    try:
                        setattr(rate, attr, int(float(headers[name])))
                    except ValueError:
                        pass
            rate.resource = headers.get("x-ratelimit-resource", rate.resource)

    def until_reset(self, budget: str, now: float) -> float | None:
        """Seconds to wait before sending on `budget` when its last answer said it is spent."""
        rate = self.rates.get(budget)
        if rate is None or rate.remaining != 0 or rate.reset is None:
            return None
        seconds = rate.reset - now + 1.0
        return seconds if seconds > 0 else None

    def waited_out(self, budget: str) -> None:
        """The reset was waited for: the budget's state is unknown until the next answer."""
        rate = self.rates.get(budget)
        if rate is not None:
            rate.remaining = None

    def reset_at(self, budget: str | None) -> datetime | None:
        """When `budget` is next refilled, as its last answer said (None: unknown)."""
        rate = self.rates.get(budget) if budget is not None else None
        return datetime.fromtimestamp(rate.reset, UTC) if rate and rate.reset else None


def refusal_wait(
    status: int, headers: Mapping[str, str], message: str, now: float
) -> tuple[float, str] | None:
    """(seconds, "primary" | "secondary") when a 403/429 is a rate limit, else None (a real
    403). `message` is the error body's message, `now` epoch seconds."""
    message = message.lower()
    secondary = "secondary rate limit" in message or "abuse" in message
    primary = headers.get("x-ratelimit-remaining") == "0" or message.startswith(
        "api rate limit exceeded"
    )
    retry_after = headers.get("retry-after")
    if retry_after is not None:
        try:
            kind = "secondary" if secondary or not primary else "primary"
            return max(0.0, float(retry_after)), kind
        except ValueError:
            pass
    if headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
        try:
            reset = float(headers["x-ratelimit-reset"])
        except ValueError:
            reset = now + SECONDARY_MIN_WAIT
        return max(1.0, reset - now + 1.0), "primary"
    if secondary or primary or status == 429:
        return SECONDARY_MIN_WAIT, "secondary"
    return None

"""GitHub's rate limits as the Transport sees them: each budget's last headers, how long a
refusal says to wait, and how long this tick may still spend waiting."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

import structlog

from capdaemon.forge.errors import RateLimited

if TYPE_CHECKING:
    import requests

log = structlog.get_logger("capdaemon.forge.transport")

RATE_HEADERS = (
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-used",
    "x-ratelimit-reset",
    "x-ratelimit-resource",
)
SECONDARY_MIN_WAIT = 60.0
ONE_BUDGET = ""  # the budget key of every request when there is no Router (a token)


class Router(Protocol):
    """Chooses each request's credentials and rate-limit budget (an App's installations)."""

    def route(self, request: requests.PreparedRequest) -> str | None:
        """Authorize `request`; its budget key, or None to send it as it is (the App's JWT)."""

    def rejected(self, key: str) -> None:
        """GitHub answered 401 to the credentials of budget `key`."""

    def learn(self, key: str, headers: Mapping[str, str]) -> None:
        """An answer's headers for a request of budget `key` (page links name repo ids)."""


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
        self.graphql: dict[str, RateState] = {}  # the same for GraphQL's budget of points
        self._lock = threading.Lock()

    @property
    def tightest(self) -> RateState:
        """The budget with the fewest requests left: what a tick plans by."""
        with self._lock:
            known = [r for r in self.rates.values() if r.remaining is not None]
            if not known:
                return next(iter(self.rates.values()), RateState())
            return min(known, key=lambda r: r.remaining if r.remaining is not None else 0)

    @property
    def graphql_tightest(self) -> RateState | None:
        """The GraphQL budget with the fewest points left, as its last answer said (None: no
        GraphQL answer has said yet)."""
        with self._lock:
            known = [r for r in self.graphql.values() if r.remaining is not None]
        return min(known, key=lambda r: r.remaining or 0) if known else None

    def note(self, headers: Mapping[str, str], budget: str) -> None:
        """Keep an answer's primary rate-limit headers: a REST answer's by its budget key, a
        GraphQL answer's apart (GraphQL has a budget of points of its own)."""
        if "x-ratelimit-remaining" not in headers:
            return
        graphql = headers.get("x-ratelimit-resource") == "graphql"
        with self._lock:
            rate = (self.graphql if graphql else self.rates).setdefault(budget, RateState())
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


def pro_rata_room(rate: RateState | None, now: float, points: int, own_per_hour: int) -> bool:
    """May a spender whose own share is `own_per_hour` of a budget spend `points` now (pure)?
    The rest of the budget is the other spenders' share (the limit less `own_per_hour`, an
    hour), and what is left after spending must cover that share for the time to the reset
    (`now` and the reset in epoch seconds): while the others stay within their share, the two
    together never run the budget out; when they need more, this spender gives way. An
    unknown budget (no answer has told yet) has room: the next answer tells."""
    if rate is None or rate.remaining is None or rate.limit is None or rate.reset is None:
        return True
    left = min(max(rate.reset - now, 0.0), 3600.0) / 3600.0
    return rate.remaining - points >= max(rate.limit - own_per_hour, 0) * left


def over_wait_budget(
    seconds: float,
    kind: str,
    method: str,
    path: str,
    *,
    why: str,
    reset_at: datetime | None,
    budget_left: float,
) -> RateLimited:
    """The error that ends a tick whose wait budget cannot cover a rate-limit wait (logged as
    `forge.rate_limited`)."""
    log.warning(
        "forge.rate_limited",
        kind=kind,
        method=method,
        path=path,
        wait=round(seconds, 3),
        budget_left=round(budget_left, 3),
        why=why,
        reset_at=reset_at.isoformat() if reset_at else None,
    )
    return RateLimited(
        f"GitHub {kind} rate limit: waiting {seconds:.0f}s would exceed this tick's "
        f"wait budget ({budget_left:.0f}s left); {why}",
        wait_seconds=seconds,
        reset_at=reset_at,
    )

"""One pacing point per installation for every request to GitHub: its secondary limits kept with
a margin, one request in flight at a time; a request waits until it fits, it is never refused.

GitHub documents the secondary limits as points a minute (REST 900: GET/HEAD/OPTIONS 1 point,
other methods 5; GraphQL 2,000: a query 1, a mutation 5), at most 100 requests in flight, and
content creation within 80 a minute and 500 an hour (forge.pacing). It does not say that a
conditional request answered 304 is free of them, so every request sent is counted. The
Transport asks `slot` before each attempt goes on the wire: the request waits in a sliding
one-minute window of its budget key (an App installation, or the one token) until its points
fit within `margin` of the limit, and holds the key's one slot while it is in flight.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import structlog

log = structlog.get_logger(__name__)

REST_POINTS_PER_MINUTE = 900
GRAPHQL_POINTS_PER_MINUTE = 2000
MARGIN = 0.8  # of GitHub's documented limits: room for what we do not count (other clients)
LONG_WAIT = 5.0  # seconds: a wait at least this long is logged as a warning
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
WINDOW = 60.0


def rest_points(method: str) -> int:
    """A REST request's points: GET/HEAD/OPTIONS 1, other methods 5."""
    return 1 if method.upper() in _READS else 5


class Window:
    """Points sent in the last minute (times on the governor's clock), within `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._sent: deque[tuple[float, int]] = deque()
        self._total = 0

    def _drop(self, now: float) -> None:
        while self._sent and now - self._sent[0][0] >= WINDOW:
            self._total -= self._sent.popleft()[1]

    def wait(self, now: float, points: int) -> float:
        """Seconds until `points` more fit within the limit (0: now)."""
        self._drop(now)
        if self._total + points <= self.limit:
            return 0.0
        over = self._total + points - self.limit
        freed = 0
        for at, cost in self._sent:
            freed += cost
            if freed >= over:
                return max(0.0, at + WINDOW - now)
        return WINDOW  # more points than the limit in one request: a whole minute apart

    def add(self, at: float, points: int) -> None:
        """Count `points` sent at `at`."""
        self._sent.append((at, points))
        self._total += points

    def spent(self, now: float) -> int:
        """Points in the minute up to `now`."""
        self._drop(now)
        return self._total


@dataclass
class Lane:
    """One budget key's windows and its one slot for a request in flight."""

    rest: Window
    graphql: Window
    slot: threading.Lock = field(default_factory=threading.Lock)
    peak: int = 0  # most points in any minute so far (REST)


@dataclass
class GovernorStats:
    """What pacing cost: requests held back, seconds they waited, the longest wait."""

    paced: int = 0
    seconds: float = 0.0
    longest: float = 0.0


class Governor:
    """Pacing of every request by budget key (see the module docstring)."""

    def __init__(
        self,
        *,
        rest_per_minute: int = int(REST_POINTS_PER_MINUTE * MARGIN),
        graphql_per_minute: int = int(GRAPHQL_POINTS_PER_MINUTE * MARGIN),
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.rest_per_minute = rest_per_minute
        self.graphql_per_minute = graphql_per_minute
        self.now = now
        self.sleep = sleep
        self.stats = GovernorStats()
        self._lanes: dict[str, Lane] = {}
        self._lock = threading.Lock()

    def lane(self, key: str) -> Lane:
        """The lane of budget key `key` (made on first use)."""
        with self._lock:
            lane = self._lanes.get(key)
            if lane is None:
                lane = Lane(Window(self.rest_per_minute), Window(self.graphql_per_minute))
                self._lanes[key] = lane
            return lane

    @contextmanager
    def slot(self, key: str, method: str, path: str, *, graphql: bool) -> Iterator[float]:
        """Hold `key`'s one slot for a request, after waiting until its points fit; yields the
        seconds waited. Requests of other keys are not held up."""
        lane = self.lane(key)
        with lane.slot:
            window = lane.graphql if graphql else lane.rest
            points = 1 if graphql else rest_points(method)
            start = self.now()
            waited = window.wait(start, points)
            if waited > 0:
                self._note_wait(key, method, path, waited, window.spent(start), window.limit)
                self.sleep(waited)
            # the request goes out once the wait is over (on a clock that a test's sleeper may
            # not move: the window keeps the time it was meant to go out)
            at = max(self.now(), start + waited)
            window.add(at, points)
            if not graphql:
                lane.peak = max(lane.peak, window.spent(at))
            yield waited

    def _note_wait(
        self, key: str, method: str, path: str, seconds: float, spent: int, limit: int
    ) -> None:
        with self._lock:
            self.stats.paced += 1
            self.stats.seconds += seconds
            self.stats.longest = max(self.stats.longest, seconds)
        fields = dict(
            budget=key or "token",
            method=method,
            path=path,
            wait=round(seconds, 3),
            points_last_minute=spent,
            limit=limit,
        )
        if seconds >= LONG_WAIT:
            log.warning("forge.paced", **fields)
        else:
            log.debug("forge.paced", **fields)

    def peak(self) -> int:
        """The most REST points any budget key spent in one minute so far."""
        with self._lock:
            return max((lane.peak for lane in self._lanes.values()), default=0)

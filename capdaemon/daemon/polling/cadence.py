"""The change detector's cadence (pure): how far apart its looks are, and how much each reads.

Quiet, a look of F requests waits at least 60·F / `detect_requests_per_minute` seconds (30: a
steady tick's traffic; every answer a free 304), and reads one slow feed (a waiting PR's checks,
a later page of open decision issues) in turn. For `detect_burst_seconds` after a look saw a
change, events tend to follow (a push starts CI, a merge moves the base, a vote follows a
ballot): looks may spend `detect_burst_requests_per_minute` instead, read the later decision
pages every look, and as many slow feeds as keep the look `detect_seconds` apart within that
rate. Never closer than `detect_seconds` nor than GitHub's `X-Poll-Interval`, and requests
stay serial. GitHub's secondary rate limit is 900 points a minute for REST, a GET one point
(docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api); the configuration
refuses a burst rate over half of it (config.types.MAX_BURST_PER_MINUTE), leaving the rest to
the tick.

In a burst, the heads waiting on checks are also swept in GraphQL (their check rollup state,
many heads a query: capdaemon.daemon.polling.rollups), each sweep at least 3600·P /
`detect_burst_graphql_points_per_hour` seconds after the one before, P its own points: over
any window the sweeps spend no more than the budget allows for it, plus one sweep.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from capdaemon.config.types import ScheduleConfig


@dataclass(frozen=True)
class Cadence:
    """The schedule's detector settings, as the pure functions below take them."""

    detect_seconds: float
    quiet_per_minute: int
    burst_per_minute: int
    burst_seconds: float
    sweep_points_per_hour: int = 0

    @classmethod
    def of(cls, sc: ScheduleConfig) -> Cadence:
        """From the `schedule:` section."""
        return cls(
            detect_seconds=sc.detect_seconds,
            quiet_per_minute=sc.detect_requests_per_minute,
            burst_per_minute=sc.detect_burst_requests_per_minute,
            burst_seconds=sc.detect_burst_seconds,
            sweep_points_per_hour=sc.detect_burst_graphql_points_per_hour,
        )

    def rate(self, burst: bool) -> int:
        """Requests a minute a look may spend (the burst rate never below the quiet one)."""
        return max(self.burst_per_minute, self.quiet_per_minute) if burst else self.quiet_per_minute


def in_burst(cadence: Cadence, last_change: float, now: float) -> bool:
    """True while `now` is within `burst_seconds` after the last look that saw a change (a
    clock that went backwards counts as no time passed: still in the window, never longer)."""
    if cadence.burst_seconds <= 0 or not math.isfinite(last_change):
        return False
    return now < last_change + cadence.burst_seconds


def look_spacing(cadence: Cadence, cost: int, poll_interval: float, *, burst: bool) -> float:
    """Seconds from one look to the next when this one sends `cost` requests (0: the detector
    is off): the longest of `detect_seconds`, GitHub's `X-Poll-Interval` and what the rate
    (quiet, or burst) allows for `cost` requests."""
    if cadence.detect_seconds <= 0:
        return 0.0
    by_rate = 60.0 * max(cost, 0) / cadence.rate(burst)
    return max(float(cadence.detect_seconds), float(poll_interval), by_rate)


def look_may_be_due(cadence: Cadence, last_look: float, poll_interval: float, now: float) -> bool:
    """Whether a look may be due at `now` whatever it would read: the detector is on and
    `detect_seconds` and the poll interval have passed since the last look (look_spacing is
    never shorter). False spares a wake-up from building the feed list."""
    if cadence.detect_seconds <= 0:
        return False
    return now - last_look >= max(float(cadence.detect_seconds), float(poll_interval))


def slow_share(cadence: Cadence, base_cost: int, slow_costs: Sequence[int], *, burst: bool) -> int:
    """How many of the slow feeds (their costs in reading order) one look reads after its
    `base_cost` requests: one when quiet; in a burst as many as fit in what the burst rate
    allows a look spaced `detect_seconds` apart — at least one, so each is still read in turn."""
    if not slow_costs:
        return 0
    if not burst:
        return 1
    budget = cadence.rate(True) * cadence.detect_seconds / 60.0 - base_cost
    taken, spent = 0, 0
    for cost in slow_costs:
        if spent + cost > budget:
            break
        spent += cost
        taken += 1
    return max(taken, 1)


def sweep_due(cadence: Cadence, last_sweep: float, now: float, points: int, *, burst: bool) -> bool:
    """May a rollup sweep of `points` GraphQL points run now, the last one having run at
    `last_sweep`? Only in a burst, never with a budget of 0 (or nothing to sweep), and not
    before 3600·points / budget seconds have passed since the last one (a clock that went
    backwards counts as no time passed)."""
    if not burst or points <= 0 or cadence.sweep_points_per_hour <= 0:
        return False
    return now - last_sweep >= 3600.0 * points / cadence.sweep_points_per_hour

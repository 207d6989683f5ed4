"""A gap in the daemon's ticks (a frozen process, a suspended host, a stepped clock), judged
from two readings of the wall and monotonic clocks (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

OVERDUE_INTERVALS = 2.0  # no tick for more than this many intervals: a gap worth naming
APART_FLOOR_SECONDS = 10.0  # the clocks may drift apart this much (NTP slewing) unremarked


class GapKind(StrEnum):
    """What the two clocks say happened while no tick ran."""

    PAUSED = "paused"  # both clocks moved on together: the process was stopped or starved
    SUSPENDED = "suspended"  # the wall clock moved further: the host slept (monotonic stops)
    CLOCK_STEPPED = "clock_stepped"  # the clocks disagree the other way: the wall clock was set


@dataclass(frozen=True)
class Reading:
    """One reading of both clocks (the wall clock aware, the monotonic in seconds)."""

    wall: datetime
    mono: float


@dataclass(frozen=True)
class Gap:
    """Time without a tick beyond the interval, and what the clocks say of it."""

    kind: GapKind
    seconds: float  # the longer of the two clocks' spans since the last tick ended
    wall_seconds: float
    mono_seconds: float
    interval: float

    @property
    def intervals(self) -> float:
        """The span in tick intervals."""
        return self.seconds / self.interval

    def describe(self) -> str:
        """One line for the log, the audit record and the digest."""
        span = (
            f"no tick for {self.seconds:.0f} s "
            f"({self.intervals:.1f} intervals of {self.interval:g} s)"
        )
        if self.kind is GapKind.PAUSED:
            return f"{span}: the daemon was frozen or starved (stopped, swapped out, paused)"
        if self.kind is GapKind.SUSPENDED:
            return (
                f"{span}: the host was suspended or its clock set forward (the wall clock moved "
                f"{self.wall_seconds - self.mono_seconds:.0f} s more than the monotonic clock)"
            )
        return (
            f"{span}: the wall clock was set back or stepped (it moved "
            f"{self.wall_seconds:.0f} s while the monotonic clock moved {self.mono_seconds:.0f} s)"
        )

    def to_dict(self) -> dict[str, object]:
        """The audit record's and tick_metrics.json's fields."""
        return {
            "kind": self.kind.value,
            "seconds": round(self.seconds, 1),
            "wall_seconds": round(self.wall_seconds, 1),
            "mono_seconds": round(self.mono_seconds, 1),
            "interval": self.interval,
        }


def judge_gap(last_end: Reading, now: Reading, interval: float) -> Gap | None:
    """The gap between the end of the last tick and a tick starting `now`, when it is one:
    more than OVERDUE_INTERVALS intervals on either clock, or the clocks moved apart by more
    than an interval (at least APART_FLOOR_SECONDS). None for an ordinary wait."""
    if interval <= 0:
        raise ValueError(f"interval must be positive, got {interval!r}")
    wall = (now.wall - last_end.wall).total_seconds()
    mono = now.mono - last_end.mono
    apart = wall - mono
    longest = max(wall, mono)
    stepped = abs(apart) > max(APART_FLOOR_SECONDS, interval)
    if longest <= OVERDUE_INTERVALS * interval and not stepped:
        return None
    if not stepped:
        kind = GapKind.PAUSED
    elif apart > 0:
        kind = GapKind.SUSPENDED
    else:
        kind = GapKind.CLOCK_STEPPED
    return Gap(kind, max(longest, 0.0), wall, mono, interval)

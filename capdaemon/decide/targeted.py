"""Targeted ticks per minute (kept in tick_metrics.json) and their count over a period (pure).

The running totals (`targeted_ticks`, `targeted_merged`) say nothing about a period; a row per
minute that saw targeted ticks does, and a digest period (from one local digest time to the
next) always starts and ends on a whole minute, so its count is exact and a tick is counted
by one digest only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from capdaemon.decide._common import aware
from capdaemon.decide.reaction import KEEP

TARGETED_KEY = "targeted_minutes"  # in tick_metrics.json: [[minute epoch s, ticks, merged], ...]

Rows = list[tuple[int, int, int]]


@dataclass(frozen=True, slots=True)
class TargetedCounts:
    """Targeted ticks run over a period, and the PRs they merged."""

    ticks: int
    merged: int


def parse_targeted(raw: object) -> Rows:
    """The rows as tick_metrics.json holds them; ValueError naming the bad row."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError(f"{TARGETED_KEY}: not a list")
    out: Rows = []
    for i, row in enumerate(raw):
        ok = isinstance(row, list) and len(row) == 3
        nums = [v for v in row if isinstance(v, int) and not isinstance(v, bool)] if ok else []
        if len(nums) != 3 or nums[0] % 60 or nums[1] < 1 or nums[2] < 0:
            raise ValueError(
                f"{TARGETED_KEY}[{i}]: not [minute epoch seconds, ticks ≥ 1, merged ≥ 0]"
            )
        out.append((nums[0], nums[1], nums[2]))
    return out


def add_targeted(old: Sequence[tuple[int, int, int]], at: datetime, merged: int) -> list[list[int]]:
    """`old` plus one targeted tick at `at` that merged `merged` PRs, in its minute's row;
    rows older than KEEP before `at` dropped; the JSON form, oldest first."""
    stamp = aware(at, "at").timestamp()
    minute = int(stamp // 60) * 60
    floor = stamp - KEEP.total_seconds()
    rows = {m: [m, t, g] for m, t, g in old if m >= floor}
    row = rows.setdefault(minute, [minute, 0, 0])
    row[1] += 1
    row[2] += merged
    return [rows[m] for m in sorted(rows)]


def targeted_in(
    rows: Sequence[tuple[int, int, int]], start: datetime, end: datetime
) -> TargetedCounts:
    """The targeted ticks of the minutes in [start, end) and what they merged."""
    lo, hi = aware(start, "start").timestamp(), aware(end, "end").timestamp()
    inside = [(t, g) for m, t, g in rows if lo <= m < hi]
    return TargetedCounts(sum(t for t, _ in inside), sum(g for _, g in inside))


def targeted_for(raw: object, start: datetime, end: datetime) -> TargetedCounts | None:
    """The period's counts from tick_metrics.json's rows (None when no targeted tick was ever
    recorded); ValueError naming the bad row."""
    return None if raw is None else targeted_in(parse_targeted(raw), start, end)

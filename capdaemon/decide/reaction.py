"""Reaction times (from the event that caused an action to the action, per kind): the samples
kept in tick_metrics.json, and their p50/p95/max over a period (pure)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from capdaemon.decide._common import aware

# kind → what the owner sees; the event each is measured from is in the README
KINDS: Mapping[str, str] = {
    "check_published": "L1.C3 published",
    "ballot_counted": "vote counted",
    "merge_done": "merge done",
}
KEEP = timedelta(days=8)  # samples older than this are dropped (the digest reads one day)
MAX_SAMPLES = 2000  # per kind, newest kept: tick_metrics.json stays small
SAMPLES_KEY = "reaction_samples"  # in tick_metrics.json: kind → [[action epoch s, seconds], ...]
SUMMARY_KEY = "reaction_seconds_24h"  # in tick_metrics.json: kind → {n, p50, p95, max}

Samples = dict[str, list[tuple[float, float]]]


@dataclass(frozen=True, slots=True)
class ReactionStats:
    """The reaction times of one kind over a period (seconds)."""

    kind: str
    n: int
    p50: float
    p95: float
    max: float

    @property
    def label(self) -> str:
        """What the owner reads for the kind."""
        return KINDS.get(self.kind, self.kind)

    def to_json(self) -> dict[str, float | int]:
        """The form tick_metrics.json carries."""
        return {"n": self.n, "p50": self.p50, "p95": self.p95, "max": self.max}


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank `q`-th percentile (0 < q ≤ 100) of non-empty `values`."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 < q <= 100:
        raise ValueError(f"percentile q must be in (0, 100], not {q}")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def stats_of(kind: str, values: Sequence[float]) -> ReactionStats | None:
    """p50/p95/max of `values` (None when there are none)."""
    if not values:
        return None
    return ReactionStats(
        kind,
        len(values),
        round(percentile(values, 50), 1),
        round(percentile(values, 95), 1),
        round(max(values), 1),
    )


def parse_samples(raw: object) -> Samples:
    """The samples as tick_metrics.json holds them; ValueError naming the bad field."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{SAMPLES_KEY}: not an object")
    out: Samples = {}
    for kind, rows in raw.items():
        if kind not in KINDS:
            raise ValueError(f"{SAMPLES_KEY}.{kind}: unknown kind")
        if not isinstance(rows, list):
            raise ValueError(f"{SAMPLES_KEY}.{kind}: not a list")
        parsed: list[tuple[float, float]] = []
        for i, row in enumerate(rows):
            ok = isinstance(row, list) and len(row) == 2
            nums = [v for v in row if _number(v)] if ok else []
            if len(nums) != 2 or nums[1] < 0:
                raise ValueError(f"{SAMPLES_KEY}.{kind}[{i}]: not [epoch seconds, seconds ≥ 0]")
            parsed.append((float(nums[0]), float(nums[1])))
        out[kind] = parsed
    return out


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def merged_samples(
    old: Mapping[str, Sequence[tuple[float, float]]],
    new: Iterable[tuple[str, float, float]],
    now: datetime,
) -> dict[str, list[list[float]]]:
    """`old` plus the `new` (kind, action epoch, seconds), without what is older than KEEP
    before `now`, the newest MAX_SAMPLES per kind, in the JSON form."""
    floor = aware(now, "now").timestamp() - KEEP.total_seconds()
    rows: dict[str, list[tuple[float, float]]] = {k: list(v) for k, v in old.items()}
    for kind, at, seconds in new:
        rows.setdefault(kind, []).append((at, seconds))
    out: dict[str, list[list[float]]] = {}
    for kind in KINDS:
        kept = sorted(r for r in rows.get(kind, ()) if r[0] >= floor)[-MAX_SAMPLES:]
        out[kind] = [[round(at, 3), round(s, 3)] for at, s in kept]
    return out


def period_stats(
    samples: Mapping[str, Sequence[tuple[float, float]]], start: datetime, end: datetime
) -> tuple[ReactionStats, ...]:
    """p50/p95/max per kind of the actions taken in [start, end), in KINDS order."""
    lo, hi = aware(start, "start").timestamp(), aware(end, "end").timestamp()
    out = []
    for kind in KINDS:
        found = stats_of(kind, [s for at, s in samples.get(kind, ()) if lo <= at < hi])
        if found is not None:
            out.append(found)
    return tuple(out)


def format_seconds(seconds: float) -> str:
    """A reaction time as "0.4 s", "42 s", "3 min 5 s" or "2.5 h"."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    return f"{seconds / 3600:.1f} h"


def describe(stats: ReactionStats) -> str:
    """One line: "merge done: p50 4.2 s, p95 38 s, max 1 min 2 s (12 actions)"."""
    return (
        f"{stats.label}: p50 {format_seconds(stats.p50)}, p95 {format_seconds(stats.p95)}, "
        f"max {format_seconds(stats.max)} ({stats.n} action{'s' if stats.n != 1 else ''})"
    )

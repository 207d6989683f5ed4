"""The reaction times a tick measures (event → action, per kind) and their home in
tick_metrics.json (capdaemon.decide.reaction holds the pure part)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from capdaemon.decide.reaction import (
    KINDS,
    SAMPLES_KEY,
    SUMMARY_KEY,
    merged_samples,
    parse_samples,
    period_stats,
)
from capdaemon.decide.targeted import TARGETED_KEY, add_targeted, parse_targeted
from capdaemon.logging import get_logger
from capdaemon.model import CheckRun
from capdaemon.stores.botstate import Metrics
from capdaemon.timefmt import parse_utc, utc_iso

CHECK_PUBLISHED = "check_published"
BALLOT_COUNTED = "ballot_counted"
MERGE_DONE = "merge_done"
L1C3 = "L1.C3"

log = get_logger("capdaemon.reactions")


@dataclass
class ReactionClock:
    """One tick's reaction times. An action's time is the tick's `now` plus the time the tick
    has run (monotonic), so a late action in a long tick is not counted as early."""

    started: float = field(default_factory=time.monotonic)
    samples: list[tuple[str, str, float, float]] = field(default_factory=list)

    def note(self, kind: str, ref: str, caused_at: datetime | None, now: datetime) -> None:
        """One action of `kind` on `ref` now, caused by the event at `caused_at` (GitHub's
        time; None: unknown, nothing is measured). A cause after the action (clocks apart)
        counts as 0 s."""
        if kind not in KINDS:
            raise ValueError(f"unknown reaction kind {kind!r}")
        if caused_at is None:
            return
        acted = now + timedelta(seconds=time.monotonic() - self.started)
        seconds = max(0.0, (acted - caused_at).total_seconds())
        self.samples.append((kind, ref, acted.timestamp(), seconds))

    def of(self, kind: str) -> list[float]:
        """This tick's reaction times of one kind (seconds)."""
        return [s for k, _, _, s in self.samples if k == kind]


def time_or_none(value: object) -> datetime | None:
    """A recorded vote time (`voted_at`), or None when absent or unreadable: it only feeds
    the reaction times, so a bad one is not measured rather than stopping a merge."""
    if not isinstance(value, str):
        return None
    try:
        return parse_utc(value, "voted_at")
    except ValueError:
        return None


def merge_cause(
    updated_at: datetime | None, voted_at: Iterable[datetime | None], checks: Sequence[CheckRun]
) -> datetime | None:
    """What made a PR ready to merge: the latest of its last change (the list's `updated_at`,
    at or after the head's push), the vote that approved it and the completion of a check run
    it waited on (capdaemon's own L1.C3 excluded: publishing it is an action, not a cause)."""
    times = [updated_at, *voted_at]
    times += [c.completed_at for c in checks if c.name != L1C3]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def save_reactions(metrics: Metrics, clock: ReactionClock, now: datetime) -> None:
    """Add the tick's samples to tick_metrics.json (KEEP days, MAX_SAMPLES per kind) and the
    p50/p95/max of each kind over the last 24 hours."""
    try:
        old = parse_samples(metrics.data.get(SAMPLES_KEY))
    except ValueError as exc:  # a metrics window, not a decision: started again, and said
        log.warning("metrics.reactions_malformed", error=str(exc)[:200], fix="none needed")
        old = {}
    new = ((kind, at, seconds) for kind, _, at, seconds in clock.samples)
    samples = merged_samples(old, new, now)
    rows = {k: [(float(a), float(s)) for a, s in v] for k, v in samples.items()}
    end = max([now, *(datetime.fromtimestamp(at, now.tzinfo) for _, _, at, _ in clock.samples)])
    day = period_stats(rows, end - timedelta(days=1), end + timedelta(seconds=1))  # (rounding)
    metrics.update(**{SAMPLES_KEY: samples, SUMMARY_KEY: {s.kind: s.to_json() for s in day}})


class TickFigures(Protocol):
    """What save_targeted reads of a tick's report."""

    seconds: float
    merged: list[str]
    api_requests: int | None


def save_targeted(
    metrics: Metrics, report: TickFigures, clock: ReactionClock, now: datetime
) -> None:
    """A targeted tick in tick_metrics.json, counted apart from the full ticks (`ticks` and
    `last_tick_*` stay theirs): running totals, its minute's row (what the digest counts per
    period) and the reaction times it measured."""
    data = metrics.data
    try:
        rows = parse_targeted(data.get(TARGETED_KEY))
    except ValueError as exc:  # a metrics window, not a decision: started again, and said
        log.warning("metrics.targeted_malformed", error=str(exc)[:200], fix="none needed")
        rows = []
    metrics.update(
        **{TARGETED_KEY: add_targeted(rows, now, len(report.merged))},
        targeted_ticks=_count(data, "targeted_ticks") + 1,
        targeted_merged=_count(data, "targeted_merged") + len(report.merged),
        targeted_api_requests=_count(data, "targeted_api_requests") + (report.api_requests or 0),
        last_targeted_at=utc_iso(now),
        last_targeted_seconds=report.seconds,
    )
    save_reactions(metrics, clock, now)
    metrics.save()


def _count(data: Mapping[str, Any], key: str) -> int:
    """A running count in tick_metrics.json (0 when absent or not a count)."""
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

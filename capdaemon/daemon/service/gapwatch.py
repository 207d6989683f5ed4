"""The tick loop's own clock check: a gap between ticks (a frozen process, a suspended host, a
stepped clock) is logged, audited, counted in tick_metrics.json and so named in the digest."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from capdaemon.decide.gaps import Gap, Reading, judge_gap
from capdaemon.timefmt import utc_iso

if TYPE_CHECKING:
    from capdaemon.daemon.core.tick import Ticker

GAP_ACTION = "daemon_gap"  # the actions.jsonl record (the digest lists it under Attention)
RECENT_GAPS = 20  # tick_metrics.json keeps this many of the latest gaps


class GapWatch:
    """Reads both clocks when a scheduled tick ends and when the next one starts; a span
    that `judge_gap` calls a gap is reported once, before that tick runs."""

    def __init__(
        self,
        ticker: Ticker,
        interval: float,
        *,
        wall: Callable[[], datetime] | None = None,
        mono: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ticker = ticker
        self.interval = interval
        self._wall = wall or (lambda: datetime.now(UTC))
        self._mono = mono
        self._last_end: Reading | None = None

    def _read(self) -> Reading:
        return Reading(self._wall(), self._mono())

    def tick_starting(self) -> Gap | None:
        """Judge the span since the last tick ended; report a gap (see `report`)."""
        if self._last_end is None:
            return None
        now = self._read()
        gap = judge_gap(self._last_end, now, self.interval)
        if gap is not None:
            self.report(gap, now.wall)
        return gap

    def tick_ended(self) -> None:
        """Remember when the tick (or its skip) ended."""
        self._last_end = self._read()

    def report(self, gap: Gap, at: datetime) -> None:
        """Log (warning), audit (`daemon_gap`) and count the gap in tick_metrics.json, under the
        tick lock (the change detector and Telegram taps write the same files)."""
        ticker = self.ticker
        fields = gap.to_dict()
        with ticker.busy:
            ticker.log.warning("daemon.gap", detail=gap.describe(), **fields)
            ticker.actions_log.append(
                {"action": GAP_ACTION, **fields, "detail": gap.describe()}, now=at
            )
            data = ticker.metrics.data
            recent = [g for g in data.get("gaps_recent") or () if isinstance(g, dict)]
            recent = [*recent, {"at": utc_iso(at), **fields}][-RECENT_GAPS:]
            ticker.metrics.update(gaps=_count(data.get("gaps")) + 1, gaps_recent=recent)
            ticker.metrics.save()


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

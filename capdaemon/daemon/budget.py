"""The tick's request and write budget: a large backlog of new PRs is spread over several ticks.

GitHub allows about 500 content-creating writes an hour and 80 a minute, and a primary budget of
counted requests (the rate-limit headers). A cold start over a thousand open PRs would spend
all of it in one tick and leave nothing for what matters most: owners' ballots and the merges
of approved PRs. So each tick gets an allowance of *new* PRs (never seen before) from what is
left in the last hour and minute, after a reserve kept for ballots and merges of PRs already
known; new PRs beyond it wait for a later tick (counted as backlog in the tick summary and
`tick_metrics.json`). PRs already known are never deferred, and conditional reads answered 304
cost nothing, so the budget never stops them.

What each tick spent is kept in `<state>/budget.json` (the last hour), so `tick --once`
processes share one budget. A file that cannot be read is renamed aside with a log event and
the budget restarts empty (GitHub's own limits still apply: the transport waits them out).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from capdaemon.config import GitHubConfig
from capdaemon.filenames import BUDGET_FILE
from capdaemon.logging import get_logger
from capdaemon.state import atomic_write_json, set_aside
from capdaemon.timefmt import parse_utc

log = get_logger(__name__)

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
# what one new PR costs at most: counted reads (compare, trees, contents, label events, the
# merge's read of the PR; the PR and its checks come with the GraphQL page) and writes (its
# check run, one decision issue, its merge)
READS_PER_NEW_PR = 5
WRITES_PER_NEW_PR = 3
# kept for ballots, merges and probes of PRs already known
RESERVE_WRITES_PER_HOUR = 50
RESERVE_WRITES_PER_MINUTE = 10
RESERVE_READS = 200


@dataclass(frozen=True)
class Spent:
    """What one tick spent."""

    at: datetime
    writes: int
    counted: int

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"at": self.at.isoformat(), "writes": self.writes, "counted": self.counted}


def _reserve(limit: int, reserve: int) -> int:
    """The reserve, never more than a quarter of a small configured limit."""
    return min(reserve, limit // 4)


class TickBudget:
    """How many new PRs this tick may take on; what the last hour spent."""

    def __init__(self, state_dir: Path, cfg: GitHubConfig) -> None:
        self.path = Path(state_dir) / BUDGET_FILE
        self.cfg = cfg
        self.history: list[Spent] = self._load()
        self.allowance: int | None = None  # new PRs left this tick (None: not limited)
        self.deferred = 0
        self.figures: dict[str, Any] = {}

    def _load(self) -> list[Spent]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            data = json.loads(raw)
            return [
                Spent(parse_utc(e["at"], "ticks[].at"), int(e["writes"]), int(e["counted"]))
                for e in data["ticks"]
            ]
        except (ValueError, KeyError, TypeError) as exc:
            aside = set_aside(self.path, datetime.now(UTC))
            log.warning(
                "budget.file_set_aside", file=str(self.path), moved_to=aside.name, reason=str(exc)
            )
            return []

    def _since(self, now: datetime, span: timedelta) -> tuple[int, int]:
        recent = [s for s in self.history if s.at > now - span]
        return sum(s.writes for s in recent), sum(s.counted for s in recent)

    def start(
        self, now: datetime, rate_remaining: int | None, rate_limit: int | None = None
    ) -> int:
        """This tick's allowance of new PRs, from what the last hour and minute spent and the
        primary budget's remaining requests (its limit sizes the reserve)."""
        w_hour, c_hour = self._since(now, HOUR)
        w_min, _ = self._since(now, MINUTE)
        cfg = self.cfg
        by_writes = min(
            cfg.writes_per_hour - w_hour - _reserve(cfg.writes_per_hour, RESERVE_WRITES_PER_HOUR),
            cfg.writes_per_minute
            - w_min
            - _reserve(cfg.writes_per_minute, RESERVE_WRITES_PER_MINUTE),
        )
        reads_left: list[int] = []
        if cfg.requests_per_hour is not None:
            reads_left.append(
                cfg.requests_per_hour - c_hour - _reserve(cfg.requests_per_hour, RESERVE_READS)
            )
        if rate_remaining is not None:
            limit = rate_limit if rate_limit is not None else rate_remaining
            reads_left.append(rate_remaining - _reserve(limit, RESERVE_READS))
        allowance = max(0, by_writes // WRITES_PER_NEW_PR)
        if reads_left:
            allowance = min(allowance, max(0, min(reads_left) // READS_PER_NEW_PR))
        self.allowance = allowance
        self.deferred = 0
        self.figures = {
            "new_pr_allowance": allowance,
            "writes_last_hour": w_hour,
            "writes_last_minute": w_min,
            "counted_last_hour": c_hour,
            "writes_per_hour": cfg.writes_per_hour,
            "writes_per_minute": cfg.writes_per_minute,
            "requests_per_hour": cfg.requests_per_hour,
        }
        return allowance

    def take_new_pr(self) -> bool:
        """May this tick take on one more new PR? False: it waits (counted as backlog)."""
        if self.allowance is None:
            return True
        if self.allowance <= 0:
            self.deferred += 1
            return False
        self.allowance -= 1
        return True

    def finish(self, now: datetime, writes: int, counted: int) -> None:
        """Record what this tick spent and keep only the last hour."""
        self.history = [s for s in self.history if s.at > now - HOUR]
        self.history.append(Spent(now, max(0, writes), max(0, counted)))
        self.figures.update(backlog_left=self.deferred, writes=writes, counted=counted)
        self.allowance = None
        try:
            atomic_write_json(self.path, {"ticks": [s.to_json() for s in self.history]}, mode=0o600)
        except OSError as exc:
            log.warning("budget.not_saved", file=str(self.path), error=exc.strerror)

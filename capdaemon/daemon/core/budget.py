"""The tick's request and write budget: a large backlog of new PRs is spread over several ticks.

GitHub allows about 500 content-creating writes an hour and 80 a minute, and a primary budget of
counted requests (the rate-limit headers). A cold start over a thousand open PRs would spend
all of it in one tick and leave nothing for what matters most: owners' ballots and the merges
of approved PRs. So each tick gets two allowances for *new* PRs (never published before), from
what is left in the last hour and minute after a reserve kept for ballots and merges of PRs
already known: how many new PRs it may read and classify (counted reads), and how many
content-creating writes it may spend on publishing them. The writes are what binds; they are
spent by value (capdaemon.daemon.polling.backlog): ballots first, then A PRs, then B/C PRs. PRs
already known are never deferred, and conditional reads answered 304 cost nothing, so the
budget never stops them.

A new PR classified but not published (its writes did not fit) is remembered as *waiting*
with its quadrant, keyed by what the PR list says of it (the light fingerprint), so a later
tick orders it without reading it and reads it again (free: conditional requests) only to
publish it. What each tick spent (the last hour) and the waiting PRs are kept in
`<state>/budget.json`, so `tick --once` processes share one budget. A file that cannot be read
is renamed aside with a log event and the budget restarts empty (GitHub's own limits still
apply: the transport waits them out; a waiting PR is then read again like an unread one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from capdaemon.config import GitHubConfig
from capdaemon.filenames import BUDGET_FILE
from capdaemon.forge.governor import MARGIN, REST_POINTS_PER_MINUTE
from capdaemon.logging import get_logger
from capdaemon.model import Quadrant
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
# GitHub's secondary limit: 900 points a minute for REST (a GET is one point), of which the
# forge's governor spends 80 %; new PRs are read within that, less a reserve for known PRs,
# unless this tick can publish more of them (the governor then spreads the reads over minutes)
READS_PER_MINUTE = int(REST_POINTS_PER_MINUTE * MARGIN)
RESERVE_READS_PER_MINUTE = 200
# the order new PRs are published in: those waiting for an owner first (a D ballot, a scope
# issue), then A (a merge), then B and C (a passive review issue and a merge)
RANK_OWNER, RANK_A, RANK_BC = 0, 1, 2


@dataclass(frozen=True)
class Spent:
    """What one tick spent."""

    at: datetime
    writes: int
    counted: int

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"at": self.at.isoformat(), "writes": self.writes, "counted": self.counted}


@dataclass(frozen=True)
class Waiting:
    """A new PR classified in an earlier tick and not published: its writes did not fit.

    `light` is the PR's light fingerprint when it was classified (head, base, labels, draft,
    policy): a PR listed with another one is read as new again. The quadrant and the cost
    only order the backlog; nothing is decided from them (the PR is read and classified
    again before anything is written for it).
    """

    light: str
    quadrant: str
    blocked: bool

    @property
    def rank(self) -> int:
        """Its place in the publication order (see rank_of)."""
        return rank_of(Quadrant(self.quadrant), blocked=self.blocked)

    @property
    def cost(self) -> int:
        """The writes publishing it takes (see writes_for)."""
        return writes_for(Quadrant(self.quadrant), blocked=self.blocked)

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"light": self.light, "quadrant": self.quadrant, "blocked": self.blocked}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Waiting:
        """Parse one entry (ValueError, KeyError or TypeError when malformed)."""
        quadrant = Quadrant(data["quadrant"]).value
        if not isinstance(data["light"], str) or not isinstance(data["blocked"], bool):
            raise TypeError("waiting entry: light must be a string, blocked a boolean")
        return cls(data["light"], quadrant, data["blocked"])


def rank_of(quadrant: Quadrant, *, blocked: bool) -> int:
    """Where a new PR comes in the publication order (lower first): an owner has to answer a
    D ballot or a scope issue, an A PR merges, a B/C PR opens a passive review and merges."""
    if quadrant is Quadrant.D or blocked:
        return RANK_OWNER
    return RANK_A if quadrant is Quadrant.A else RANK_BC


def writes_for(quadrant: Quadrant, *, blocked: bool) -> int:
    """The content-creating writes publishing a new PR takes: its L1.C3 check run; a ballot
    (D); a passive review issue (B/C, unless blocked); a scope issue (blocked); its merge
    (A/B/C, unless blocked). Never more than WRITES_PER_NEW_PR."""
    issues = int(quadrant is Quadrant.D) + int(blocked)
    if not blocked and quadrant in (Quadrant.B, Quadrant.C):
        issues += 1
    merge = int(quadrant is not Quadrant.D and not blocked)
    return min(WRITES_PER_NEW_PR, 1 + issues + merge)


_COSTS = tuple(writes_for(q, blocked=b) for q in Quadrant for b in (False, True))


def down_to_reserve(rate: Mapping[str, Any]) -> bool:
    """Has the hour's primary budget, as GitHub last said (`remaining`, `limit`), come down to
    the reserve kept for merges and votes? False when GitHub has not said."""
    remaining, limit = rate.get("remaining"), rate.get("limit")
    if not isinstance(remaining, int):
        return False
    return remaining <= _reserve(limit if isinstance(limit, int) else remaining, RESERVE_READS)


def _reserve(limit: int, reserve: int) -> int:
    """The reserve, never more than a quarter of a small configured limit."""
    return min(reserve, limit // 4)


class TickBudget:
    """How many new PRs this tick may read and what it may write for them; what the last hour
    spent; the new PRs waiting for writes."""

    def __init__(self, state_dir: Path, cfg: GitHubConfig) -> None:
        self.path = Path(state_dir) / BUDGET_FILE
        self.cfg = cfg
        self.history: list[Spent] = []
        self.waiting: dict[str, Waiting] = {}  # PR ref → why it waits (see Waiting)
        self._load()
        self.reads: int | None = None  # new PRs this tick may still read (None: no tick)
        self.writes: int | None = None  # writes left for new PRs (None: not limited)
        self.figures: dict[str, Any] = {}
        self._told = False  # the tick's first deferred read was logged
        self._why = ""  # why reads of new PRs are deferred this tick

    def _load(self) -> None:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        try:
            data = json.loads(raw)
            history = [
                Spent(parse_utc(e["at"], "ticks[].at"), int(e["writes"]), int(e["counted"]))
                for e in data["ticks"]
            ]
            waiting = {
                str(ref): Waiting.from_json(entry)
                for ref, entry in dict(data.get("waiting") or {}).items()
            }
        except (ValueError, KeyError, TypeError) as exc:
            aside = set_aside(self.path, datetime.now(UTC))
            log.warning(
                "budget.file_set_aside", file=str(self.path), moved_to=aside.name, reason=str(exc)
            )
            return
        self.history, self.waiting = history, waiting

    def _since(self, now: datetime, span: timedelta) -> tuple[int, int]:
        recent = [s for s in self.history if s.at > now - span]
        return sum(s.writes for s in recent), sum(s.counted for s in recent)

    def start(
        self, now: datetime, rate_remaining: int | None, rate_limit: int | None = None
    ) -> tuple[int, int]:
        """This tick's allowances for new PRs: (PRs it may read, writes it may spend), from what
        the last hour and minute spent and the primary budget's remaining requests (its limit
        sizes the reserve). Reads also stay within the minute's secondary limit unless the
        writes allow publishing more new PRs than that (then all of those may be read)."""
        w_hour, c_hour = self._since(now, HOUR)
        w_min, c_min = self._since(now, MINUTE)
        cfg = self.cfg
        writes = max(
            0,
            min(
                cfg.writes_per_hour
                - w_hour
                - _reserve(cfg.writes_per_hour, RESERVE_WRITES_PER_HOUR),
                cfg.writes_per_minute
                - w_min
                - _reserve(cfg.writes_per_minute, RESERVE_WRITES_PER_MINUTE),
            ),
        )
        reads_left: list[int] = []
        if cfg.requests_per_hour is not None:
            reads_left.append(
                cfg.requests_per_hour - c_hour - _reserve(cfg.requests_per_hour, RESERVE_READS)
            )
        if rate_remaining is not None:
            limit = rate_limit if rate_limit is not None else rate_remaining
            reads_left.append(rate_remaining - _reserve(limit, RESERVE_READS))
        # no more than the minute's secondary limit allows, or than this tick can publish
        by_minute = max(0, READS_PER_MINUTE - c_min - RESERVE_READS_PER_MINUTE)
        cap = max(by_minute // READS_PER_NEW_PR, writes // min(_COSTS))
        reads = min(cap, max(0, min(reads_left)) // READS_PER_NEW_PR) if reads_left else cap
        self.reads, self.writes = reads, writes
        self._told = False
        self._why = (
            "this tick's read allowance is spent (the minute's points or the hour's requests)"
        )
        self.figures = {
            "new_pr_reads": reads,
            "new_pr_writes": writes,
            "writes_last_hour": w_hour,
            "writes_last_minute": w_min,
            "counted_last_hour": c_hour,
            "writes_per_hour": cfg.writes_per_hour,
            "writes_per_minute": cfg.writes_per_minute,
            "requests_per_hour": cfg.requests_per_hour,
        }
        return reads, writes

    def replan(self, rate_remaining: int | None, rate_limit: int | None = None) -> None:
        """Bound the new PRs this tick may still read by what GitHub said is left just now (the
        tick's allowance was planned on the last answer before it, and another client of the
        installation may have spent the hour since): never into the reserve kept for merges
        and votes."""
        if self.reads is None or rate_remaining is None:
            return
        limit = rate_limit if rate_limit is not None else rate_remaining
        room = max(0, rate_remaining - _reserve(limit, RESERVE_READS)) // READS_PER_NEW_PR
        if room < self.reads:
            self.reads = room
            self._why = "the hour's requests are down to the reserve kept for merges and votes"
            self.figures["new_pr_reads_replanned"] = room
            self.figures["rate_remaining_replanned"] = rate_remaining

    def take_read(self) -> bool:
        """May this tick read (and classify) one more new PR? False: it stays unread (the
        first time a tick says so, the reason is logged)."""
        if self.reads is None:
            return True
        if self.reads <= 0:
            if not self._told:
                self._told = True
                log.info("budget.deferred", work="new PR reads", reason=self._why)
            return False
        self.reads -= 1
        return True

    def fits(self, cost: int) -> bool:
        """Do `cost` writes fit in what is left for new PRs this tick?"""
        return self.writes is None or cost <= self.writes

    def spend(self, cost: int) -> None:
        """Count `cost` writes for a new PR published this tick."""
        if self.writes is not None:
            self.writes = max(0, self.writes - cost)

    def finish(
        self,
        now: datetime,
        writes: int,
        counted: int,
        backlog: Mapping[str, Any] | None = None,
    ) -> None:
        """Record what this tick spent (keeping the last hour) and the backlog figures."""
        self.history = [s for s in self.history if s.at > now - HOUR]
        self.history.append(Spent(now, max(0, writes), max(0, counted)))
        self.figures.update(backlog or {}, writes=writes, counted=counted)
        self.reads = self.writes = None
        body = {
            "ticks": [s.to_json() for s in self.history],
            "waiting": {ref: w.to_json() for ref, w in sorted(self.waiting.items())},
        }
        try:
            atomic_write_json(self.path, body, mode=0o600)
        except OSError as exc:
            log.warning("budget.not_saved", file=str(self.path), error=exc.strerror)

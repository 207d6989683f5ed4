"""New PRs beyond a tick's write budget: read and classified first, then published by value.

A cold start over more new PRs than GitHub's content-creation limits allow cannot publish them
all in one tick. Taken oldest first, a D PR behind hundreds of B/C PRs would wait hours for its
ballot. So a tick handles new PRs (no record yet) in two stages:

1. While each repo is polled, a new PR is read and classified within the tick's read
   allowance (counted reads: cheaper than writes), oldest first. Nothing is recorded or
   written for it. A PR an earlier tick classified and left waiting, listed with the same
   light fingerprint, is not read: its recorded quadrant orders it.
2. After every repo, the candidates are published by value while their writes fit the
   tick's write allowance: those waiting for an owner first (D ballots, scope issues), then A
   PRs (check run, merge), then B/C PRs (check run, passive review issue, merge); oldest first
   within each. A waiting PR taken now is read again (conditional requests: free) and
   classified again before anything is written, so nothing is decided from an old verdict.

When the writes left cover every new PR listed this tick at the most one can cost (a steady
tick with a few new PRs, or the budget lifted), there is no order to keep: each new PR is
published as soon as it is classified, and nothing is held.

A candidate whose writes do not fit waits: no record, no audit entry, no check run, no
issue, nothing merged (a B/C PR is published with its passive review issue before step 4
can merge it). Only the candidates the write allowance can still take keep their snapshot in
memory; the others keep their quadrant (budget.Waiting) in `budget.json`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TypeVar

from capdaemon.config import RepoConfig
from capdaemon.daemon.core.budget import WRITES_PER_NEW_PR, Waiting
from capdaemon.daemon.core.context import TickContext, TickDeps
from capdaemon.daemon.core.failure import report_error
from capdaemon.daemon.core.tickdata import TickReport, _Seen
from capdaemon.daemon.polling.gather import gather, plan
from capdaemon.daemon.polling.publish import Prepared, prepare_new, publish_new
from capdaemon.forge.errors import ForgeError, TickAbort
from capdaemon.forge.types import PRSummary
from capdaemon.model import Quadrant
from capdaemon.state import StateError

T = TypeVar("T")


def one_pr(deps: TickDeps, report: TickReport, pr: PRSummary, fn: Callable[[], T]) -> T | None:
    """Run one PR's step; a forge error or a bug with this PR is reported and gives None (it
    must not stall every other PR). Rate limits, stop requests and state errors end the tick."""
    try:
        return fn()
    except (TickAbort, StateError):
        raise
    except ForgeError as exc:
        report_error(report, "pr.gather_failed", f"{pr.ref}: {exc}", pr=pr.ref)
    except Exception as exc:
        deps.log.exception("pr.failed", pr=pr.ref)
        report.errors.append(f"{pr.ref}: {type(exc).__name__}: {exc}")
    return None


@dataclass
class Candidate:
    """A new PR this tick may publish: what orders it, and its classification when held."""

    order: int  # discovery order: repos as configured, each repo's PRs oldest first
    rc: RepoConfig
    pr: PRSummary
    policy_hash: str
    waiting: Waiting
    prepared: Prepared | None = None  # None: read (again) before it is published
    published: bool = False

    @property
    def key(self) -> tuple[int, int]:
        """Publication order: rank, then discovery."""
        return (self.waiting.rank, self.order)


class Backlog:
    """One tick's new PRs: which to read, which to publish, and what is left."""

    def __init__(self, deps: TickDeps, ctx: TickContext, now: datetime) -> None:
        self.deps, self.ctx, self.now = deps, ctx, now
        self.budget = deps.work_budget
        self.candidates: list[Candidate] = []
        self.unread = 0  # new PRs left unread (beyond the read allowance, or a failed read)
        self.polled: set[str] = set()
        self.ample = True  # the writes cover every new PR: each is published as it is read

    def size_up(self, new: Iterable[PRSummary]) -> None:
        """Given every new PR listed this tick: do the writes left cover them all at the most
        a new PR costs? Then each is published as soon as it is classified (nothing is held,
        no order to keep); else they are published by value after every repo is polled."""
        writes = self.budget.writes
        self.ample = writes is None or writes >= WRITES_PER_NEW_PR * sum(1 for _ in new)

    def _add(self, rc: RepoConfig, pr: PRSummary, policy_hash: str, w: Waiting) -> Candidate:
        c = Candidate(len(self.candidates), rc, pr, policy_hash, w)
        self.candidates.append(c)
        return c

    def to_read(
        self, rc: RepoConfig, new: Sequence[PRSummary], policy_hash: str
    ) -> list[PRSummary]:
        """Of one repo's new PRs (oldest first), those to read and classify now: within the
        read allowance. One left waiting at the same light fingerprint is a candidate as is."""
        self.polled.add(rc.name)
        out: list[PRSummary] = []
        for pr in new:
            light = plan(self.deps, self.ctx, pr, policy_hash, self.now).light
            known = self.budget.waiting.get(pr.ref)
            if known is not None and known.light == light:
                self._add(rc, pr, policy_hash, known)
            elif self.budget.take_read():
                out.append(pr)
            else:
                self.unread += 1
        return out

    def offer(
        self, rc: RepoConfig, light: str, p: Prepared | None, report: TickReport
    ) -> list[_Seen]:
        """A new PR read and classified in stage 1 (None: its read failed or it moved); what it
        published right away (when the writes are ample)."""
        if p is None:
            self.unread += 1
            return []
        w = Waiting(light, p.verdict.quadrant.value, p.blocked)
        c = self._add(rc, p.pr, p.policy_hash, w)
        c.prepared = p
        if not self.ample or not self.budget.fits(w.cost):
            return []
        handled = self._publish_one(c, report, p)
        return [] if handled is None else [handled]

    def _publish_one(self, c: Candidate, report: TickReport, p: Prepared) -> _Seen | None:
        """Publish one candidate and spend its writes (None: nothing was recorded for it, or
        it was recorded but its publication failed: it is a known PR from now on)."""
        deps = self.deps
        deps.check_stop()
        handled = one_pr(
            deps, report, c.pr, partial(publish_new, deps, self.ctx, p, self.now, report)
        )
        c.prepared = None
        if handled is None and c.pr.ref not in deps.prs.records:
            return None  # nothing recorded: it waits
        c.published = True
        self.budget.spend(c.waiting.cost)
        deps.heartbeat()
        return handled

    def _selection(self) -> list[Candidate]:
        """The candidates the write allowance takes, by value (a candidate that does not fit
        is passed over for a cheaper one after it)."""
        left = self.budget.writes
        taken: list[Candidate] = []
        for c in sorted(self.candidates, key=lambda c: c.key):
            if c.published:
                continue
            if left is None or c.waiting.cost <= left:
                taken.append(c)
                left = None if left is None else left - c.waiting.cost
        return taken

    def trim(self) -> None:
        """Drop the classifications no write can be spent on this tick (bounds memory)."""
        taken = {id(c) for c in self._selection()}
        for c in self.candidates:
            if id(c) not in taken:
                c.prepared = None

    def publish(self, report: TickReport) -> list[_Seen]:
        """Stage 2: publish the candidates by value while their writes fit."""
        chosen = self._selection()
        self._read_again([c for c in chosen if c.prepared is None], report)
        seen: list[_Seen] = []
        for c in chosen:
            p = c.prepared
            if p is None:
                continue  # its read failed: it stays waiting
            c.waiting = Waiting(c.waiting.light, p.verdict.quadrant.value, p.blocked)
            if not self.budget.fits(c.waiting.cost):
                continue  # classified again into a costlier quadrant: it waits
            handled = self._publish_one(c, report, p)
            if handled is not None:
                seen.append(handled)
        return seen

    def _read_again(self, todo: list[Candidate], report: TickReport) -> None:
        """Read and classify again the waiting PRs taken this tick (free conditional reads)."""
        groups: dict[tuple[str, str], list[Candidate]] = {}
        for c in todo:
            groups.setdefault((c.rc.name, c.policy_hash), []).append(c)
        for (_, policy_hash), group in groups.items():
            self.deps.check_stop()
            gathered = gather(self.deps, self.ctx, [c.pr for c in group], policy_hash, self.now)
            for c in group:
                g = gathered[c.pr.number]
                read = partial(
                    prepare_new, self.deps, self.ctx, c.rc, c.pr, policy_hash, self.now, g
                )
                c.prepared = one_pr(self.deps, report, c.pr, read)

    def close(self, report: TickReport, supervised: Sequence[str]) -> None:
        """Keep what waits for a later tick (in the budget) and say it in the report: new PRs
        left unread, and classified ones waiting for writes by quadrant."""
        keep = {
            ref: w
            for ref, w in self.budget.waiting.items()
            if ref.rpartition("#")[0] in supervised and ref.rpartition("#")[0] not in self.polled
        }  # a repo whose poll failed this tick keeps its waiting PRs
        waiting = [c for c in self.candidates if not c.published]
        keep.update((c.pr.ref, c.waiting) for c in waiting)
        self.budget.waiting = keep
        by_quadrant = Counter(c.waiting.quadrant for c in waiting)
        report.backlog_unread = self.unread
        report.backlog_waiting = {q.value: by_quadrant.get(q.value, 0) for q in Quadrant}
        report.backlog_left = self.unread + len(waiting)

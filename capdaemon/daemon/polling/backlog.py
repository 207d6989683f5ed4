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
from collections.abc import Callable, Collection, Iterable, Sequence
from functools import partial
from typing import TypeVar

from capdaemon.config import RepoConfig
from capdaemon.daemon.core.budget import WRITES_PER_NEW_PR, Waiting
from capdaemon.daemon.core.context import Tick
from capdaemon.daemon.core.failure import report_error
from capdaemon.daemon.polling.gather import gather, plan
from capdaemon.daemon.polling.publish import prepare_new, publish_new
from capdaemon.daemon.polling.tickpr import TickPR
from capdaemon.forge.errors import ForgeError, TickAbort
from capdaemon.forge.types import PRSummary
from capdaemon.model import Quadrant
from capdaemon.state import StateError

T = TypeVar("T")


def one_pr(t: Tick, pr: PRSummary, fn: Callable[[], T]) -> T | None:
    """Run one PR's step; a forge error or a bug with this PR is reported and gives None (it
    must not stall every other PR). Rate limits, stop requests and state errors end the tick."""
    try:
        return fn()
    except (TickAbort, StateError):
        raise
    except ForgeError as exc:
        report_error(t.report, "pr.gather_failed", f"{pr.ref}: {exc}", pr=pr.ref)
    except Exception as exc:
        t.deps.log.exception("pr.failed", pr=pr.ref)
        t.report.errors.append(f"{pr.ref}: {type(exc).__name__}: {exc}")
    return None


class Backlog:
    """One tick's new PRs: which to read, which to publish, and what is left."""

    def __init__(self, t: Tick) -> None:
        self.t = t
        self.budget = t.deps.work_budget
        self.candidates: list[TickPR] = []
        self.unread = 0  # new PRs left unread (beyond the read allowance, or a failed read)
        self.polled: set[str] = set()
        self.ample = True  # the writes cover every new PR: each is published as it is read

    def size_up(self, new: Iterable[PRSummary]) -> None:
        """Given every new PR listed this tick: do the writes left cover them all at the most
        a new PR costs? Then each is published as soon as it is classified (nothing is held,
        no order to keep); else they are published by value after every repo is polled."""
        writes = self.budget.writes
        self.ample = writes is None or writes >= WRITES_PER_NEW_PR * sum(1 for _ in new)

    def _add(self, item: TickPR, w: Waiting) -> TickPR:
        item.order, item.waiting = len(self.candidates), w
        self.candidates.append(item)
        return item

    def to_read(self, rc: RepoConfig, new: Sequence[TickPR]) -> list[TickPR]:
        """Of one repo's new PRs (oldest first), those to read and classify now: within the
        read allowance. One left waiting at the same light fingerprint is a candidate as is."""
        self.polled.add(rc.name)
        rate = self.t.deps.forge.rate_budget()  # as the answer to this repo's PR list said
        self.budget.replan(rate.get("remaining"), rate.get("limit"))
        out: list[TickPR] = []
        for item in new:
            light = plan(self.t, item).light
            known = self.budget.waiting.get(item.pr.ref)
            if known is not None and known.light == light:
                self._add(item, known)
            elif self.budget.take_read():
                out.append(item)
            else:
                self.unread += 1
        return out

    def offer(self, p: TickPR | None) -> list[TickPR]:
        """A new PR read and classified in stage 1 (None: its read failed or it moved); what it
        published right away (when the writes are ample)."""
        if p is None:
            self.unread += 1
            return []
        assert p.verdict is not None
        w = Waiting(p.light, p.verdict.quadrant.value, p.blocked)
        self._add(p, w)
        if not self.ample or not self.budget.fits(w.cost):
            return []
        handled = self._publish_one(p)
        return [] if handled is None else [handled]

    def _publish_one(self, c: TickPR) -> TickPR | None:
        """Publish one candidate and spend its writes (None: nothing was recorded for it, or
        it was recorded but its publication failed: it is a known PR from now on)."""
        t = self.t
        deps = t.deps
        deps.check_stop()
        handled = one_pr(t, c.pr, partial(publish_new, t, c))
        if handled is None:
            c.forget()
            if c.pr.ref not in deps.prs.records:
                return None  # nothing recorded: it waits
        c.published = True
        assert c.waiting is not None
        self.budget.spend(c.waiting.cost)
        deps.heartbeat()
        return handled

    def _selection(self) -> list[TickPR]:
        """The candidates the write allowance takes, by value (a candidate that does not fit
        is passed over for a cheaper one after it)."""
        left = self.budget.writes
        taken: list[TickPR] = []
        for c in sorted(self.candidates, key=lambda c: c.key):
            if c.published or c.waiting is None:
                continue
            if left is None or c.waiting.cost <= left:
                taken.append(c)
                left = None if left is None else left - c.waiting.cost
        return taken

    def drop(self, repos: Collection[str]) -> None:
        """`repos` were served apart inside this tick (their new PRs with them): their
        candidates are not published here, and what that work left waiting is kept."""
        gone = set(repos)
        for c in self.candidates:
            if c.rc.name in gone and not c.published:
                c.forget()
                c.waiting = None  # neither selected nor kept waiting by this tick
        self.polled -= gone

    def trim(self) -> None:
        """Drop the classifications no write can be spent on this tick (bounds memory)."""
        taken = {id(c) for c in self._selection()}
        for c in self.candidates:
            if id(c) not in taken and not c.published:
                c.forget()

    def publish(self) -> list[TickPR]:
        """Stage 2: publish the candidates by value while their writes fit."""
        chosen = self._selection()
        self._read_again([c for c in chosen if c.verdict is None])
        seen: list[TickPR] = []
        for c in chosen:
            if c.verdict is None:
                continue  # its read failed: it stays waiting
            assert c.waiting is not None
            c.waiting = Waiting(c.waiting.light, c.verdict.quadrant.value, c.blocked)
            if not self.budget.fits(c.waiting.cost):
                continue  # classified again into a costlier quadrant: it waits
            handled = self._publish_one(c)
            if handled is not None:
                seen.append(handled)
        return seen

    def _read_again(self, todo: list[TickPR]) -> None:
        """Read and classify again the waiting PRs taken this tick (free conditional reads)."""
        groups: dict[tuple[str, str], list[TickPR]] = {}
        for c in todo:
            groups.setdefault((c.rc.name, c.policy_hash), []).append(c)
        t = self.t
        for group in groups.values():
            t.check_stop()
            gather(t, group)
            for c in group:
                if one_pr(t, c.pr, partial(prepare_new, t, c)) is None:
                    c.forget()

    def close(self, supervised: Sequence[str]) -> None:
        """Keep what waits for a later tick (in the budget) and say it in the report: new PRs
        left unread, and classified ones waiting for writes by quadrant."""
        report = self.t.report
        keep = {
            ref: w
            for ref, w in self.budget.waiting.items()
            if ref.rpartition("#")[0] in supervised and ref.rpartition("#")[0] not in self.polled
        }  # a repo whose poll failed this tick keeps its waiting PRs
        waiting = [c for c in self.candidates if not c.published and c.waiting is not None]
        keep.update((c.pr.ref, c.waiting) for c in waiting if c.waiting is not None)
        self.budget.waiting = keep
        by_quadrant = Counter(c.waiting.quadrant for c in waiting if c.waiting is not None)
        report.backlog_unread = self.unread
        report.backlog_waiting = {q.value: by_quadrant.get(q.value, 0) for q in Quadrant}
        report.backlog_left = self.unread + len(waiting)

"""One PR in one tick (TickPR): what the tick read about it, decided, and published."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from capdaemon.config import RepoConfig
from capdaemon.daemon.core.budget import Waiting
from capdaemon.daemon.polling.tasks import CapabilityVerdict
from capdaemon.forge.types import PRSummary
from capdaemon.model import CheckRun, PRSnapshot, Quadrant, Verdict
from capdaemon.stores.botstate import PRRecord


@dataclass(eq=False)
class TickPR:
    """One open PR of this tick, from the list entry to the merge call: the only object that
    describes it while the tick runs.

    Where it is: its repo config, list entry and the policy hash it is read under, and the
    store's records, where its current record is read (records are frozen: a change replaces
    the PR's record there, so the item never holds a stale copy once the PR is recorded).
    What the tick read (gather phase, capdaemon.daemon.polling.gather): the light fingerprint
    and capability state, why nothing needs reading (`settled`), else its check runs and
    snapshot, or the error that stopped the reads. What it decided (publish): the record, the
    Verdict and capability verdict when it was classified this tick (None: its inputs did not
    change; the record says the rest). For a new PR the backlog holds (backlog.Backlog): its
    discovery order, its `waiting` entry and whether it is `published` yet.
    """

    rc: RepoConfig
    pr: PRSummary
    policy_hash: str
    records: Mapping[str, PRRecord]  # the store's (PRStore.records), read only here
    # what the tick read
    light: str = ""
    cap: str = ""
    settled: str | None = None  # why nothing needs reading (then checks/snapshot stay None)
    checks: list[CheckRun] | None = None
    snapshot: PRSnapshot | None = None
    error: BaseException | None = None
    # what it decided
    # set once decided on; a new PR's record stays aside here until it is published
    record: PRRecord | None = None
    verdict: Verdict | None = None
    capv: CapabilityVerdict | None = None
    # a new PR in the backlog
    order: int = 0  # discovery order: repos as configured, each repo's PRs oldest first
    waiting: Waiting | None = None
    published: bool = False

    @property
    def rec(self) -> PRRecord:
        """The PR's current record (once the PR is decided on): the store's, else the one
        built aside for a new PR."""
        rec = self.current
        if rec is None:
            raise RuntimeError(f"{self.pr.ref}: no record yet in this tick")
        return rec

    @property
    def current(self) -> PRRecord | None:
        """The PR's current record once it is decided on (None before)."""
        if self.record is None:
            return None
        return self.records.get(self.pr.ref, self.record)

    @property
    def snap(self) -> PRSnapshot:
        """The snapshot this tick classified the PR on (set by the classification)."""
        if self.snapshot is None:
            raise RuntimeError(f"{self.pr.ref}: not classified in this tick")
        return self.snapshot

    @property
    def quadrant(self) -> Quadrant:
        """This tick's quadrant, else the recorded one (D when none is recorded: fail closed)."""
        if self.verdict is not None:
            return self.verdict.quadrant
        rec = self.current
        return Quadrant(rec.quadrant) if rec is not None and rec.quadrant else Quadrant.D

    @property
    def blocked(self) -> bool:
        """A P0 finding or a scope violation fails L1.C3 whatever the quadrant."""
        rec = self.current
        return rec is not None and bool(rec.blocking)

    @property
    def key(self) -> tuple[int, int]:
        """Publication order in the backlog: rank, then discovery."""
        return (self.waiting.rank if self.waiting is not None else 0, self.order)

    def start_reads(self) -> None:
        """Forget what an earlier read found (the gather phase reads it again)."""
        self.settled, self.checks, self.snapshot, self.error = None, None, None, None

    def forget(self) -> None:
        """Drop the reads and the classification (a new PR left waiting: bounds memory)."""
        self.start_reads()
        self.record, self.verdict, self.capv = None, None, None

    def done(self) -> None:
        """Decided and published: keep the record and verdict, drop the reads (memory)."""
        self.checks, self.snapshot, self.capv = None, None, None

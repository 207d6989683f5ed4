"""Act in the tick that sees it: re-read a PR whose mergeability GitHub is still computing.

GitHub answers ``mergeable: null`` (GraphQL ``UNKNOWN``) while a background job computes it,
and documents: "After giving the job time to complete, resubmit the request". It names no
figure; clients commonly wait a second or two and lengthen the wait each time. So a PR ready
but for an unknown mergeability is read again at once, then RETRY_AFTER seconds after the
tick started (when it listed the PR: its first null read), at least MIN_GAP apart — 1, 2,
3.5, 5.5, 8 s: a job of a few seconds is seen within a second or two of its end, the time the
tick spent classifying and publishing counts, and one that never ends costs six reads —
within the same tick, instead of waiting a whole tick. The waits are bounded (per tick, and
by the forge's wait budget, where they are spent like any other wait), and one wait serves
every PR: GitHub computes them all in parallel, so time already waited for one PR counts for
the next. (Handing the re-reads to later targeted ticks instead, so that no tick holds the
lock while it waits, was measured slower: bench/bench_reaction.py, README "Benchmarks".)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from capdaemon.forge.port import ForgePort
from capdaemon.forge.types import PRStatus

# seconds after the tick started (it listed the PR then) before each further re-read
RETRY_AFTER = (1.0, 2.0, 3.5, 5.5, 8.0)
MIN_GAP = 1.0  # seconds between two reads of one PR at least
# at most this long waited for mergeability in one tick, and this many re-reads after waits
TICK_WAIT_LIMIT = 10.0
TICK_REREAD_LIMIT = 20


@dataclass
class MergeabilityWaits:
    """One tick's re-reads of PRs whose mergeability was unknown (a new one every tick)."""

    monotonic: Callable[[], float] = time.monotonic
    started: float = field(default_factory=time.monotonic)  # the tick's start: its list read
    waited: float = 0.0  # seconds this tick has waited for mergeability
    rereads: int = 0  # re-reads after a wait, this tick
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def settle(self, forge: ForgePort, repo: str, number: int, head_sha: str) -> PRStatus:
        """The PR read again; while its mergeability is still null at `head_sha`, read again
        after the next wait of RETRY_AFTER that the tick's bounds allow. The last read is
        returned (still null: the PR waits for a later tick, as before)."""
        status = forge.pull_status(repo, number)
        last = self.monotonic()
        for after in RETRY_AFTER:
            if status.mergeable is not None or status.head_sha != head_sha:
                break
            if not self._wait_until(forge, max(self.started + after, last + MIN_GAP)):
                break
            status = forge.pull_status(repo, number)
            last = self.monotonic()
        return status

    def _wait_until(self, forge: ForgePort, deadline: float) -> bool:
        """Wait until `deadline` (monotonic) if the bounds allow; False when they do not."""
        with self._lock:
            if self.rereads >= TICK_REREAD_LIMIT:
                return False
            need = max(0.0, deadline - self.monotonic())
            if self.waited + need > TICK_WAIT_LIMIT:
                return False
            if need > 0 and not forge.pause(need):
                return False
            self.waited += need
            self.rereads += 1
            return True

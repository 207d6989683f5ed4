"""Act soon after it is ready: re-read a PR whose mergeability GitHub is still computing.

GitHub answers ``mergeable: null`` (GraphQL ``UNKNOWN``) while a background job computes it,
and documents: "After giving the job time to complete, resubmit the request". It names no
figure; clients commonly wait a second or two and lengthen the wait each time. So a PR ready
but for an unknown mergeability is read again at once, then RETRY_AFTER seconds after that
first null read (1, 2, 3.5, 5.5, 8 s: a job of a few seconds is seen within a second or two
of its end, and one that never ends costs six reads).

Where the re-reads happen:
- a tick alone (`tick --once`, `run` without the change detector) waits for them within the
  tick. The waits are bounded (per tick, and by the forge's wait budget, where they are spent
  like any other wait), and one wait serves every PR: GitHub computes them all in parallel,
  so time already waited for one PR counts for the next;
- under `run` with the change detector, no tick waits: the PR is booked in the daemon's
  RecheckBook and the detector runs a targeted tick for its repo when the next re-read is due.
  The tick lock is free meanwhile, so one PR GitHub is still computing never holds back a
  change in another repo, nor the full tick.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from capdaemon.forge.port import ForgePort
from capdaemon.forge.types import PRStatus

# seconds after the first null read before each further re-read
RETRY_AFTER = (1.0, 2.0, 3.5, 5.5, 8.0)
# at most this long waited for mergeability in one tick, and this many re-reads after waits
TICK_WAIT_LIMIT = 10.0
TICK_REREAD_LIMIT = 20
# a booked re-read nobody took up (the PR was not reached again) is forgotten after this long
FORGET_AFTER = 4 * RETRY_AFTER[-1]

PRKey = tuple[str, int, str]  # (repo, number, head sha)


@dataclass
class _Booked:
    first: float  # monotonic time of the first null read
    attempts: int  # re-reads booked so far
    due: float  # when the next re-read is due (inf: handed to a tick, not read yet)


@dataclass
class RecheckBook:
    """The daemon's re-reads of PRs whose mergeability was unknown, across targeted ticks
    (`capdaemon run` with the change detector): which repo needs a tick, and when."""

    monotonic: Callable[[], float] = time.monotonic
    _booked: dict[PRKey, _Booked] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def still_unknown(self, key: PRKey) -> None:
        """`key` was read null again: book its next re-read (none after the last of
        RETRY_AFTER: it waits for the full tick, as a tick alone does)."""
        with self._lock:
            now = self.monotonic()
            b = self._booked.get(key)
            if b is None:
                b = self._booked[key] = _Booked(first=now, attempts=0, due=math.inf)
            if b.attempts >= len(RETRY_AFTER):
                del self._booked[key]
                return
            b.due = b.first + RETRY_AFTER[b.attempts]
            b.attempts += 1

    def known(self, key: PRKey) -> None:
        """`key` was read with a mergeability (or another head): nothing more to re-read."""
        with self._lock:
            self._booked.pop(key, None)

    def due(self) -> set[str]:
        """The repos with a re-read due now; each is handed out once (until booked again)."""
        with self._lock:
            now = self.monotonic()
            out: set[str] = set()
            for key, b in list(self._booked.items()):
                if now - b.first > FORGET_AFTER:
                    del self._booked[key]
                elif b.due <= now:
                    b.due = math.inf
                    out.add(key[0])
            return out

    def next_due(self) -> float:
        """When the next re-read is due (monotonic; inf when none is booked)."""
        with self._lock:
            return min((b.due for b in self._booked.values()), default=math.inf)

    def __len__(self) -> int:
        with self._lock:
            return len(self._booked)


@dataclass
class MergeabilityWaits:
    """One tick's re-reads of PRs whose mergeability was unknown (a new one every tick).
    With a `book` (the change detector runs) the tick never waits: it books the re-read."""

    monotonic: Callable[[], float] = time.monotonic
    book: RecheckBook | None = None
    waited: float = 0.0  # seconds this tick has waited for mergeability
    rereads: int = 0  # re-reads after a wait, this tick
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def seen(self, repo: str, number: int, head_sha: str, mergeable: bool | None) -> None:
        """A read of the PR outside `settle` (the tick's page): a known mergeability ends
        its booked re-reads."""
        if self.book is not None and mergeable is not None:
            self.book.known((repo, number, head_sha))

    def settle(self, forge: ForgePort, repo: str, number: int, head_sha: str) -> PRStatus:
        """The PR read again; while its mergeability is still null at `head_sha`, read again
        after the next wait of RETRY_AFTER that the tick's bounds allow (or, with a book, the
        re-read booked for a later targeted tick). The last read is returned (still null: the
        PR waits, as before)."""
        status = forge.pull_status(repo, number)
        if self.book is not None:
            key = (repo, number, head_sha)
            if status.mergeable is None and status.head_sha == head_sha:
                self.book.still_unknown(key)
            else:
                self.book.known(key)
            return status
        first = self.monotonic()
        for after in RETRY_AFTER:
            if status.mergeable is not None or status.head_sha != head_sha:
                break
            if not self._wait_until(forge, first + after):
                break
            status = forge.pull_status(repo, number)
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

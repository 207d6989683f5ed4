"""Progress of a long tick: one human line every few seconds on a terminal ("classified 120 of
1,000 PRs, 14 issues, 3 merges"), a `tick.progress` event otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from capdaemon.daemon.core.tickdata import TickReport

PROGRESS_SECONDS = 5.0


class Progress:
    """Rate-limited progress reports for one tick; silent for ticks shorter than `every`."""

    def __init__(
        self,
        log: Any,
        *,
        every: float = PROGRESS_SECONDS,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.every = every
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self._last = clock()

    @property
    def human(self) -> bool:
        """True on a terminal: plain lines instead of events."""
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def step(self, repo: str, done: int, total: int, report: TickReport) -> bool:
        """Report `done` of `total` PRs of `repo` (with the tick's issues and merges so far)
        when `every` seconds have passed since the last report; True when it reported."""
        now = self.clock()
        if now - self._last < self.every:
            return False
        self._last = now
        issues, merges = len(report.issues), len(report.merged)
        if self.human:
            print(
                f"{repo}: classified {done:,} of {total:,} PRs, "
                f"{issues:,} issue{'s' * (issues != 1)}, {merges:,} merge{'s' * (merges != 1)}",
                file=self.stream,
                flush=True,
            )
        else:
            self.log.info(
                "tick.progress", repo=repo, done=done, total=total, issues=issues, merges=merges
            )
        return True

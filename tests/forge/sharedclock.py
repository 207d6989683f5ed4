"""A forge clock and sleeper shared with the sandbox: a wait moves GitHub's windows on by as
much (the governor's tests)."""

from __future__ import annotations

import threading

from ghsandbox import Sandbox


class SharedClock:
    """The forge's clock and sleeper: a wait moves GitHub's windows on by as much."""

    def __init__(self, sb: Sandbox) -> None:
        self.t = 1000.0
        self.sb = sb
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.t

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept.append(seconds)
            self.t += seconds
        self.sb.advance_clock(seconds)

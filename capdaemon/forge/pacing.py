"""Pacing of content-creating writes within GitHub's secondary limits (80 a minute, 500 an hour).

Issues, comments and pull requests count; a request over either limit is refused with a 403
and repeated violations can get an integration banned, so the daemon waits (within the tick's
wait budget) instead of sending a request that would be refused.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable

CONTENT_PER_MINUTE = 80
CONTENT_PER_HOUR = 500
_CONTENT_PATH = re.compile(r"/repos/[^/]+/[^/]+/(?:issues|pulls|issues/\d+/comments)/?$")


def creates_content(method: str, path: str) -> bool:
    """Is this request content-creating (a new issue, comment or pull request)?"""
    return method == "POST" and bool(_CONTENT_PATH.search(path))


class ContentPacer:
    """Sliding one-minute and one-hour windows of content-creating requests."""

    def __init__(
        self,
        per_minute: int = CONTENT_PER_MINUTE,
        per_hour: int = CONTENT_PER_HOUR,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_minute = per_minute
        self.per_hour = per_hour
        self.now = now
        self._sent: deque[float] = deque()
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Seconds to wait before the next content-creating request stays within both limits."""
        with self._lock:
            now = self.now()
            while self._sent and now - self._sent[0] >= 3600:
                self._sent.popleft()
            waits = [0.0]
            if len(self._sent) >= self.per_hour:
                waits.append(self._sent[-self.per_hour] + 3600 - now)
            recent = [t for t in self._sent if now - t < 60]
            if len(recent) >= self.per_minute:
                waits.append(recent[-self.per_minute] + 60 - now)
            return max(waits)

    def record(self) -> None:
        """A content-creating request is being sent now."""
        with self._lock:
            self._sent.append(self.now())

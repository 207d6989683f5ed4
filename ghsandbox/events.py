"""The repository events feed GitHub serves (``GET /repos/{o}/{r}/events``), kept in memory.

GitHub documents the feed as "not built to serve real-time use cases" (30 s to 6 h of latency),
capped at 300 events, without check runs or reactions. The sandbox records pushes (branch
moves seen by ``after_push``), PRs opened/closed/reopened, issues opened/closed/reopened and
issue comments; fidelity ``events_lag_seconds`` holds each event back that long, and
``events_drop_every`` (N > 0) silently drops every Nth event (the feed is not guaranteed).
Events live in memory only: a restarted sandbox starts with an empty feed and misses the
first push to each repository (it only learns the branch tips then), as a client of a feed
that is not guaranteed must expect anyway.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

CAP = 300  # GitHub keeps at most this many events per feed
POLL_INTERVAL = 60  # X-Poll-Interval GitHub sends with the feed (seconds)
ZERO = "0" * 40


@dataclass(frozen=True)
class FeedEvent:
    """One recorded event: the facts its rendering needs."""

    id: int
    type: str
    actor: str
    full: str
    payload: dict[str, Any]  # raw facts (numbers, refs, shas), rendered per request
    created_at: str
    visible_at: float  # window time from which the feed shows it


@dataclass
class EventFeed:
    """Per-repository event lists (newest last), capped at CAP."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _events: dict[str, deque[FeedEvent]] = field(default_factory=dict)
    _heads: dict[str, dict[str, str]] = field(default_factory=dict)
    _next_id: int = 22_000_000_001
    _seen: int = 0

    def record(
        self,
        full: str,
        kind: str,
        actor: str,
        payload: dict[str, Any],
        created_at: str,
        now: float,
        cfg: dict[str, float],
    ) -> None:
        """Add one event (unless the drop setting swallows it)."""
        with self._lock:
            self._seen += 1
            drop = int(cfg.get("events_drop_every", 0))
            if drop > 0 and self._seen % drop == 0:
                return
            ev = FeedEvent(
                self._next_id,
                kind,
                actor,
                full,
                payload,
                created_at,
                now + cfg.get("events_lag_seconds", 0.0),
            )
            self._next_id += 1
            self._events.setdefault(full.lower(), deque(maxlen=CAP)).append(ev)

    def note_heads(
        self,
        full: str,
        heads: dict[str, str],
        actor: str,
        created_at: str,
        now: float,
        cfg: dict[str, float],
    ) -> None:
        """Record a PushEvent for each branch whose tip moved since the last call (the first
        call for a repository only remembers its branches)."""
        with self._lock:
            before = self._heads.get(full.lower())
            self._heads[full.lower()] = dict(heads)
        if before is None:
            return
        for ref, sha in sorted(heads.items()):
            old = before.get(ref)
            if old != sha:
                push = {"ref": ref, "head": sha, "before": old or ZERO}
                self.record(full, "PushEvent", actor, push, created_at, now, cfg)

    def visible(self, full: str, now: float) -> list[FeedEvent]:
        """What the feed shows at window time `now`, newest first."""
        with self._lock:
            events = list(self._events.get(full.lower(), ()))
        return [e for e in reversed(events) if e.visible_at <= now]

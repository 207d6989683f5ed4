"""GitHub limits the sandbox imitates: body sizes, secondary rate limits, lazy mergeability."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

# Seed key ``fidelity``: each value 0 turns that behaviour off.
FIDELITY_DEFAULTS: dict[str, int | float] = {
    "mergeable_reads": 1,  # PR reads answering mergeable: null after it opens or its base moves
    "mergeable_seconds": 0.0,  # ... or for this long, whichever lasts longer
    "max_concurrent": 100,  # requests in flight per identity
    "points_per_minute": 900,  # per identity and REST endpoint (GET 1 point, writes 5)
    "content_per_minute": 80,  # content-creating requests per identity
    "content_per_hour": 500,
    # 1: a conditional GET still answered 304 once the primary budget is spent (GitHub does not
    # document which it does; off, such a request is refused like any other)
    "exhausted_conditional_304": 0,
    "events_lag_seconds": 0.0,  # the events feed shows an event only this long after it
    "events_drop_every": 0,  # N > 0: the events feed silently loses every Nth event
}

# Content-creating operations (issues, comments, pull requests), as route templates.
CONTENT_CREATING = frozenset(
    {
        "POST /repos/{owner}/{repo}/issues",
        "POST /repos/{owner}/{repo}/issues/{number}/comments",
        "POST /repos/{owner}/{repo}/pulls",
    }
)

_ISSUE = {"title": 256, "body": 65536}
_LABEL = {"name": 50, "description": 100}
_CHECK = {"output.summary": 65535, "output.text": 65535}
# Longest accepted value per request field (GitHub answers 422 "... is too long").
SIZE_LIMITS: dict[str, tuple[str, dict[str, int]]] = {
    "POST /repos/{owner}/{repo}/issues": ("Issue", _ISSUE),
    "PATCH /repos/{owner}/{repo}/issues/{number}": ("Issue", _ISSUE),
    "POST /repos/{owner}/{repo}/pulls": ("PullRequest", _ISSUE),
    "PATCH /repos/{owner}/{repo}/pulls/{number}": ("PullRequest", _ISSUE),
    "POST /repos/{owner}/{repo}/issues/{number}/comments": ("IssueComment", {"body": 65536}),
    "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}": (
        "IssueComment",
        {"body": 65536},
    ),
    "POST /repos/{owner}/{repo}/labels": ("Label", _LABEL),
    "PATCH /repos/{owner}/{repo}/labels/{name}": ("Label", {"new_name": 50, "description": 100}),
    "POST /repos/{owner}/{repo}/statuses/{sha}": ("Status", {"description": 140, "context": 255}),
    "POST /repos/{owner}/{repo}/check-runs": ("CheckRun", _CHECK),
    "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}": ("CheckRun", _CHECK),
}


def settings(data: dict[str, Any]) -> dict[str, float]:
    """The effective fidelity settings of a state document (defaults filled in)."""
    own = data.get("fidelity") or {}
    return {k: float(own.get(k, v)) for k, v in FIDELITY_DEFAULTS.items()}


def oversized(endpoint: str, body: Any) -> list[dict[str, str]]:
    """The 422 error entries for fields of ``body`` longer than GitHub accepts (empty: fine)."""
    spec = SIZE_LIMITS.get(endpoint)
    if spec is None or not isinstance(body, dict):
        return []
    resource, limits = spec
    for dotted, limit in limits.items():
        value: Any = body
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, str) and len(value) > limit:
            name = dotted.rsplit(".", 1)[-1]
            return [
                {
                    "resource": resource,
                    "code": "custom",
                    "field": dotted,
                    "message": f"{name} is too long (maximum is {limit} characters)",
                }
            ]
    return []


@dataclass
class Refusal:
    """Why a request was refused by a secondary rate limit, and when to come back."""

    reason: str
    retry_after: int


class SecondaryLimits:
    """GitHub's secondary rate limits per identity: concurrency, endpoint points, content writes.

    Windows slide over ``Clock.window_time`` (supplied by the caller): real time, so a frozen
    sandbox clock does not freeze them, plus ``advance_clock`` calls, so a test can skip ahead.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inflight: dict[str, int] = {}
        self._points: dict[tuple[str, str], deque[tuple[float, int]]] = {}
        self._content: dict[str, deque[float]] = {}

    def enter(self, key: str, cfg: dict[str, float]) -> Refusal | None:
        """Start a request of ``key``; a Refusal when too many are in flight (then no exit)."""
        with self._lock:
            n = self._inflight.get(key, 0) + 1
            if cfg["max_concurrent"] > 0 and n > cfg["max_concurrent"]:
                return Refusal("concurrent", 1)
            self._inflight[key] = n
            return None

    def exit(self, key: str) -> None:
        """A request started with :meth:`enter` has finished."""
        with self._lock:
            n = self._inflight.get(key, 1) - 1
            if n > 0:
                self._inflight[key] = n
            else:
                self._inflight.pop(key, None)

    def charge(
        self, key: str, endpoint: str, method: str, now: float, cfg: dict[str, float]
    ) -> Refusal | None:
        """Charge one request's points (and a content creation); a Refusal when over a limit."""
        cost = 1 if method in ("GET", "HEAD", "OPTIONS") else 5
        with self._lock:
            per_minute = cfg["points_per_minute"]
            if per_minute > 0:
                hist = self._points.setdefault((key, endpoint), deque())
                while hist and now - hist[0][0] >= 60:
                    hist.popleft()
                spent = sum(c for _, c in hist)
                if spent + cost > per_minute:
                    return Refusal("points", _wait(hist[0][0] + 60 - now))
                hist.append((now, cost))
            if endpoint in CONTENT_CREATING:
                made = self._content.setdefault(key, deque())
                while made and now - made[0] >= 3600:
                    made.popleft()
                last_minute = [t for t in made if now - t < 60]
                if cfg["content_per_minute"] > 0 and len(last_minute) >= cfg["content_per_minute"]:
                    return Refusal("content", _wait(last_minute[0] + 60 - now))
                if cfg["content_per_hour"] > 0 and len(made) >= cfg["content_per_hour"]:
                    return Refusal("content", _wait(made[0] + 3600 - now))
                made.append(now)
            return None

    def reset(self) -> None:
        """Forget all windows (in-flight counts stay: those requests are still running)."""
        with self._lock:
            self._points.clear()
            self._content.clear()


def _wait(seconds: float) -> int:
    return max(1, int(seconds + 0.999))


class MergeabilityClock:
    """GitHub computes ``mergeable`` in the background: after a PR opens or its base or head
    moves, the first reads (or the first seconds) answer ``null`` / ``"unknown"``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, int], tuple[tuple[str, str], int, float]] = {}

    def pending(
        self,
        full: str,
        number: int,
        shas: tuple[str, str],
        now: float,
        cfg: dict[str, float],
        count: bool = True,
    ) -> bool:
        """Count one read of PR ``number`` at (base sha, head sha); True while still computing.

        ``count=False`` looks without reading: a write's answer (the POST that opens a PR, the
        PATCH that moves its base) shows the state but leaves the null reads to the next GETs.
        """
        with self._lock:
            key = (full.lower(), number)
            seen = self._seen.get(key)
            if seen is None or seen[0] != shas:
                seen = (shas, 0, now)
            if not count:
                self._seen[key] = seen
                return seen[1] < cfg["mergeable_reads"] or now - seen[2] < cfg["mergeable_seconds"]
            reads = seen[1] + 1
            self._seen[key] = (shas, reads, seen[2])
            return reads <= cfg["mergeable_reads"] or now - seen[2] < cfg["mergeable_seconds"]

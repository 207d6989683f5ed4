"""GitHub limits the sandbox imitates: body sizes, secondary rate limits, lazy mergeability."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from .errors import SandboxApiError
from .http import SECONDARY_DOC, SECONDARY_MESSAGE

# Seed key ``fidelity``: each value 0 turns that behaviour off.
FIDELITY_DEFAULTS: dict[str, int | float] = {
    "mergeable_reads": 1,  # PR reads answering mergeable: null after it opens or its base moves
    "mergeable_seconds": 0.0,  # ... or for this long, whichever lasts longer
    "max_concurrent": 100,  # requests in flight per identity
    "points_per_minute": 900,  # per identity and REST endpoint (GET 1 point, writes 5)
    # GitHub's secondary limit as one budget: REST points a minute per identity across every
    # REST endpoint (GET/HEAD/OPTIONS 1 point, other methods 5; conditional GETs counted)
    "rest_points_per_minute": 900,
    "graphql_points_per_minute": 2000,  # per identity: a query 1 point, a mutation 5
    "secondary_status": 403,  # the status of a secondary-limit refusal: 403 or 429
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


def points_of(method: str) -> int:
    """A REST request's points for the secondary limit: GET/HEAD/OPTIONS 1, other methods 5."""
    return 1 if method in ("GET", "HEAD", "OPTIONS") else 5


class SecondaryLimits:
    """GitHub's secondary rate limits per identity: concurrency, points (per REST endpoint, and
    one budget across all REST endpoints; GraphQL's apart), content writes.

    Windows slide over ``Clock.window_time`` (supplied by the caller): real time, so a frozen
    sandbox clock does not freeze them, plus ``advance_clock`` calls, so a test can skip ahead.
    What a test checks is kept too (:meth:`stats`): the most requests in flight at once, the
    most points in any minute, and the refusals, per identity.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inflight: dict[str, int] = {}
        self._points: dict[tuple[str, str], deque[tuple[float, int]]] = {}
        self._content: dict[str, deque[float]] = {}
        self._peak: dict[str, int] = {}
        self._refused: dict[str, dict[str, int]] = {}
        self._best: dict[tuple[str, str], int] = {}  # (identity, "rest"|"graphql") → max/minute
        # identity → REST points in each whole minute since its first request (a series)
        self._minutes: dict[str, tuple[float, dict[int, int]]] = {}

    def enter(self, key: str, cfg: dict[str, float]) -> Refusal | None:
        """Start a request of ``key``; a Refusal when too many are in flight (then no exit)."""
        with self._lock:
            n = self._inflight.get(key, 0) + 1
            if cfg["max_concurrent"] > 0 and n > cfg["max_concurrent"]:
                return self._refuse(key, Refusal("concurrent", 1))
            self._inflight[key] = n
            self._peak[key] = max(self._peak.get(key, 0), n)
            return None

    def _refuse(self, key: str, refusal: Refusal) -> Refusal:
        """Count a refusal (under the lock) and return it."""
        mine = self._refused.setdefault(key, {})
        mine[refusal.reason] = mine.get(refusal.reason, 0) + 1
        return refusal

    def _over(self, key: str, scope: str, cost: int, per_minute: float, now: float) -> int | None:
        """Seconds until ``cost`` more points fit the one-minute window ``(key, scope)``, or
        None when they fit now (under the lock; old entries are dropped)."""
        hist = self._points.setdefault((key, scope), deque())
        while hist and now - hist[0][0] >= 60:
            hist.popleft()
        if per_minute > 0 and sum(c for _, c in hist) + cost > per_minute:
            return _wait(hist[0][0] + 60 - now)
        return None

    def _add(self, key: str, scope: str, cost: int, now: float) -> None:
        """Charge ``cost`` points to the window ``(key, scope)`` (under the lock, after _over)."""
        hist = self._points[(key, scope)]
        hist.append((now, cost))
        if scope in ("rest", "graphql"):
            best = (key, scope)
            self._best[best] = max(self._best.get(best, 0), sum(c for _, c in hist))
        if scope == "rest":
            first, series = self._minutes.setdefault(key, (now, {}))
            minute = int((now - first) // 60)
            series[minute] = series.get(minute, 0) + cost

    def charge_graphql(
        self, key: str, mutation: bool, now: float, cfg: dict[str, float]
    ) -> Refusal | None:
        """Charge one GraphQL request's secondary points (a query 1, a mutation 5)."""
        with self._lock:
            cost = 5 if mutation else 1
            wait = self._over(key, "graphql", cost, cfg["graphql_points_per_minute"], now)
            if wait is not None:
                return self._refuse(key, Refusal("points", wait))
            self._add(key, "graphql", cost, now)
            return None

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per identity: ``peak_inflight``, ``rest_points_max_minute``,
        ``graphql_points_max_minute``, ``rest_points_by_minute`` (each whole minute from the
        first request, idle ones 0) and ``refused`` (reason → count), since the last reset."""
        with self._lock:
            keys = set(self._peak) | set(self._refused) | {k for k, _ in self._best}
            return {
                key: {
                    "peak_inflight": self._peak.get(key, 0),
                    "rest_points_max_minute": self._best.get((key, "rest"), 0),
                    "graphql_points_max_minute": self._best.get((key, "graphql"), 0),
                    "rest_points_by_minute": _series(self._minutes.get(key)),
                    "refused": dict(self._refused.get(key, {})),
                }
                for key in keys
            }

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
        cost = points_of(method)
        with self._lock:
            scopes = [("rest", cfg["rest_points_per_minute"])]
            if cfg["points_per_minute"] > 0:
                scopes.append((f"endpoint {endpoint}", cfg["points_per_minute"]))
            waits = [w for s, n in scopes if (w := self._over(key, s, cost, n, now)) is not None]
            if waits:
                return self._refuse(key, Refusal("points", max(waits)))
            for scope, _ in scopes:
                self._add(key, scope, cost, now)
            if endpoint in CONTENT_CREATING:
                made = self._content.setdefault(key, deque())
                while made and now - made[0] >= 3600:
                    made.popleft()
                last_minute = [t for t in made if now - t < 60]
                if cfg["content_per_minute"] > 0 and len(last_minute) >= cfg["content_per_minute"]:
                    return self._refuse(key, Refusal("content", _wait(last_minute[0] + 60 - now)))
                if cfg["content_per_hour"] > 0 and len(made) >= cfg["content_per_hour"]:
                    return self._refuse(key, Refusal("content", _wait(made[0] + 3600 - now)))
                made.append(now)
            return None

    def reset(self) -> None:
        """Forget all windows and figures (in-flight counts stay: those requests are still
        running)."""
        with self._lock:
            self._points.clear()
            self._content.clear()
        self.reset_figures()

    def reset_figures(self) -> None:
        """Forget what :meth:`stats` says (the windows stay)."""
        with self._lock:
            self._peak.clear()
            self._refused.clear()
            self._best.clear()
            self._minutes.clear()


def _series(kept: tuple[float, dict[int, int]] | None) -> list[int]:
    """Points in each whole minute, idle minutes 0."""
    if not kept:
        return []
    series = kept[1]
    return [series.get(m, 0) for m in range(max(series) + 1)] if series else []


def _wait(seconds: float) -> int:
    return max(1, int(seconds + 0.999))


def secondary_refusal(
    refusal: Refusal, headers: dict[str, str], cfg: dict[str, float], rid: str
) -> SandboxApiError:
    """GitHub's answer to a request over a secondary limit: 403 (or 429, ``secondary_status``),
    ``Retry-After`` in seconds, the documented message naming the request id."""
    headers["Retry-After"] = str(refusal.retry_after)
    status = 429 if int(cfg.get("secondary_status", 403)) == 429 else 403
    message = (
        f"{SECONDARY_MESSAGE} If you reach out to GitHub Support for help, please include "
        f"the request ID {rid}."
    )
    return SandboxApiError(status, message, doc=SECONDARY_DOC)


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

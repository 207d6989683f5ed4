"""The one HTTP choke point under PyGithub: ETag cache, retries, pacing, rate-limit waits (the
limits themselves are read in forge.ratelimit)."""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import requests
import structlog
import tenacity
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict

from capdaemon.forge.appclock import JwtMinter, observed_offset, skew_retry_auth
from capdaemon.forge.errors import RateLimited, Transient
from capdaemon.forge.etagcache import (
    CacheEntry,
    CacheKey,
    EtagCache,
    auth_identity,
    content_addressed,
)
from capdaemon.forge.governor import Governor
from capdaemon.forge.pacing import ContentPacer, creates_content
from capdaemon.forge.ratelimit import (
    ONE_BUDGET,
    RATE_HEADERS,
    SECONDARY_MIN_WAIT,
    RateBook,
    RateState,
    Router,
    WaitBudget,
    over_wait_budget,
    refusal_wait,
)
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.wirestats import TransportStats

log = structlog.get_logger(__name__)

Clock = Callable[[], datetime]
Sleeper = Callable[[float], None]

_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"})
# POSTs that are safe to repeat: token minting, content-addressed git objects, commit statuses.
_SAFE_POST = re.compile(
    r"/(app/installations/\d+/access_tokens|git/(blobs|trees|commits)|statuses/[0-9a-f]+)$"
)
_MINT = re.compile(r"/app/installations/\d+/access_tokens$")
# GraphQL queries (the forge sends no mutations): safe to repeat, not paced like writes, with
# a budget of their own (X-RateLimit-Resource: graphql) that an exhausted REST budget does not stop.
_GRAPHQL = re.compile(r"/graphql$")
_APP_JWT = "app"  # the governor's key for requests made as the App itself (its JWT)


def utc_now() -> datetime:
    """The real clock, aware UTC."""
    return datetime.now(UTC)


class _Retry(Exception):
    """Internal: this attempt failed in a way worth another try."""

    def __init__(
        self,
        reason: str,
        *,
        wait: float | None = None,
        rate: str | None = None,
        response: requests.Response | None = None,
        budget: str | None = ONE_BUDGET,
    ) -> None:
        super().__init__(reason)
        self.budget = budget  # whose rate limit (rate limits only)
        self.reason = reason
        self.wait = wait  # fixed wait (rate limits); None = exponential backoff
        self.rate = rate  # "primary" | "secondary" | None
        self.response = response


class Transport(HTTPAdapter):
    """A requests adapter on PyGithub's session: conditional GETs, bounded retries, rate limits.

    - GET responses with an ETag are kept (LRU); the next GET of the same URL by the same token
      sends `If-None-Match` and a 304 (free: not counted against the rate limit) is answered from
      the cache as the stored 200.
    - 5xx, connection resets and timeouts are retried with exponential backoff and jitter, up to
      `attempts` tries, for idempotent methods (and POSTs that are safe to repeat).
    - A `router` (an App's installations) puts each request's token on it; each installation
      has its own primary budget (`rates`), ETags are kept per token.
    - A spent primary budget does not stop GraphQL queries (a budget of their own) or
      conditional reads (a 304 is free); every other request waits for the reset.
    - Primary and secondary rate limits are waited out (`Retry-After`, `x-ratelimit-reset`, at
      least 60 s for a secondary limit without `Retry-After`) while the tick's WaitBudget allows;
      beyond it, RateLimited is raised so the tick stops cleanly.
    """

    def __init__(
        self,
        *,
        budget: WaitBudget,
        sleep: Sleeper = time.sleep,
        clock: Clock = utc_now,
        scrubber: Scrubber | None = None,
        attempts: int = 4,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        write_interval: float = 0.0,
        cache: EtagCache | None = None,
    ) -> None:
        super().__init__(max_retries=0)
        self.budget = budget
        self.sleep = sleep
        self.clock = clock
        self.scrubber = scrubber or Scrubber()
        self.attempts = attempts
        self.log_transient = True  # off while a caller reports the failure itself (start-up)
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.write_interval = write_interval
        self.cache = cache if cache is not None else EtagCache()
        self.router: Router | None = None
        self.jwt_minter: JwtMinter | None = None  # an App's JWT auth (forge.appclock)
        self.clock_offset: float | None = None  # GitHub's `Date` minus our clock, last answer
        self.book = RateBook()  # each budget's last rate-limit headers
        self.stats = TransportStats()
        self._last_write = 0.0
        self._lock = threading.Lock()
        self.pacer = ContentPacer()
        # every attempt of every request waits here for its budget key's points and one slot
        self.governor = Governor(sleep=self._governed_sleep)

    # ------------------------------------------------------------------ send
    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        """Send with the cache, retries and rate-limit handling."""
        method = (request.method or "GET").upper()
        budget = self.router.route(request) if self.router is not None else ONE_BUDGET
        key, entry = self._conditional(method, request, kwargs)
        if method != "GET":
            self._before_write(method, urlsplit(request.url or "").path)

        resp = self._send_retrying(method, request, kwargs, budget)
        resp = self._retry_skewed_jwt(method, request, kwargs, resp)
        if budget is not None and self.router is not None:
            if resp.status_code == 401:
                self.router.rejected(budget)
            self.router.learn(budget, resp.headers)

        if key is None:
            return resp
        return self._through_cache(key, entry, resp, request)

    def _conditional(
        self, method: str, request: requests.PreparedRequest, kwargs: dict[str, Any]
    ) -> tuple[CacheKey | None, CacheEntry | None]:
        """A plain GET's cache key and cached entry; the entry's ETag goes in `If-None-Match`."""
        if method != "GET" or kwargs.get("stream"):
            return None, None
        accept = request.headers.get("Accept", "")
        if isinstance(accept, bytes):  # requests allows bytes header values
            accept = accept.decode("latin-1")
        key = (request.url or "", auth_identity(request.headers), accept)
        entry = self.cache.get(key)
        if entry is not None and "If-None-Match" not in request.headers:
            request.headers["If-None-Match"] = entry.etag
        return key, entry

    def _before_write(self, method: str, path: str) -> None:
        """Pace a write (GraphQL reads excepted) and count it (token mints excepted)."""
        if _GRAPHQL.search(path):
            return
        self._pace_write()
        self._pace_content(method, path)
        if not _MINT.search(path):
            with self._lock:
                self.stats.writes += 1

    def _through_cache(
        self,
        key: CacheKey,
        entry: CacheEntry | None,
        resp: requests.Response,
        request: requests.PreparedRequest,
    ) -> requests.Response:
        """A 304 answered from the cache; a fresh 200 with an ETag stored for next time."""
        if resp.status_code == 304 and entry is not None:
            with self._lock:
                self.stats.not_modified += 1
            return self._from_cache(entry, resp, request)
        etag = resp.headers.get("ETag")
        if resp.status_code == 200 and etag and not content_addressed(key[0]):
            self.cache.put(key, CacheEntry(etag, dict(resp.headers), resp.content))
            with self._lock:
                self.stats.stored += 1
        return resp

    def _retry_skewed_jwt(
        self, method: str, request: requests.PreparedRequest, kwargs: Any, resp: requests.Response
    ) -> requests.Response:
        """A 401 to the App's JWT naming its times: once more with a JWT on GitHub's clock."""
        retry_auth = skew_retry_auth(self.jwt_minter, request.headers, resp)
        if retry_auth is None:
            return resp
        resp.close()
        request.headers["Authorization"] = retry_auth
        return self._send_retrying(method, request, kwargs, None)

    def _from_cache(
        self, entry: CacheEntry, fresh: requests.Response, request: requests.PreparedRequest
    ) -> requests.Response:
        r = requests.Response()
        r.status_code = 200
        r.reason = "OK"
        headers = CaseInsensitiveDict(entry.headers)
        for h in (*RATE_HEADERS, "date"):
            if h in fresh.headers:
                headers[h] = fresh.headers[h]
        r.headers = headers
        r._content = entry.body
        r.encoding = fresh.encoding or "utf-8"
        r.url = request.url or ""
        r.request = request
        r.connection = self
        _ = fresh.content  # drain the (empty) 304 body so its connection goes back to the pool
        fresh.close()
        return r

    # --------------------------------------------------------------- retries
    def _send_retrying(
        self,
        method: str,
        request: requests.PreparedRequest,
        kwargs: dict[str, Any],
        budget: str | None,
    ) -> requests.Response:
        path = urlsplit(request.url or "").path
        retryer = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=lambda rs: self._wait(rs, method, path),
            retry=tenacity.retry_if_exception_type(_Retry),
            sleep=self._do_sleep,
            before_sleep=lambda rs: self._before_sleep(rs, method, path),
            reraise=True,
        )
        try:
            for attempt in retryer:
                with attempt:
                    return self._send_once(method, path, request, kwargs, budget)
        except _Retry as exc:
            if exc.rate:
                raise self._rate_limited(
                    exc.wait or SECONDARY_MIN_WAIT,
                    exc.rate,
                    method,
                    path,
                    why="attempts exhausted",
                    budget=budget,
                ) from None
            if self.log_transient:
                log.warning(
                    "forge.transient",
                    method=method,
                    path=path,
                    reason=exc.reason,
                    attempts=self.attempts,
                )
            raise Transient(
                f"GitHub {method} {path}: {exc.reason} (after {self.attempts} attempts)",
                status=exc.response.status_code if exc.response is not None else None,
            ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _send_once(
        self,
        method: str,
        path: str,
        request: requests.PreparedRequest,
        kwargs: dict[str, Any],
        budget: str | None,
    ) -> requests.Response:
        graphql = bool(_GRAPHQL.search(path))
        # a conditional read may still be answered 304 for free: it is sent, and a 403 for the
        # spent budget is then handled like any other
        conditional = method == "GET" and "If-None-Match" in request.headers
        if not graphql and not conditional and budget is not None:
            self._respect_exhausted(method, path, budget)
        retry_ok = method in _IDEMPOTENT or graphql or bool(_SAFE_POST.search(path))
        try:
            resp = self._governed_send(method, path, request, kwargs, budget, graphql=graphql)
        except (requests.ConnectionError, requests.Timeout) as exc:
            reason = self.scrubber.scrub(f"{type(exc).__name__}")
            if retry_ok or isinstance(exc, requests.ConnectTimeout):
                raise _Retry(reason) from None
            raise Transient(
                f"GitHub {method} {path}: {reason} (not retried: unsafe to repeat)"
            ) from None
        offset = observed_offset(resp.headers.get("Date"), self.clock())
        self.clock_offset = self.clock_offset if offset is None else offset
        if budget is not None:  # the App's JWT requests (None) have a budget of their own
            self.book.note(resp.headers, budget)
        status = resp.status_code
        if status in (403, 429):
            self._on_rate_limit(resp, method, path, budget)
        if status >= 500 and retry_ok:
            raise _Retry(f"HTTP {status}", response=resp)
        return resp

    def _governed_send(
        self,
        method: str,
        path: str,
        request: requests.PreparedRequest,
        kwargs: dict[str, Any],
        budget: str | None,
        *,
        graphql: bool,
    ) -> requests.Response:
        """One attempt on the wire, once the governor has room for it in its budget key's
        minute and the key's one slot (held while the request is in flight)."""
        key = budget if budget is not None else _APP_JWT
        with self.governor.slot(key, method, path, graphql=graphql):
            with self._lock:  # requests may come from several gather threads at once
                self.stats.sent += 1
                self.stats.by_method[method] = self.stats.by_method.get(method, 0) + 1
            return super().send(request, **kwargs)

    def _on_rate_limit(
        self, resp: requests.Response, method: str, path: str, budget: str | None
    ) -> None:
        """A 403/429 that is a rate limit is retried after its wait (_Retry), or ends the tick
        when this tick's wait budget cannot cover that wait; any other goes to the caller."""
        wait = self._rate_wait(resp)
        if wait is None:
            return
        seconds, kind = wait
        if not self.budget.allows(seconds):
            resp.close()
            why = "over the tick's wait budget"
            raise self._rate_limited(seconds, kind, method, path, why=why, budget=budget)
        raise _Retry(f"{kind} rate limit", wait=seconds, rate=kind, response=resp, budget=budget)

    def _wait(self, rs: tenacity.RetryCallState, method: str, path: str) -> float:
        exc = rs.outcome.exception() if rs.outcome else None
        if isinstance(exc, _Retry) and exc.wait is not None:
            seconds = exc.wait
        else:
            n = rs.attempt_number
            seconds = min(self.backoff_max, self.backoff_base * 2 ** (n - 1))
            seconds += random.uniform(0, self.backoff_base)  # jitter, not crypto
        if not self.budget.allows(seconds):
            if isinstance(exc, _Retry) and exc.rate:
                raise self._rate_limited(
                    seconds,
                    exc.rate,
                    method,
                    path,
                    why="over the tick's wait budget",
                    budget=exc.budget,
                )
            log.warning(
                "forge.transient", method=method, path=path, reason=str(exc), why="wait budget"
            )
            raise Transient(
                f"GitHub {method} {path}: {exc}; a {seconds:.0f}s retry wait would exceed "
                "this tick's wait budget"
            )
        return seconds

    def _before_sleep(self, rs: tenacity.RetryCallState, method: str, path: str) -> None:
        exc = rs.outcome.exception() if rs.outcome else None
        wait = rs.next_action.sleep if rs.next_action else 0.0
        if isinstance(exc, _Retry) and exc.rate:
            self.stats.rate_waits += 1
            log.warning(
                "forge.rate_wait",
                kind=exc.rate,
                method=method,
                path=path,
                wait=round(wait, 3),
                budget_left=round(self.budget.remaining, 3),
            )
        else:
            self.stats.retries += 1
            log.warning(
                "forge.retry",
                method=method,
                path=path,
                attempt=rs.attempt_number,
                reason=str(exc),
                wait=round(wait, 3),
            )
        if isinstance(exc, _Retry) and exc.response is not None:
            exc.response.close()

    def _governed_sleep(self, seconds: float) -> None:
        """The governor's wait for room in a minute's points (this transport's sleeper, not
        spent from the tick's wait budget: it is never longer than a minute)."""
        with self._lock:
            self.stats.waited += seconds
            self.stats.paced += 1
        self.sleep(seconds)

    def _do_sleep(self, seconds: float) -> None:
        self.budget.spend(seconds)
        self.stats.waited += seconds
        self.sleep(seconds)

    # ----------------------------------------------------------- rate limits
    @property
    def rates(self) -> dict[str, RateState]:
        """Budget key (an App installation's id; "" for a token) → its last rate-limit headers."""
        return self.book.rates

    @property
    def rate(self) -> RateState:
        """The tightest primary budget seen (fewest requests left): what a tick plans by."""
        return self.book.tightest

    def _now(self) -> float:
        return self.clock().timestamp()

    def _rate_wait(self, resp: requests.Response) -> tuple[float, str] | None:
        """(seconds, kind) when this 403/429 is a rate limit, else None (a real 403)."""
        try:
            message = str(resp.json().get("message", ""))
        except ValueError:
            message = ""
        return refusal_wait(resp.status_code, resp.headers, message, self._now())

    def _respect_exhausted(self, method: str, path: str, budget: str) -> None:
        """Before sending: if the primary budget is spent (last response), wait for its reset."""
        seconds = self.book.until_reset(budget, self._now())
        if seconds is None:
            return
        if not self.budget.allows(seconds):
            raise self._rate_limited(
                seconds, "primary", method, path, why="primary budget exhausted", budget=budget
            )
        log.warning(
            "forge.rate_wait",
            kind="primary",
            method=method,
            path=path,
            wait=round(seconds, 3),
            budget_left=round(self.budget.remaining, 3),
        )
        self.stats.rate_waits += 1
        self._do_sleep(seconds)
        self.book.waited_out(budget)

    def _rate_limited(
        self,
        seconds: float,
        kind: str,
        method: str,
        path: str,
        *,
        why: str,
        budget: str | None = ONE_BUDGET,
    ) -> RateLimited:
        reset_at, left = self.book.reset_at(budget), self.budget.remaining
        return over_wait_budget(
            seconds, kind, method, path, why=why, reset_at=reset_at, budget_left=left
        )

    def _pace_content(self, method: str, path: str) -> None:
        """Stay within the content-creation limits: wait (budget allowing) or stop the tick."""
        if not creates_content(method, path):
            return
        seconds = self.pacer.wait()
        if seconds > 0:
            if not self.budget.allows(seconds):
                raise self._rate_limited(
                    seconds, "secondary", method, path, why="content-creation pacing"
                )
            self._do_sleep(seconds)
        self.pacer.record()

    def _pace_write(self) -> None:
        if self.write_interval <= 0:
            return
        now = time.monotonic()
        gap = self._last_write + self.write_interval - now
        if gap > 0:
            self.sleep(gap)
        self._last_write = time.monotonic()

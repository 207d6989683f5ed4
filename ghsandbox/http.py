"""GitHub-like HTTP behaviour: errors, pagination, ETags, rate limits, faults, counters."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from werkzeug.wrappers import Request, Response

DOCS = "https://docs.github.com/rest"
SECONDARY_DOC = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)


_FRAGMENT_NONCE = secrets.token_hex(8)
_FRAGMENT = re.compile(r'"\\u0000fragment:' + _FRAGMENT_NONCE + r':(\d+)\\u0000"')


class Fragments:
    """JSON values encoded once per response and spliced in wherever they repeat.

    A PR list page embeds the same repository object twice per item and the same few users
    over and over; :meth:`add` encodes such a value once and hands back a placeholder string
    that :func:`json_bytes` replaces with the encoded text.
    """

    def __init__(self) -> None:
        self._raw: list[str] = []
        self._tokens: dict[Any, str] = {}

    def add(self, key: Any, make: Callable[[], Any]) -> str:
        """The placeholder for ``make()`` (computed and encoded on the first call per key)."""
        token = self._tokens.get(key)
        if token is None:
            self._raw.append(json.dumps(make(), separators=(",", ":"), ensure_ascii=False))
            token = f"\x00fragment:{_FRAGMENT_NONCE}:{len(self._raw) - 1}\x00"
            self._tokens[key] = token
        return token

    def splice(self, text: str) -> str:
        """Replace the (JSON-encoded) placeholders in ``text`` with their encoded values."""
        if not self._raw:
            return text
        raw = self._raw
        return _FRAGMENT.sub(lambda m: raw[int(m.group(1))], text)


def json_bytes(body: Any, fragments: Fragments | None = None) -> bytes:
    """Serialise a body like GitHub (compact JSON, UTF-8), splicing in ``fragments``."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if fragments is not None:
        text = fragments.splice(text)
    return text.encode("utf-8")


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    """A JSON response with GitHub's content type."""
    resp = Response(json_bytes(body) if body is not None else b"", status=status)
    resp.headers["Content-Type"] = "application/json; charset=utf-8"
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def error_body(
    status: int, message: str, errors: list[dict[str, Any]] | None = None, doc: str | None = None
) -> dict[str, Any]:
    """GitHub's error document."""
    body: dict[str, Any] = {"message": message}
    if errors:
        body["errors"] = errors
    body["documentation_url"] = doc or DOCS
    body["status"] = str(status)
    return body


def request_id() -> str:
    """An X-GitHub-Request-Id-like value."""
    h = uuid.uuid4().hex.upper()
    return f"{h[:4]}:{h[4:9]}:{h[9:16]}:{h[16:23]}:{h[23:31]}"


# -- pagination ----------------------------------------------------------------------------


def page_params(
    req: Request, max_per_page: int = 100, default_per_page: int = 30
) -> tuple[int, int]:
    """(page, per_page) from the query string with GitHub's defaults and clamping."""
    try:
        page = max(1, int(req.args.get("page", "1")))
    except ValueError:
        page = 1
    try:
        per_page = int(req.args.get("per_page", str(default_per_page)))
    except ValueError:
        per_page = default_per_page
    per_page = min(max(per_page, 1), max_per_page)
    return page, per_page


def paginate(
    req: Request,
    base_url: str,
    items: list[Any],
    max_per_page: int = 100,
    default_per_page: int = 30,
    path: str | None = None,
) -> tuple[list[Any], str | None]:
    """Slice ``items`` for the requested page and build the ``Link`` header (absolute URLs to
    ``path``, by default the request's)."""
    page, per_page = page_params(req, max_per_page, default_per_page)
    total = len(items)
    last = max(1, (total + per_page - 1) // per_page)
    chunk = items[(page - 1) * per_page : page * per_page]

    def url(p: int) -> str:
        args = [(k, v) for k, v in req.args.items(multi=True) if k != "page"]
        args.append(("page", str(p)))
        return f"{base_url}{path or req.path}?{urlencode(args)}"

    links = []
    if page > 1:
        links.append(f'<{url(min(page - 1, last))}>; rel="prev"')
    if page < last:
        links.append(f'<{url(page + 1)}>; rel="next"')
        links.append(f'<{url(last)}>; rel="last"')
    if page > 1:
        links.append(f'<{url(1)}>; rel="first"')
    return chunk, (", ".join(links) or None)


# -- ETags ---------------------------------------------------------------------------------


def etag_for(body: bytes, identity: str) -> str:
    """A weak ETag over the body and the caller's identity (ETags vary with Authorization)."""
    h = hashlib.sha256()
    h.update(body)
    h.update(b"\0")
    h.update(identity.encode())
    return f'W/"{h.hexdigest()[:40]}"'


def etag_matches(header: str | None, etag: str) -> bool:
    """Does an If-None-Match header match (weak comparison, lists and ``*``)?"""
    if not header:
        return False
    want = etag.removeprefix("W/")
    for part in header.split(","):
        part = part.strip()
        if part == "*" or part.removeprefix("W/") == want:
            return True
    return False


# -- rate limits ---------------------------------------------------------------------------


@dataclass
class Bucket:
    """One rate-limit window."""

    limit: int
    used: int = 0
    reset: int = 0


class RateLimiter:
    """Hourly budgets per token identity; windows use the real clock like GitHub's reset epoch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[str, Bucket] = {}
        self._minute: dict[str, list[float]] = {}

    def bucket(self, key: str, limit: int) -> Bucket:
        """The current window for ``key`` (opened or rolled over as needed)."""
        now = int(time.time())
        with self._lock:
            b = self._buckets.get(key)
            if b is None or now >= b.reset:
                b = Bucket(limit=limit, used=0, reset=now + 3600)
                self._buckets[key] = b
            b.limit = limit
            return b

    def consume(self, key: str, limit: int) -> Bucket:
        """Count one request against ``key``."""
        b = self.bucket(key, limit)
        with self._lock:
            b.used += 1
        return b

    def secondary_hit(self, key: str, per_minute: int) -> bool:
        """True when ``key`` made more than ``per_minute`` requests in the last minute (0 = off)."""
        if per_minute <= 0:
            return False
        now = time.monotonic()
        with self._lock:
            hist = [t for t in self._minute.get(key, []) if now - t < 60]
            hist.append(now)
            self._minute[key] = hist
            return len(hist) > per_minute

    def reset_all(self) -> None:
        """Forget all windows."""
        with self._lock:
            self._buckets.clear()
            self._minute.clear()


def rate_headers(b: Bucket, resource: str = "core") -> dict[str, str]:
    """The X-RateLimit-* headers for a window."""
    return {
        "X-RateLimit-Limit": str(b.limit),
        "X-RateLimit-Remaining": str(max(0, b.limit - b.used)),
        "X-RateLimit-Reset": str(b.reset),
        "X-RateLimit-Used": str(min(b.used, b.limit)),
        "X-RateLimit-Resource": resource,
    }


# -- faults --------------------------------------------------------------------------------


@dataclass
class Fault:
    """A scripted failure for the next ``count`` requests matching ``method`` and ``path``."""

    method: str
    path: str
    kind: str = "status"
    status: int = 502
    count: int = 1
    delay: float = 0.0
    retry_after: int = 60
    action: Callable[[], object] | None = field(default=None, repr=False)
    regex: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in ("status", "drop", "delay", "secondary", "call"):
            raise ValueError(
                f"fault kind must be status, drop, delay, secondary or call, not {self.kind!r}"
            )
        if (self.kind == "call") != (self.action is not None):
            raise ValueError("fault kind call needs an action (and only call takes one)")
        self.regex = re.compile(self.path)
        self.method = self.method.upper()

    def describe(self) -> dict[str, Any]:
        """A JSON view."""
        return {
            "method": self.method,
            "path": self.path,
            "kind": self.kind,
            "status": self.status,
            "count": self.count,
            "delay": self.delay,
            "retry_after": self.retry_after,
        }


class Faults:
    """The scripted fault queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        """Queue a fault."""
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        """Drop all faults."""
        with self._lock:
            self._faults.clear()

    def take(self, method: str, path: str, query: str = "") -> Fault | None:
        """The first fault matching this request (its count is decremented): its regex is
        searched in the path, and in ``path?query`` when there is a query string."""
        full = f"{path}?{query}" if query else path
        with self._lock:
            for f in self._faults:
                if f.method in (method, "*") and (f.regex.search(path) or f.regex.search(full)):
                    f.count -= 1
                    if f.count <= 0:
                        self._faults.remove(f)
                    return f
        return None

    def list(self) -> list[dict[str, Any]]:
        """Pending faults."""
        with self._lock:
            return [f.describe() for f in self._faults]


# -- counters ------------------------------------------------------------------------------


class Counters:
    """Request counts per endpoint template and in total."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Zero everything."""
        with getattr(self, "_lock", threading.Lock()):
            self._total = {
                "requests": 0,
                "counted": 0,
                "not_modified": 0,
                "faults": 0,
                "errors": 0,
                "git": 0,
            }
            self._endpoints: dict[str, dict[str, int]] = {}
            self._identities: dict[str, dict[str, int]] = {}

    def record(
        self, endpoint: str, identity: str, *, counted: bool, status: int, fault: bool = False
    ) -> None:
        """Count one request."""
        with self._lock:
            for table, key in ((self._endpoints, endpoint), (self._identities, identity)):
                row = table.setdefault(
                    key, {"requests": 0, "counted": 0, "not_modified": 0, "errors": 0, "faults": 0}
                )
                row["requests"] += 1
                row["counted"] += int(counted)
                row["not_modified"] += int(status == 304)
                row["errors"] += int(status >= 400)
                row["faults"] += int(fault)
            self._total["requests"] += 1
            self._total["counted"] += int(counted)
            self._total["not_modified"] += int(status == 304)
            self._total["errors"] += int(status >= 400)
            self._total["faults"] += int(fault)
            self._total["git"] += int(endpoint.startswith("GIT "))

    def snapshot(self) -> dict[str, Any]:
        """A copy: ``{"total": {...}, "endpoints": {"GET /repos/{owner}/...": {...}}, ...}``."""
        with self._lock:
            return {
                "total": dict(self._total),
                "endpoints": {k: dict(v) for k, v in self._endpoints.items()},
                "identities": {k: dict(v) for k, v in self._identities.items()},
            }

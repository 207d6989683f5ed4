"""The WSGI application: GitHub-like HTTP around REST handlers, git over HTTP, /_sandbox."""

from __future__ import annotations

import json
import re
import sys
import time
import traceback
from typing import Any

from werkzeug.exceptions import MethodNotAllowed, NotFound
from werkzeug.wrappers import Request, Response

from . import githttp
from .api_meta import budget
from .auth import ANONYMOUS, Identity, identify
from .clock import parse_iso
from .core import Backend
from .errors import SandboxApiError
from .fidelity import Refusal, oversized, secondary_refusal, settings
from .gql import GRAPHQL_PATHS, GraphqlEndpoint, fault_path
from .gql.schema import warm_in_background
from .http import (
    SECONDARY_DOC,
    SECONDARY_MESSAGE,
    Bucket,
    Counters,
    Fault,
    Faults,
    error_body,
    etag_for,
    etag_matches,
    json_bytes,
    json_response,
    paginate,
    rate_headers,
    request_id,
)
from .render import Urls
from .routes import build_map
from .routing import Ctx, Paged, Result

API_PREFIX = "/api/v3"
UNCOUNTED = {"GET /rate_limit"}
REPO_BY_ID = re.compile(r"^/repositories/(\d+)(/.*)?$")
REPO_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)(/.*)?$")
PRIMARY_DOC = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limits"


class DroppedConnection(ConnectionAbortedError):
    """Raised to make the server close the connection without a response (fault kind ``drop``)."""


class SandboxApp:
    """The WSGI callable."""

    def __init__(self, backend: Backend) -> None:
        self.b = backend
        self.limiter = backend.limiter
        self.faults = Faults()
        self.counters = Counters()
        self.url_map, self.handlers = build_map()
        # (endpoint template, status, JSON body, headers) of every REST response, when on
        self.recorder: list[tuple[str, int, Any, dict[str, str]]] | None = None
        self.graphql = GraphqlEndpoint(backend, self.counters)
        warm_in_background()

    # -- WSGI ------------------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        req = Request(environ)
        resp = self.dispatch(req)
        return resp(environ, start_response)

    def dispatch(self, req: Request) -> Response:
        """Route one request."""
        path = req.path
        prefixed = path == API_PREFIX or path.startswith(API_PREFIX + "/")
        if prefixed:
            path = path[len(API_PREFIX) :] or "/"
        root = req.host_url.rstrip("/")
        urls = Urls(api=root + (API_PREFIX if prefixed else ""), web=root)
        if path.startswith("/_sandbox/") or path == "/_sandbox":
            return self.admin(req, path)
        link_path = req.path
        by_id = REPO_BY_ID.match(path)
        if by_id:  # GitHub's Link URLs name repositories by id: /repositories/{id}/...
            full = self.repo_by_id(int(by_id.group(1)))
            path = f"/repos/{full}{by_id.group(2) or ''}" if full else "/_unknown_repository"
        else:
            link_path = self.link_path(req.path, path, prefixed)
        graphql = path in GRAPHQL_PATHS
        query = req.query_string.decode("latin-1")
        fault = self.faults.take(req.method, fault_path(req, path) if graphql else path, query)
        git = githttp.is_git_request(path)
        # a delay is slowness while serving: the request is in flight meanwhile (concurrency)
        served_delay = fault.delay if fault is not None and fault.kind == "delay" else 0.0
        if fault is not None and (fault.kind != "delay" or git):
            early = self.apply_fault(fault)
            if early is not None:
                self.counters.record(
                    f"{req.method} {path}",
                    "fault",
                    counted=False,
                    status=early.status_code,
                    fault=True,
                )
                return early
        if graphql:
            return self.graphql(req, served_delay)
        if git:
            resp, ident, label = githttp.handle(self.b, req, path)
            self.counters.record(label, ident.rate_key, counted=False, status=resp.status_code)
            resp.headers["X-GitHub-Request-Id"] = request_id()
            return resp
        return self.rest(req, path, urls, link_path, served_delay)

    def repo_by_id(self, repo_id: int) -> str | None:
        """``owner/name`` of the repository with this id (None when there is none)."""
        with self.b.lock:
            for full, rec in self.b.data["repos"].items():
                if rec.get("id") == repo_id:
                    return str(full)
        return None

    def link_path(self, raw: str, path: str, prefixed: bool) -> str:
        """The path GitHub puts in ``Link`` URLs: ``/repositories/{id}/...`` for repo routes."""
        m = REPO_PATH.match(path)
        if not m:
            return raw
        with self.b.lock:
            repos = self.b.data["repos"]
            full = f"{m.group(1)}/{m.group(2)}"
            rec = repos.get(full) or next(
                (r for n, r in repos.items() if n.lower() == full.lower()), None
            )
        if rec is None:
            return raw
        return f"{API_PREFIX if prefixed else ''}/repositories/{rec['id']}{m.group(3) or ''}"

    def apply_fault(self, fault: Fault) -> Response | None:
        """Carry out a scripted fault; None means continue normally (after a delay)."""
        if fault.kind == "delay":
            time.sleep(fault.delay)
            return None
        if fault.kind == "call":  # act (e.g. retarget a PR), then answer the request normally
            assert fault.action is not None
            fault.action()
            return None
        if fault.kind == "drop":
            raise DroppedConnection("sandbox fault: connection dropped")
        if fault.kind == "secondary":
            status = fault.status if fault.status in (403, 429) else 403
            body = error_body(status, SECONDARY_MESSAGE, doc=SECONDARY_DOC)
            return json_response(
                status,
                body,
                {"Retry-After": str(fault.retry_after), "X-GitHub-Request-Id": request_id()},
            )
        messages = {
            500: "Server Error",
            502: "Server Error",
            503: "Service Unavailable",
            504: "Gateway Timeout",
        }
        return json_response(
            fault.status,
            error_body(fault.status, messages.get(fault.status, "Server Error")),
            {"X-GitHub-Request-Id": request_id()},
        )

    # -- REST ------------------------------------------------------------------------------

    def exhausted(
        self, ident: Identity, bucket: Bucket, rid: str, extra_headers: dict[str, str]
    ) -> SandboxApiError:
        """GitHub's 403 for a spent primary budget (its rate headers go with it)."""
        extra_headers.update(rate_headers(bucket))
        who = (
            f"installation ID {ident.installation_id}"
            if ident.kind == "installation"
            else f"user ID {self.b.data['users'][ident.login]['id']}"
            if ident.kind == "user"
            else "127.0.0.1"
        )
        return SandboxApiError(
            403,
            f"API rate limit exceeded for {who}. If you reach out to GitHub Support "
            f"for help, please include the request ID {rid}.",
            doc=PRIMARY_DOC,
        )

    def rest(
        self,
        req: Request,
        path: str,
        urls: Urls,
        link_path: str | None = None,
        delay: float = 0.0,
    ) -> Response:
        """Authenticate, rate-limit, run a handler and add GitHub's headers (after `delay` s
        of scripted slowness, the request in flight)."""
        rid = request_id()
        adapter = self.url_map.bind("sandbox", path_info=path)
        endpoint = f"{req.method} {path}"
        ident: Identity = ANONYMOUS
        extra_headers: dict[str, str] = {"X-GitHub-Request-Id": rid}
        counted = False
        entered: str | None = None
        cfg = settings(self.b.data)
        try:
            ident = identify(self.b, req.headers.get("Authorization"))
            refusal = self.b.secondary.enter(ident.rate_key, cfg)
            if refusal is not None:
                self.refuse(refusal, extra_headers, cfg, rid)
            entered = ident.rate_key
            if delay > 0:
                time.sleep(delay)
            try:
                endpoint, params = adapter.match(path, method=req.method)
            except (NotFound, MethodNotAllowed) as exc:
                raise SandboxApiError(404, "Not Found") from exc
            limit = budget(self.b, ident)
            bucket = self.limiter.bucket(ident.rate_key, limit)
            conditional = req.method == "GET" and bool(req.headers.get("If-None-Match"))
            spent = False  # the budget is spent, but a 304 may still be answered
            if endpoint not in UNCOUNTED:
                if bucket.used >= bucket.limit:
                    if not (conditional and cfg["exhausted_conditional_304"]):
                        raise self.exhausted(ident, bucket, rid, extra_headers)
                    spent = True
                per_minute = int(self.b.data["rate_limit"].get("secondary_per_minute") or 0)
                if self.limiter.secondary_hit(ident.rate_key, per_minute):
                    extra_headers["Retry-After"] = "60"
                    raise SandboxApiError(403, SECONDARY_MESSAGE, doc=SECONDARY_DOC)
                now = self.b.clock.window_time()
                refusal = self.b.secondary.charge(ident.rate_key, endpoint, req.method, now, cfg)
                if refusal is not None:
                    self.refuse(refusal, extra_headers, cfg, rid)
            ctx = Ctx(req, self.b, ident, urls)
            if req.method in ("POST", "PATCH", "PUT"):
                errors = oversized(endpoint, ctx.json())
                if errors:
                    raise SandboxApiError(422, "Validation Failed", errors=errors)
            with self.b.lock:
                result = self.handlers[endpoint](ctx, **params)
                status, body, headers = self.materialise(req, urls, result, link_path)
            payload = json_bytes(body, ctx.fragments) if body is not None else b""
            if req.method == "GET" and status == 200:
                etag = etag_for(payload, ident.token_hash or "anonymous")
                headers["ETag"] = etag
                headers["Cache-Control"] = "private, max-age=60, s-maxage=60"
                if etag_matches(req.headers.get("If-None-Match"), etag):
                    status, payload = 304, b""
            if spent and status != 304:
                raise self.exhausted(ident, bucket, rid, extra_headers)
            counted = endpoint not in UNCOUNTED and status != 304
            if counted:
                bucket = self.limiter.consume(ident.rate_key, limit)
            headers.update(rate_headers(bucket))
            headers.update(extra_headers)
            resp = Response(payload, status=status)
            for key, value in headers.items():
                resp.headers[key] = value
            if status != 304 and status != 204:
                resp.headers["Content-Type"] = "application/json; charset=utf-8"
        except SandboxApiError as err:
            status = err.status
            if (  # GitHub counts an authenticated 404 too (and sends the headers with it)
                status != 401
                and "X-RateLimit-Limit" not in extra_headers
                and ident is not ANONYMOUS
            ):
                b = self.limiter.consume(ident.rate_key, budget(self.b, ident))
                extra_headers.update(rate_headers(b))
                counted = True
            body = error_body(status, err.message, err.errors, err.extra.get("doc"))
            resp = json_response(status, body, extra_headers)
        except DroppedConnection:
            raise
        except Exception as exc:  # a sandbox bug: answer 500 and say why on stderr
            traceback.print_exc(file=sys.stderr)
            status = 500
            resp = json_response(
                500, error_body(500, f"Sandbox internal error: {exc}"), extra_headers
            )
        finally:
            if entered is not None:
                self.b.secondary.exit(entered)
        resp.headers["X-GitHub-Media-Type"] = "github.v3; format=json"
        resp.headers["X-GitHub-Api-Version-Selected"] = "2022-11-28"
        resp.headers["Vary"] = "Accept, Authorization, Cookie, X-GitHub-OTP"
        self.counters.record(endpoint, ident.rate_key, counted=counted, status=resp.status_code)
        if self.recorder is not None:
            raw = resp.get_data()
            body = json.loads(raw) if raw else None
            self.recorder.append((endpoint, resp.status_code, body, dict(resp.headers)))
        return resp

    def refuse(
        self, refusal: Refusal, headers: dict[str, str], cfg: dict[str, float], rid: str
    ) -> None:
        """Raise GitHub's secondary-rate-limit refusal (403, or 429 when the world says so)
        with its ``Retry-After``."""
        raise secondary_refusal(refusal, headers, cfg, rid)

    def materialise(
        self, req: Request, urls: Urls, result: Any, link_path: str | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        """Turn a handler's Result/Paged into (status, body, headers)."""
        root = urls.api.removesuffix(API_PREFIX) if urls.api.endswith(API_PREFIX) else urls.api
        if isinstance(result, Result):
            return result.status, result.body, dict(result.headers)
        if isinstance(result, Paged):
            chunk, link = paginate(req, root, result.items, result.max_per_page, path=link_path)
            rendered = [result.render(x) for x in chunk] if result.render else chunk
            headers = {**result.headers, **({"Link": link} if link else {})}
            if result.wrap:
                return (
                    200,
                    {"total_count": len(result.items), result.wrap: rendered, **result.extra},
                    headers,
                )
            return 200, rendered, headers
        raise TypeError(f"handler returned {type(result).__name__}")

    # -- admin -----------------------------------------------------------------------------

    def admin(self, req: Request, path: str) -> Response:
        """The /_sandbox admin API: faults, counters, clock (never counted or rate limited)."""
        token = self.b.data.get("admin_token")
        if token and req.headers.get("Authorization", "").split(" ")[-1] != token:
            return json_response(401, error_body(401, "Bad credentials"))
        try:
            data = json.loads(req.get_data() or b"{}")
        except ValueError:
            return json_response(400, error_body(400, "Problems parsing JSON"))
        if not isinstance(data, dict):
            return json_response(400, error_body(400, "Problems parsing JSON"))
        try:
            if path == "/_sandbox/faults":
                if req.method == "POST":
                    self.faults.add(
                        Fault(
                            method=data.get("method", "*"),
                            path=data["path"],
                            kind=data.get("kind", "status"),
                            status=int(data.get("status", 502)),
                            count=int(data.get("count", 1)),
                            delay=float(data.get("delay", 0)),
                            retry_after=int(data.get("retry_after", 60)),
                        )
                    )
                    return json_response(201, {"faults": self.faults.list()})
                if req.method == "DELETE":
                    self.faults.clear()
                    return json_response(200, {"faults": []})
                return json_response(200, {"faults": self.faults.list()})
            if path == "/_sandbox/counters":
                if req.method in ("DELETE", "POST"):
                    self.counters.reset()
                return json_response(200, self.counters.snapshot())
            if path == "/_sandbox/counters/reset":
                self.counters.reset()
                return json_response(200, self.counters.snapshot())
            if path == "/_sandbox/ratelimit/reset":
                self.limiter.reset_all()
                self.b.secondary.reset()
                return json_response(200, {"ok": True})
            if path == "/_sandbox/clock":
                if req.method == "POST":
                    if "now" in data:
                        self.b.clock.set(parse_iso(data["now"]) if data["now"] else None)
                    if "offset" in data:
                        self.b.clock.set_offset(float(data["offset"]))
                    if "advance" in data:
                        self.b.clock.advance(float(data["advance"]))
                    if "skew" in data:
                        self.b.clock.set_skew(float(data["skew"]))
                return json_response(200, self.b.clock.describe())
        except (KeyError, TypeError, ValueError) as exc:
            return json_response(422, error_body(422, f"Invalid admin request: {exc}"))
        return json_response(404, error_body(404, "Not Found"))

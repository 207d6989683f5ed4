"""The read-only dashboard server: GET/HEAD only, strict CSP, loopback by default.

The read model is built at start-up and rebuilt in the background when a state file changes
(checked on each request with `stat` only): a rebuild verifies and folds in only the log
entries appended since the model it continues, and requests are answered from the old model
until the new one is ready. Any other method gets 405 (an unknown one 501); when bound to
loopback, a Host header that is not a loopback name gets 421 (a DNS-rebinding page cannot
read it). Every answer, errors included, carries the same security headers.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing import get_context
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from capdaemon.audit import log_paths
from capdaemon.config import Config
from capdaemon.dashboard.html import csp
from capdaemon.dashboard.logfold import prefixes_intact
from capdaemon.dashboard.readmodel import ReadModel, build
from capdaemon.dashboard.site import render, story_index
from capdaemon.filenames import (
    ACTIONS_LOG,
    BREAKER_FILE,
    BUDGET_FILE,
    CAPABILITIES_DIR,
    CLASSIFIER_LOG,
    DIGEST_DIR,
    ESCALATIONS_DIR,
    JOURNAL_FILE,
    METRICS_FILE,
    PRS_FILE,
    SAFETY_FILE,
)
from capdaemon.logging import get_logger
from capdaemon.stores.health import read_health

# the files (and folders: a new file changes their mtime) the read model is built from
WATCHED = (
    CLASSIFIER_LOG,
    ACTIONS_LOG,
    PRS_FILE,
    JOURNAL_FILE,
    SAFETY_FILE,
    BREAKER_FILE,
    METRICS_FILE,
    BUDGET_FILE,
    CAPABILITIES_DIR,
    ESCALATIONS_DIR,
    DIGEST_DIR,
)
log = get_logger("capdaemon.dashboard")
# the query parameters pages read (search, page, filters, sort, trends range)
PARAMS = frozenset(
    {"q", "page", "repo", "state", "quadrant", "author", "waiting", "sort", "order", "range"}
)
HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
)


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ModelCache:
    """The current read model; rebuilt in the background when the state files change.

    Requests never wait for a rebuild after start-up: they get the model built last (the page
    header says when it was built) while a new one is built from the changed files, at most
    once per `min_interval` seconds. A rebuild continues the last model (only new log entries
    are verified, from where the last check ended, after checking that the file is the same
    one and still holds the entry verified last); once per `full_every` seconds it first
    verifies both logs from the start in a child process (streaming, no second model in
    memory, and pages keep their speed meanwhile), so an edit in the middle of a log that
    keeps its length and last entry is still found.
    """

    def __init__(
        self,
        state_dir: Path,
        config: Config,
        clock: Callable[[], datetime],
        *,
        min_interval: float = 5.0,
        full_every: float = 3600.0,
    ) -> None:
        self.state_dir, self.config, self.clock = Path(state_dir), config, clock
        self.min_interval, self.full_every = min_interval, full_every
        self._lock = threading.Lock()
        self._building = False
        self._sig = self._signature()
        self._built_at = self._full_at = time.monotonic()
        self.model = build(self.state_dir, config, clock())
        self.slugs = story_index(self.model)

    def _signature(self) -> tuple[tuple[int, int, int], ...]:
        out = []
        for name in WATCHED:
            try:
                st = (self.state_dir / name).stat()
                out.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                out.append((-1, -1, -1))
        return tuple(out)

    def _rebuild(self, sig: tuple[tuple[int, int, int], ...]) -> None:
        try:
            full = time.monotonic() - self._full_at >= self.full_every
            previous: ReadModel | None = self.model
            if full and not _intact_elsewhere(self.model):
                previous = None  # verified and folded from the start: the page shows the break
            model = build(self.state_dir, self.config, self.clock(), previous=previous)
            if full:
                self._full_at = time.monotonic()
            slugs = story_index(model)
            with self._lock:
                self.model, self.slugs, self._sig = model, slugs, sig
        except Exception:  # keep serving the last model; the log says why
            log.exception("dashboard.rebuild_failed", state=str(self.state_dir))
        finally:
            with self._lock:
                self._building = False
                self._built_at = time.monotonic()

    def current(self) -> tuple[ReadModel, dict[str, str]]:
        """The newest model built (starting a rebuild when the state changed since)."""
        sig = self._signature()
        with self._lock:
            due = time.monotonic() - self._built_at >= self.min_interval
            if sig != self._sig and due and not self._building:
                self._building = True
                threading.Thread(target=self._rebuild, args=(sig,), daemon=True).start()
            return self.model, self.slugs


def _intact_elsewhere(model: ReadModel) -> bool:
    """`prefixes_intact` for the model's logs, run in a fresh child process: a second of
    hashing in this process would hold the interpreter lock and stall every page meanwhile."""
    paths, cursors = log_paths(model.state_dir), tuple(model.fold.cursors)
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(prefixes_intact, cursors, paths).result()


def make_server(
    cache: ModelCache, host: str = "127.0.0.1", port: int = 8080
) -> ThreadingHTTPServer:
    """A server bound to (host, port); serve_forever() it (port 0 picks a free port)."""
    loopback = is_loopback(host)

    class Handler(BaseHTTPRequestHandler):
        server_version = "capdaemon-dashboard"
        sys_version = ""

        def log_message(self, format: str, *args: object) -> None:
            return  # quiet: the page is the interface

        def _send(
            self,
            status: int,
            ctype: str,
            body: bytes,
            head_only: bool = False,
            extra: tuple[tuple[str, str], ...] = (),
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", csp())
            for k, v in (*HEADERS, *extra):
                self.send_header(k, v)
            self.end_headers()
            if not head_only:
                self.wfile.write(body)

        def send_error(
            self, code: int, message: str | None = None, explain: str | None = None
        ) -> None:
            """Errors the base class answers itself (501 for an unknown method, 400 for a bad
            request line, 414 ...) with the same headers as every other answer."""
            text = f"{code} {message or self.responses.get(code, ('error',))[0]}\n"
            self.close_connection = True
            head_only = getattr(self, "command", "") == "HEAD"
            self._send(code, "text/plain; charset=utf-8", text.encode(), head_only)

        def _host_ok(self) -> bool:
            if not loopback:
                return True
            name = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            return is_loopback(name)

        def do_GET(self) -> None:
            self._get(head_only=False)

        def do_HEAD(self) -> None:
            self._get(head_only=True)

        def _get(self, head_only: bool) -> None:
            if not self._host_ok():
                self._send(421, "text/plain; charset=utf-8", b"misdirected request\n", head_only)
                return
            url = urlsplit(self.path)
            if url.path == "/healthz":  # the daemon's health, from the state files
                health = read_health(
                    cache.state_dir,
                    tick_seconds=cache.config.schedule.tick_seconds,
                    now=cache.clock(),
                )
                body = json.dumps(health.body, sort_keys=True) + "\n"
                self._send(health.status, "application/json", body.encode(), head_only)
                return
            params = {k: v[0][:200] for k, v in parse_qs(url.query).items() if k in PARAMS}
            try:
                page_no = int(params.pop("page", "1"))
            except ValueError:
                page_no = 1
            model, slugs = cache.current()
            path = url.path.lstrip("/") or "index.html"
            try:
                result = render(model, path, page_no=page_no, slugs=slugs, params=params)
            except Exception as exc:  # a bug must show as an error, never a dropped connection
                log.exception("dashboard.render_failed", path=path)
                text = f"capdaemon dashboard: cannot render {path}: {type(exc).__name__}: {exc}"
                self._send(500, "text/plain; charset=utf-8", text.encode(), head_only)
                return
            self._send(result.status, result.content_type, result.body.encode(), head_only)

        def _refuse(self) -> None:
            self.close_connection = True
            allow = (("Allow", "GET, HEAD"),)
            self._send(405, "text/plain; charset=utf-8", b"405 method not allowed\n", False, allow)

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    return ThreadingHTTPServer((host, port), Handler)


def utc_now() -> datetime:
    """The current UTC time (the server's clock)."""
    return datetime.now(UTC)

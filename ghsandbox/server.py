"""Run the sandbox: a threaded werkzeug server, the Python API, the CLI."""

from __future__ import annotations

import io
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from socketserver import ThreadingMixIn
from types import TracebackType
from typing import Any
from urllib.parse import quote

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from .app import SandboxApp
from .clock import Clock
from .core import Backend
from .gittypes import CommitSpec
from .http import Fault
from .seed import load_seed


class _Connections:
    """Open client connections, so that :meth:`Sandbox.stop` can end idle keep-alive ones."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: dict[socket.socket, bool] = {}
        self.closing = False
        self.opened = 0  # connections accepted so far

    def add(self, conn: socket.socket) -> None:
        with self._lock:
            self._busy[conn] = False
            self.opened += 1

    def remove(self, conn: socket.socket) -> None:
        with self._lock:
            self._busy.pop(conn, None)

    def set_busy(self, conn: socket.socket, busy: bool) -> None:
        with self._lock:
            if conn in self._busy:
                self._busy[conn] = busy

    def close_idle(self) -> None:
        """Refuse new requests; wake idle connections (busy ones close after their response)."""
        with self._lock:
            self.closing = True
            idle = [c for c, busy in self._busy.items() if not busy]
        for conn in idle:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(WSGIRequestHandler):
    """HTTP/1.1 keep-alive request handler: bodies are read whole and every response carries
    Content-Length, so the connection stays usable; quiet; closes on a ``drop`` fault.

    Werkzeug's own ``run_wsgi`` always answers ``Connection: close`` (it cannot drain a
    request body without reading into the next request), hence this replacement.
    """

    protocol_version = "HTTP/1.1"

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The ``Date`` header, from the server's wall clock (the skew a test set)."""
        if timestamp is None:
            backend = getattr(getattr(self.server, "app", None), "b", None)
            clock = getattr(backend, "clock", None)
            timestamp = clock.wall() if clock is not None else None
        return super().date_time_string(timestamp)

    def _connections(self) -> _Connections | None:
        return getattr(self.server, "sandbox_connections", None)

    def setup(self) -> None:
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        conns = self._connections()
        if conns is not None:
            conns.add(self.connection)

    def finish(self) -> None:
        conns = self._connections()
        if conns is not None:
            conns.remove(self.connection)
        super().finish()

    def _read_body(self, environ: dict[str, Any]) -> bytes | None:
        """The whole request body (None: unreadable, the connection must close)."""
        if environ.get("wsgi.input_terminated"):
            return bytes(environ["wsgi.input"].read())
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return None
        if length < 0:
            return None
        data = self.rfile.read(length) if length else b""
        return data if len(data) == length else None

    def run_wsgi(self) -> None:
        conns = self._connections()
        if conns is not None:
            conns.set_busy(self.connection, True)
        try:
            self._run_wsgi()
        finally:
            if conns is not None:
                conns.set_busy(self.connection, False)
                if conns.closing:
                    self.close_connection = True

    def _run_wsgi(self) -> None:
        if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        environ = self.make_environ()
        try:
            body = self._read_body(environ)
        except (OSError, ValueError):
            body = None
        if body is None:
            self.close_connection = True
            self.send_error(400, "Bad request body")
            return
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("wsgi.input_terminated", None)
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        started: list[Any] = []
        chunks: list[bytes] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            started[:] = [status, headers]
            return chunks.append

        try:
            result = self.server.app(environ, start_response)
            try:
                for chunk in result:
                    chunks.append(chunk)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except (ConnectionError, TimeoutError) as exc:
            self.connection_dropped(exc, environ)
            return
        except Exception:
            traceback.print_exc(file=sys.stderr)
            self.close_connection = True
            started[:] = ["500 INTERNAL SERVER ERROR", [("Content-Type", "text/plain")]]
            chunks[:] = [b"Internal Server Error\n"]
        status, headers = started
        code_str, _, reason = status.partition(" ")
        code = int(code_str)
        payload = b"".join(chunks)
        conns = self._connections()
        if conns is not None and conns.closing:
            self.close_connection = True
        lines = [
            f"{self.protocol_version} {code} {reason}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
        ]
        has_length = False
        for key, value in headers:
            low = key.lower()
            if low == "content-length":
                has_length = True
            elif low == "connection":
                if value.lower() == "close":
                    self.close_connection = True
                continue
            elif low == "transfer-encoding":
                continue
            lines.append(f"{key}: {value}")
        if not has_length and code >= 200 and code not in (204, 304):
            lines.append(f"Content-Length: {len(payload)}")
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        if self.command == "HEAD":
            payload = b""
        self.wfile.write(head + payload)
        self.log_request(code, len(payload))

    def connection_dropped(self, error: BaseException, environ: Any = None) -> None:
        self.close_connection = True

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass

    def log(self, type: str, message: str, *args: Any) -> None:
        if type == "error":
            super().log(type, message, *args)


class Sandbox:
    """A running sandbox server (see ``Sandbox.start``)."""

    def __init__(
        self, root: Path, backend: Backend, app: SandboxApp, server: BaseWSGIServer
    ) -> None:
        self.root = root
        self.backend = backend
        self.app = app
        self._server = server
        self.port = server.server_port
        self.host = "127.0.0.1"
        self.base_url = f"http://{self.host}:{self.port}"
        self._thread: threading.Thread | None = None
        self._stopped = False

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        root: Path | str,
        seed: Mapping[str, Any] | Path | str | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
    ) -> Sandbox:
        """Build the sandbox (state under ``root``, idempotent seed), not serving yet."""
        root = Path(root)
        normalised = load_seed(dict(seed) if isinstance(seed, Mapping) else seed)
        backend = Backend(root, Clock())
        backend.apply_seed(normalised)
        backend.store.start_writer()
        app = SandboxApp(backend)
        server = make_server(host, port, app, threaded=True, request_handler=_Handler)
        if isinstance(server, ThreadingMixIn):  # threaded=True: handler threads are daemons
            server.daemon_threads = True
        server.sandbox_connections = _Connections()  # type: ignore[attr-defined]
        sb = cls(root, backend, app, server)
        sb.host = host
        sb.base_url = f"http://{host}:{sb.port}"
        return sb

    @classmethod
    def start(
        cls, root: Path | str, seed: Mapping[str, Any] | Path | str | None = None, port: int = 0
    ) -> Sandbox:
        """Create the sandbox and serve from a thread; ``port=0`` picks a free port."""
        sb = cls.create(root, seed, port)
        sb._thread = threading.Thread(
            target=sb._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"sandbox-{sb.port}",
            daemon=True,
        )
        sb._thread.start()
        return sb

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` (used by the CLI)."""
        self._server.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        """Stop serving, close the socket and persist the state (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.sandbox_connections.close_idle()  # type: ignore[attr-defined]
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.backend.store.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- URLs ------------------------------------------------------------------------------

    @property
    def api_v3_url(self) -> str:
        """The GHES-style REST root (``base_url + "/api/v3"``)."""
        return f"{self.base_url}/api/v3"

    def git_url(self, owner_repo: str, token: str | None = None) -> str:
        """A clone URL, with the token as HTTP basic password when given."""
        if token is None:
            return f"{self.base_url}/{owner_repo}.git"
        cred = quote(token, safe="")
        return f"http://x-access-token:{cred}@{self.host}:{self.port}/{owner_repo}.git"

    # -- faults, counters, clock -----------------------------------------------------------

    def faults(
        self,
        method: str,
        path_regex: str,
        status: int = 502,
        count: int = 1,
        kind: str = "status",
        retry_after: int = 60,
        delay: float = 0.0,
        action: Callable[[], object] | None = None,
    ) -> None:
        """Script the next ``count`` requests matching ``method`` (or ``*``) and ``path_regex``.

        The regex is searched in the path (no ``/api/v3``) and, when the request has a query
        string, in ``path?query`` too (``/pulls[?].*page=2`` hits one page). Kinds: ``status``
        (answer ``status``), ``drop`` (close the connection), ``delay`` (sleep ``delay`` s,
        then answer), ``secondary`` (403/429 secondary rate limit, ``Retry-After:
        retry_after``), ``call`` (run ``action``, then answer: a race placed between two
        requests). A 0 s ``delay`` with ``count=N`` lets N pass first.
        """
        self.app.faults.add(
            Fault(
                method=method,
                path=path_regex,
                kind=kind,
                status=status,
                count=count,
                delay=delay,
                retry_after=retry_after,
                action=action,
            )
        )

    def clear_faults(self) -> None:
        """Drop all pending faults."""
        self.app.faults.clear()

    def pending_faults(self) -> list[dict[str, Any]]:
        """Faults not yet consumed."""
        return self.app.faults.list()

    def connections_opened(self) -> int:
        """TCP connections accepted so far (a client reusing keep-alive ones opens none)."""
        return int(self._server.sandbox_connections.opened)  # type: ignore[attr-defined]

    def counters(self) -> dict[str, Any]:
        """Counts: ``{"total": {requests, counted, not_modified, faults, errors, git},
        "endpoints": {"GET /repos/{owner}/
        {repo}/pulls": {...}}, "identities": {"user:alice": {...}}}``."""
        return self.app.counters.snapshot()

    def record_responses(self, on: bool = True) -> list[tuple[str, int, Any, dict[str, str]]]:
        """Start (or stop) keeping every REST response as (endpoint template, status, JSON body,
        headers), errors included; returns the live list (used by the OpenAPI contract test)."""
        self.app.recorder = [] if on else None
        return self.app.recorder if self.app.recorder is not None else []

    def reset_counters(self) -> None:
        """Zero all counters (the secondary-limit figures too)."""
        self.app.counters.reset()
        self.backend.secondary.reset_figures()

    def secondary_stats(self) -> dict[str, dict[str, Any]]:
        """GitHub's secondary limits as each identity met them since the last reset: the most
        requests in flight at once, the most REST and GraphQL points in any minute, and the
        refusals by reason: ``{"installation:5001": {"peak_inflight": 1, ...}}``."""
        return self.backend.secondary.stats()

    def reset_rate_limits(self) -> None:
        """Start fresh rate-limit windows for everyone."""
        self.app.limiter.reset_all()

    def spend_rate_limit(self, key: str, requests: int) -> None:
        """Another client of the identity ``key`` (``installation:5001``, ``user:alice``)
        spends ``requests`` of its hourly budget (the default ``core`` limit): its next
        answers show that much less remaining."""
        limit = int(self.backend.data["rate_limit"].get("core", 5000))
        for _ in range(requests):
            self.app.limiter.consume(key, limit)

    def set_rate_limit(self, core: int) -> None:
        """Change the default hourly budget (takes effect on the next request)."""
        with self.backend.lock:
            self.backend.data["rate_limit"]["core"] = int(core)
            self.backend.store.save()

    def set_fidelity(self, **settings: float) -> None:
        """Change GitHub-limit imitations (see ``fidelity.FIDELITY_DEFAULTS``; 0 turns one off)."""
        from .fidelity import FIDELITY_DEFAULTS

        unknown = set(settings) - set(FIDELITY_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown fidelity setting(s): {', '.join(sorted(unknown))}")
        with self.backend.lock:
            self.backend.data.setdefault("fidelity", {}).update(settings)
            self.backend.store.save()

    def set_clock(self, when: datetime | None) -> None:
        """Freeze the sandbox clock at ``when`` (aware); ``None`` returns to real time."""
        self.backend.clock.set(when)

    def set_clock_skew(self, seconds: float) -> None:
        """Run the server's wall clock (``Date``, App JWT window, token expiry) ``seconds``
        ahead of this machine's (negative: behind), as a GitHub whose clock differs."""
        self.backend.clock.set_skew(seconds)

    def advance_clock(self, seconds: float) -> datetime:
        """Move the sandbox clock forward."""
        return self.backend.clock.advance(seconds)

    def now(self) -> datetime:
        """The sandbox's current time (aware UTC)."""
        return self.backend.clock.now()

    # -- pure-Python helpers ---------------------------------------------------------------

    def add_user(self, login: str, token: str | None, type: str = "User") -> None:
        """Create a user (or bot user) with a personal token."""
        self.backend.add_user(login, token, type=type)

    def create_repo(
        self,
        owner: str,
        name: str,
        files: Mapping[str, Any] | None = None,
        default_branch: str = "main",
        private: bool = False,
        collaborators: Mapping[str, str] | None = None,
    ) -> str:
        """Create ``owner/name`` with an initial commit of ``files``; returns ``owner/name``."""
        full = self.backend.create_repo(
            owner,
            name,
            files=dict(files) if files else None,
            default_branch=default_branch,
            private=private,
        )
        if collaborators:
            with self.backend.lock:
                self.backend.repo(full)["collaborators"].update(collaborators)
                self.backend.store.save()
        return full

    def commit_files(
        self,
        repo: str,
        branch: str,
        files: Mapping[str, Any],
        message: str = "Update files",
        author: str | None = None,
        parent_branch: str | None = None,
    ) -> str:
        """Commit ``files`` on ``branch``; returns the new sha (PR heads follow).

        Values: text, bytes, None (delete) or {"content", "mode"}. A new branch starts at
        ``parent_branch``.
        """
        return self.backend.commit_files(
            repo, branch, dict(files), message, author=author, parent_branch=parent_branch
        )

    def bulk_commits(self, repo: str, specs: list[CommitSpec]) -> list[str]:
        """Write many commits with one ``git fast-import`` (see git.CommitSpec)."""
        return self.backend.bulk_commits(repo, specs)

    def open_pr(
        self,
        repo: str,
        head: str,
        base: str = "main",
        title: str = "A change",
        body: str | None = None,
        user: str = "agent-1",
        draft: bool = False,
    ) -> int:
        """Open a PR from branch ``head`` into ``base`` as ``user``; returns its number."""
        return self.backend.open_pr(repo, head, base, title, body, user, draft=draft)

    def bulk_open_prs(self, repo: str, prs: list[dict[str, Any]]) -> list[int]:
        """Open many PRs in one go: dicts with head, base, title, body, user, draft."""
        return self.backend.bulk_open_prs(repo, prs)

    def set_protection(self, repo: str, branch: str, body: Mapping[str, Any]) -> None:
        """Protect a branch (body as for ``PUT .../branches/{b}/protection``)."""
        self.backend.set_protection(repo, branch, dict(body))

    def add_ruleset(self, repo: str, body: Mapping[str, Any]) -> int:
        """Add a repository ruleset (body as for ``POST .../rulesets``); returns its id."""
        from .api_access import add_ruleset

        return int(add_ruleset(self.backend, repo, dict(body))["id"])

    def branch_sha(self, repo: str, branch: str) -> str | None:
        """The commit a branch points at."""
        return self.backend.git(repo).resolve(f"refs/heads/{branch}")

    def installation_token(self, installation_id: int) -> str:
        """Mint an installation token directly (tests that do not exercise the JWT flow)."""
        return self.backend.issue_installation_token(installation_id)[0]

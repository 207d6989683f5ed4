"""The dashboard server over loopback HTTP: read-only, strict headers, rebuilt when state moves."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import pytest

from capdaemon.dashboard.html import csp
from capdaemon.dashboard.server import ModelCache, make_server

from .conftest import DashState

pytestmark = pytest.mark.slow


@pytest.fixture
def served(dash_state: DashState, tmp_path: Path) -> Iterator[tuple[DashState, int]]:
    """A private copy of the state served on 127.0.0.1 at a free port."""
    ds = dash_state.copy(tmp_path / "copy")
    cache = ModelCache(ds.state_dir, ds.config(), lambda: ds.now, min_interval=0)
    server = make_server(cache, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield ds, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _request(
    port: int, method: str, path: str, host: str | None = None
) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Host": host} if host else {}
    conn.request(method, path, body=b"x" if method == "POST" else None, headers=headers)
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, dict(resp.getheaders()), body


def test_every_page_is_served_with_a_strict_csp(served: tuple[DashState, int]) -> None:
    """The four pages and a story answer 200 with the CSP and no-sniff/no-frame headers."""
    _, port = served
    for path in (
        "/",
        "/index.html",
        "/prs.html",
        "/agents.html",
        "/repos.html",
        "/pr/acme_widgets_3.html",
    ):
        status, headers, body = _request(port, "GET", path)
        assert status == 200, path
        assert headers["Content-Security-Policy"] == csp()
        assert "default-src 'none'" in csp() and "unsafe-inline" not in csp()
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert body.startswith("<!doctype html>")


def test_writes_are_refused_and_unknown_paths_are_404(served: tuple[DashState, int]) -> None:
    """POST/PUT/DELETE get 405 with Allow: GET, HEAD; nothing in the state changes."""
    ds, port = served
    before = {p: p.read_bytes() for p in ds.state_dir.rglob("*") if p.is_file()}
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, headers, _ = _request(port, method, "/prs.html")
        assert (status, headers.get("Allow")) == (405, "GET, HEAD")
    assert _request(port, "GET", "/pr/acme_widgets_99.html")[0] == 404
    assert _request(port, "GET", "/../../etc/passwd")[0] == 404
    assert {p: p.read_bytes() for p in ds.state_dir.rglob("*") if p.is_file()} == before


def test_a_foreign_host_header_is_refused(served: tuple[DashState, int]) -> None:
    """A page on another site that rebinds its name to 127.0.0.1 cannot read the dashboard."""
    _, port = served
    assert _request(port, "GET", "/", host=f"evil.example:{port}")[0] == 421
    assert _request(port, "GET", "/", host=f"localhost:{port}")[0] == 200


def test_search_filters_server_side(served: tuple[DashState, int]) -> None:
    """`?q=` narrows the table on the server (no script needed)."""
    _, port = served
    _, _, body = _request(port, "GET", "/prs.html?q=cron")
    assert '<span id="matching">1</span>' in body and "Tune the cron" in body
    assert "Fix a typo" not in body


def test_the_model_is_rebuilt_when_state_changes(served: tuple[DashState, int]) -> None:
    """After a tick writes new state, the pages show it (rebuilt in the background)."""
    ds, port = served
    assert "took 9.5 s" not in _request(port, "GET", "/")[2]
    metrics = ds.state_dir / "tick_metrics.json"
    metrics.write_text(
        metrics.read_text().replace('"last_tick_seconds": ', '"last_tick_seconds": 9.5, "x": ')
    )
    deadline = time.monotonic() + 20
    while "took 9.5 s" not in _request(port, "GET", "/")[2]:
        assert time.monotonic() < deadline, "the new state never showed"
        time.sleep(0.05)


def test_the_command_says_it_serves_read_only_on_loopback(dash_state: DashState) -> None:
    """`capdaemon dashboard` binds 127.0.0.1 by default and says so on its first line."""
    cmd = [sys.executable, "-m", "capdaemon.cli", "dashboard", "--port", "0"]
    cmd += ["--config", str(dash_state.config_dir), "--state", str(dash_state.state_dir)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("capdaemon dashboard: serving read-only on http://127.0.0.1:")
        assert "(loopback only: this machine)" in line
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        assert _request(port, "GET", "/prs.html")[0] == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


SECURITY_HEADERS = (
    "Content-Security-Policy",
    "X-Content-Type-Options",
    "Referrer-Policy",
    "X-Frame-Options",
    "Cross-Origin-Opener-Policy",
    "Cache-Control",
)


def _raw(port: int, request: bytes) -> tuple[int, dict[str, str]]:
    """Send bytes as they are (a method or request line http.client would not send)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in head[1:])
    return int(head[0].split()[1]), headers


def test_every_answer_carries_the_same_security_headers(served: tuple[DashState, int]) -> None:
    """200, 404, 405, 501 (an unknown method) and 414 (an overlong request line) all carry
    the CSP and the other security headers, with the same values."""
    _, port = served
    _, ok, _ = _request(port, "GET", "/index.html")
    answers = {
        404: _request(port, "GET", "/pr/nope.html")[:2],
        405: _request(port, "POST", "/index.html")[:2],
        501: _raw(port, b"BREW /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        414: _raw(port, b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n"),
    }
    for status, (got, headers) in answers.items():
        assert got == status
        assert {h: headers.get(h) for h in SECURITY_HEADERS} == {
            h: ok[h] for h in SECURITY_HEADERS
        }, status


class _Links(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [v for k, v in attrs if k in ("href", "action") and v]


def test_every_link_resolves_from_every_page_the_404_included(
    served: tuple[DashState, int],
) -> None:
    """Each local link or form target on each page, a 404 one folder down included, resolved
    against that page's URL as a browser does, answers 200."""
    _, port = served
    base = f"http://127.0.0.1:{port}"
    pages = ["/index.html", "/prs.html", "/queue.html", "/trends.html", "/agents.html"]
    pages += ["/repos.html", "/pr/acme_widgets_3.html", "/pr/nope.html", "/no/such/dir/x.html"]
    checked = set()
    for page in pages:
        status, _, body = _request(port, "GET", page)
        assert status in (200, 404), page
        for href in _Links(body).hrefs:
            url = urljoin(base + page, href)
            if not url.startswith(base) or url in checked:
                continue
            checked.add(url)
            assert _request(port, "GET", url[len(base) :])[0] == 200, (page, href)
    assert f"{base}/index.html" in checked and f"{base}/prs.html" in checked

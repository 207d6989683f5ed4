"""A local HTTP receiver for apprise's JSON webhook scheme (json://127.0.0.1:PORT/...)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """Collects the JSON bodies POSTed to it; `fail` > 0 answers that many requests with 500."""

    def __init__(self) -> None:
        self.got: list[dict[str, Any]] = []
        self.fail = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if outer.fail > 0:
                    outer.fail -= 1
                    self.send_response(500)
                else:
                    outer.got.append(json.loads(body))
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self._server.server_port}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def titles(self) -> list[str]:
        return [str(m.get("title")) for m in self.got]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

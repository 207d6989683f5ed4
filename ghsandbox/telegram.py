"""A Telegram Bot API sandbox on loopback: the methods capdaemon uses, with the API's shapes.

Served at ``/bot<TOKEN>/<method>`` like api.telegram.org; parameters come from the query
string, a form body or a JSON body (JSON-valued fields such as ``reply_markup`` may be JSON
text). Errors are the Bot API's bodies, ``{"ok": false, "error_code": N, "description": ...}``.
Admin endpoints under ``/admin/`` (JSON in, JSON out; a missing or bad field is a 400 naming
it) drive it from outside the process:

- ``press`` {chat_id, message_id, user_id, button?, data?}: a user presses a button;
- ``update`` {update}: queue any update (another type, a malformed callback_query);
- ``fault`` {method ("*": any), code, retry_after?, times?, description?}: the next calls
  answer 429/5xx/...; ``outage`` {seconds}: every method answers 502 (0 ends it);
- ``chat`` {chat_id, title?, type?}, ``user`` {user_id, username}, ``member`` {chat_id,
  user_id, status}: who is where;
- ``messages`` {chat_id?}, ``counters``, ``state`` (allowed_updates, queued, conflicts,
  polls open): reads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from socketserver import ThreadingMixIn
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from ghsandbox.telegram_state import DEFAULT_TOKEN, BotApiError, TelegramState

__all__ = ["DEFAULT_TOKEN", "BotApiError", "TelegramSandbox", "TelegramState"]

_BAD_GATEWAY = (
    "<html><head><title>502 Bad Gateway</title></head><body>502 Bad Gateway</body></html>"
)


class _QuietHandler(WSGIRequestHandler):
    """No access log (request lines would carry the bot token)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


def _params(request: Request) -> dict[str, Any]:
    out: dict[str, Any] = dict(request.args.items())
    out.update(request.form.items())
    if request.mimetype == "application/json":
        body = request.get_json(silent=True)
        if isinstance(body, dict):
            out.update(body)
    return out


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, mimetype="application/json")


def _field(
    p: dict[str, Any], name: str, kind: Callable[[Any], Any] = int, default: Any = ...
) -> Any:
    """One admin field, converted; BotApiError 400 naming it when missing or of the wrong kind."""
    if name not in p or p[name] in (None, ""):
        if default is not ...:
            return default
        raise BotApiError(400, f"Bad Request: field {name!r} is required")
    try:
        return kind(p[name])
    except (TypeError, ValueError):
        raise BotApiError(400, f"Bad Request: field {name!r}: {p[name]!r} is not valid") from None


def _obj(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        raw = json.loads(raw)
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    return raw


class TelegramSandbox:
    """A running Bot API sandbox: ``api_url`` is what capdaemon's ``telegram.api_url`` takes."""

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        bot_id: int = 123456,
        bot_username: str = "capdaemon_bot",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.state = TelegramState(token, bot_id, bot_username)
        self._server: BaseWSGIServer = make_server(
            host, port, self._wsgi, threaded=True, request_handler=_QuietHandler
        )
        if isinstance(self._server, ThreadingMixIn):  # threaded=True: handler threads are daemons
            self._server.daemon_threads = True
        self.port = self._server.server_port
        self.api_url = f"http://{host}:{self.port}"
        self._thread: threading.Thread | None = None
        self._stopped = False

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        return self._route(request)(environ, start_response)

    def _route(self, request: Request) -> Response:
        parts = request.path.strip("/").split("/")
        try:
            if parts[0] == "admin":
                return self._admin(parts[1:], _params(request))
            if len(parts) != 2 or not parts[0].startswith("bot"):
                raise BotApiError(404, "Not Found")
            if parts[0][3:] != self.state.token:
                raise BotApiError(401, "Unauthorized")
            if self.state.in_outage():
                return Response(_BAD_GATEWAY, status=502, mimetype="text/html")
            return _json({"ok": True, "result": self.state.call(parts[1], _params(request))})
        except BotApiError as exc:
            return _json(exc.body(), exc.code)
        except Exception as exc:  # never an HTML traceback: the API's JSON error shape
            return _json(
                BotApiError(500, f"Internal Server Error: {type(exc).__name__}").body(), 500
            )

    def _admin(self, parts: list[str], p: dict[str, Any]) -> Response:
        st = self.state
        name = parts[0] if len(parts) == 1 else ""
        if name == "press":
            result: Any = st.press(
                _field(p, "chat_id"),
                _field(p, "message_id"),
                _field(p, "user_id"),
                button=_field(p, "button", lambda v: v, 0),
                data=_field(p, "data", str, None),
            )
        elif name == "update":
            result = st.inject_update(_field(p, "update", _obj))
        elif name == "fault":
            st.inject_fault(
                _field(p, "method", str),
                _field(p, "code"),
                retry_after=_field(p, "retry_after", int, None),
                times=_field(p, "times", int, 1),
                description=_field(p, "description", str, None),
            )
            result = True
        elif name == "outage":
            st.start_outage(_field(p, "seconds", float))
            result = True
        elif name == "chat":
            st.add_chat(_field(p, "chat_id"), _field(p, "title", str, "owners"), p.get("type"))
            result = st.chats[_field(p, "chat_id")]
        elif name == "user":
            st.add_user(_field(p, "user_id"), _field(p, "username", str))
            result = True
        elif name == "member":
            st.set_member(_field(p, "chat_id"), _field(p, "user_id"), _field(p, "status", str))
            result = True
        elif name == "messages":
            result = st.list_messages(_field(p, "chat_id", int, None))
        elif name == "counters":
            result = dict(st.counters)
        elif name == "state":
            allowed = st.allowed_updates
            result = {
                "allowed_updates": sorted(allowed) if allowed is not None else None,
                "queued": len(st.updates),
                "conflicts": st.conflicts,
                "polling": st.polling,
            }
        else:
            raise BotApiError(404, "Not Found")
        return _json({"ok": True, "result": result})

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> TelegramSandbox:
        """Serve from a daemon thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"tg-sandbox-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        with self.state._cond:
            self.state._cond.notify_all()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> TelegramSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""A Telegram Bot API sandbox on loopback: the methods capdaemon uses, with the API's shapes.

Served at ``/bot<TOKEN>/<method>`` like api.telegram.org; parameters come from the query
string, a form body or a JSON body (JSON-valued fields such as ``reply_markup`` may be JSON
text). Errors are the Bot API's bodies, ``{"ok": false, "error_code": N, "description": ...}``
(401 for a bad token, 400 for a chat the bot cannot post to, 429 with
``parameters.retry_after``). Admin endpoints under ``/admin/`` press a button as a given user,
list messages, queue 429s and read per-method request counters.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

DEFAULT_TOKEN = "123456:sandbox-bot-token"
MAX_LONG_POLL = 50  # seconds, as the real API caps getUpdates' timeout


class BotApiError(Exception):
    """An error answered as the Bot API answers it."""

    def __init__(self, code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.retry_after = retry_after

    def body(self) -> dict[str, Any]:
        """The JSON error body."""
        out: dict[str, Any] = {
            "ok": False,
            "error_code": self.code,
            "description": self.description,
        }
        if self.retry_after is not None:
            out["parameters"] = {"retry_after": self.retry_after}
        return out


@dataclass
class _Message:
    message_id: int
    chat_id: int
    text: str
    date: int
    reply_markup: dict[str, Any] | None = None
    edit_date: int | None = None
    history: list[str] = field(default_factory=list)


class _QuietHandler(WSGIRequestHandler):
    """No access log (request lines would carry the bot token)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


class TelegramState:
    """The sandbox's bot, chats, users, messages and update queue (thread-safe)."""

    def __init__(self, token: str, bot_id: int, bot_username: str) -> None:
        self.token = token
        self.bot = {
            "id": bot_id,
            "is_bot": True,
            "first_name": "capdaemon",
            "username": bot_username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        self.chats: dict[int, dict[str, Any]] = {}
        self.users: dict[int, dict[str, Any]] = {}
        self.messages: dict[tuple[int, int], _Message] = {}
        self.updates: list[dict[str, Any]] = []
        self.answers: dict[str, dict[str, Any]] = {}
        self.query_ids: set[str] = set()
        self.counters: Counter[str] = Counter()
        self.rate_limits: dict[str, list[int]] = {}
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._update_ids = itertools.count(1000)
        self._query_ids = itertools.count(77000)

    # -- admin -----------------------------------------------------------------------------
    def add_chat(self, chat_id: int, title: str = "owners") -> None:
        """A group chat the bot is a member of."""
        with self._cond:
            self.chats[chat_id] = {"id": chat_id, "type": "group", "title": title}

    def add_user(self, user_id: int, username: str) -> None:
        """A Telegram user who can press buttons."""
        with self._cond:
            self.users[user_id] = {
                "id": user_id,
                "is_bot": False,
                "first_name": username,
                "username": username,
            }

    def press(
        self,
        chat_id: int,
        message_id: int,
        user_id: int,
        *,
        button: str | int = 0,
        data: str | None = None,
    ) -> dict[str, Any]:
        """Queue a callback_query as `user_id` pressing a button (index or text) of a message;
        `data` overrides the button's callback_data (a forged callback)."""
        with self._cond:
            msg = self.messages.get((chat_id, message_id))
            if msg is None:
                raise BotApiError(400, "Bad Request: message not found")
            user = self.users.get(user_id) or {
                "id": user_id,
                "is_bot": False,
                "first_name": f"user{user_id}",
            }
            if data is None:
                buttons = [
                    b for row in (msg.reply_markup or {}).get("inline_keyboard", []) for b in row
                ]
                chosen = None
                for i, b in enumerate(buttons):
                    if button == i or button == b.get("text"):
                        chosen = b
                        break
                if chosen is None:
                    raise BotApiError(400, f"Bad Request: no button {button!r} on the message")
                data = str(chosen.get("callback_data", ""))
            update: dict[str, Any] = {
                "update_id": next(self._update_ids),
                "callback_query": {
                    "id": str(next(self._query_ids)),
                    "from": user,
                    "message": self._message_json(msg),
                    "chat_instance": f"ci{chat_id}",
                    "data": data,
                },
            }
            self.query_ids.add(update["callback_query"]["id"])
            self.updates.append(update)
            self._cond.notify_all()
            return update

    def queue_rate_limit(self, method: str, retry_after: int, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with 429 and `retry_after`."""
        with self._cond:
            self.rate_limits[method] = [retry_after] * times

    def list_messages(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        """Messages as the API returns them, plus their edit history."""
        with self._cond:
            return [
                {**self._message_json(m), "history": list(m.history)}
                for m in self.messages.values()
                if chat_id is None or m.chat_id == chat_id
            ]

    # -- API methods ----------------------------------------------------------------------
    def _message_json(self, m: _Message) -> dict[str, Any]:
        out: dict[str, Any] = {
            "message_id": m.message_id,
            "from": self.bot,
            "chat": self.chats.get(m.chat_id, {"id": m.chat_id, "type": "group"}),
            "date": m.date,
            "text": m.text,
        }
        if m.reply_markup:
            out["reply_markup"] = m.reply_markup
        if m.edit_date is not None:
            out["edit_date"] = m.edit_date
        return out

    def call(self, method: str, params: Mapping[str, Any]) -> Any:
        """Run one API method; raises BotApiError."""
        with self._cond:
            self.counters[method] += 1
            queued = self.rate_limits.get(method)
            if queued:
                after = queued.pop(0)
                raise BotApiError(429, f"Too Many Requests: retry after {after}", after)
        handler = _METHODS.get(method.lower())
        if handler is None:
            raise BotApiError(404, "Not Found")
        return handler(self, params)

    def _chat(self, params: Mapping[str, Any]) -> int:
        raw = params.get("chat_id")
        try:
            chat_id = int(str(raw))
        except ValueError:
            raise BotApiError(400, "Bad Request: chat not found") from None
        if chat_id not in self.chats:
            raise BotApiError(400, "Bad Request: chat not found")
        return chat_id

    def _target(self, params: Mapping[str, Any]) -> _Message:
        chat_id = self._chat(params)
        try:
            message_id = int(str(params.get("message_id")))
        except ValueError:
            raise BotApiError(400, "Bad Request: message identifier is not specified") from None
        msg = self.messages.get((chat_id, message_id))
        if msg is None:
            raise BotApiError(400, "Bad Request: message to edit not found")
        return msg

    def get_me(self, _params: Mapping[str, Any]) -> Any:
        return self.bot

    def send_message(self, params: Mapping[str, Any]) -> Any:
        with self._cond:
            chat_id = self._chat(params)
            text = str(params.get("text") or "")
            if not text.strip():
                raise BotApiError(400, "Bad Request: message text is empty")
            msg = _Message(
                next(self._ids), chat_id, text, int(time.time()), _markup(params), history=[text]
            )
            self.messages[(chat_id, msg.message_id)] = msg
            return self._message_json(msg)

    def edit_message_text(self, params: Mapping[str, Any]) -> Any:
        with self._cond:
            msg = self._target(params)
            text = str(params.get("text") or "")
            if not text.strip():
                raise BotApiError(400, "Bad Request: message text is empty")
            markup = _markup(params)
            if text == msg.text and markup == msg.reply_markup:
                raise BotApiError(
                    400,
                    "Bad Request: message is not modified: specified new message content and "
                    "reply markup are exactly the same as a current content and reply markup "
                    "of the message",
                )
            msg.text, msg.reply_markup, msg.edit_date = text, markup, int(time.time())
            msg.history.append(text)
            return self._message_json(msg)

    def edit_message_reply_markup(self, params: Mapping[str, Any]) -> Any:
        with self._cond:
            msg = self._target(params)
            markup = _markup(params)
            if markup == msg.reply_markup:
                raise BotApiError(400, "Bad Request: message is not modified")
            msg.reply_markup, msg.edit_date = markup, int(time.time())
            return self._message_json(msg)

    def answer_callback_query(self, params: Mapping[str, Any]) -> Any:
        with self._cond:
            qid = str(params.get("callback_query_id") or "")
            if qid not in self.query_ids or qid in self.answers:
                raise BotApiError(
                    400,
                    "Bad Request: query is too old and response timeout expired or query ID "
                    "is invalid",
                )
            self.answers[qid] = {"text": params.get("text"), "show_alert": params.get("show_alert")}
            return True

    def get_updates(self, params: Mapping[str, Any]) -> Any:
        try:
            offset = int(str(params.get("offset") or 0))
            timeout = min(MAX_LONG_POLL, max(0, int(float(str(params.get("timeout") or 0)))))
            limit = min(100, max(1, int(str(params.get("limit") or 100))))
        except ValueError:
            raise BotApiError(400, "Bad Request: wrong parameter value") from None
        deadline = time.monotonic() + timeout
        with self._cond:
            if offset:  # an offset confirms every update before it: never returned again
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
            while not self.updates and time.monotonic() < deadline:
                self._cond.wait(timeout=max(0.0, deadline - time.monotonic()))
            return list(self.updates[:limit])


_METHODS = {
    "getme": TelegramState.get_me,
    "sendmessage": TelegramState.send_message,
    "editmessagetext": TelegramState.edit_message_text,
    "editmessagereplymarkup": TelegramState.edit_message_reply_markup,
    "answercallbackquery": TelegramState.answer_callback_query,
    "getupdates": TelegramState.get_updates,
}


def _markup(params: Mapping[str, Any]) -> dict[str, Any] | None:
    raw = params.get("reply_markup")
    if raw in (None, ""):
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise BotApiError(400, "Bad Request: can't parse reply keyboard markup JSON") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("inline_keyboard", []), list):
        raise BotApiError(400, "Bad Request: can't parse inline keyboard button")
    for row in raw.get("inline_keyboard", []):
        for b in row if isinstance(row, list) else [None]:
            if not isinstance(b, dict) or not b.get("text"):
                raise BotApiError(400, "Bad Request: can't parse inline keyboard button")
            if len(str(b.get("callback_data", "")).encode()) > 64:
                raise BotApiError(400, "Bad Request: BUTTON_DATA_INVALID")
    return raw if raw.get("inline_keyboard") else None


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
                return self._admin(parts[1:], request)
            if len(parts) != 2 or not parts[0].startswith("bot"):
                raise BotApiError(404, "Not Found")
            if parts[0][3:] != self.state.token:
                raise BotApiError(401, "Unauthorized")
            return _json({"ok": True, "result": self.state.call(parts[1], _params(request))})
        except BotApiError as exc:
            return _json(exc.body(), exc.code)

    def _admin(self, parts: list[str], request: Request) -> Response:
        p = _params(request)
        if parts == ["press"]:
            update = self.state.press(
                int(p["chat_id"]),
                int(p["message_id"]),
                int(p["user_id"]),
                button=p.get("button", 0),
                data=p.get("data"),
            )
            return _json({"ok": True, "result": update})
        if parts == ["messages"]:
            chat = p.get("chat_id")
            return _json({"ok": True, "result": self.state.list_messages(chat and int(chat))})
        if parts == ["counters"]:
            return _json({"ok": True, "result": dict(self.state.counters)})
        raise BotApiError(404, "Not Found")

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

"""The Telegram sandbox's bot: chats, members, messages, the update queue and injected faults.

The methods answer as the Bot API documents them: getUpdates confirms by `offset` (a negative
offset keeps only the last -offset updates), keeps the last `allowed_updates` (updates of other
types are not queued), and a second getUpdates on the token ends the first with 409 Conflict.
Errors are BotApiError with the API's code and description (429 with retry_after).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TOKEN = "123456:sandbox-bot-token"
MAX_LONG_POLL = 50  # seconds, as the real API caps getUpdates' timeout
CONFLICT = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
# the types an empty or absent allowed_updates leaves out (the Bot API's documented default)
OPT_IN_TYPES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
MEMBER_STATUSES = frozenset({"creator", "administrator", "member", "restricted", "left", "kicked"})


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


def chat_type(chat_id: int) -> str:
    """The type the Bot API reports for an id: users are positive, `-100…` ids are
    supergroups (or channels), other negative ids basic groups."""
    if chat_id > 0:
        return "private"
    return "supergroup" if str(chat_id).startswith("-100") else "group"


def update_type(update: Mapping[str, Any]) -> str:
    """An update's type: its one field besides update_id ("" when there is none)."""
    return next((k for k in update if k != "update_id"), "")


@dataclass
class Fault:
    """An injected answer: `code` (429 with retry_after, 5xx, …) for the next `times` calls."""

    code: int
    description: str
    retry_after: int | None = None
    times: int = 1


class TelegramState:
    """The sandbox's bot, chats, users, messages and update queue (thread-safe)."""

    def __init__(self, token: str, bot_id: int, bot_username: str) -> None:
        self.token = token
        self.bot_id = bot_id
        self.bot: dict[str, Any] = {
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
        self.members: dict[tuple[int, int], str] = {}  # (chat, user) → status; absent: member
        self.messages: dict[tuple[int, int], _Message] = {}
        self.updates: list[dict[str, Any]] = []
        self.answers: dict[str, dict[str, Any]] = {}
        self.query_ids: set[str] = set()
        self.counters: Counter[str] = Counter()
        self.faults: dict[str, list[Fault]] = {}  # method (or "*") → queued answers
        self.outage_until = 0.0  # monotonic: every method answers 502 before it
        self.allowed_updates: frozenset[str] | None = None  # None: all but OPT_IN_TYPES
        self.conflicts = 0  # getUpdates calls ended by a newer one (409)
        self.polling = 0  # getUpdates calls waiting right now
        self._poll_gen = 0
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._update_ids = itertools.count(1000)
        self._query_ids = itertools.count(77000)

    # -- admin -----------------------------------------------------------------------------
    def add_chat(self, chat_id: int, title: str = "owners", kind: str | None = None) -> None:
        """A chat the bot is a member of; its type follows the id unless `kind` is given."""
        with self._cond:
            self.chats[chat_id] = {"id": chat_id, "type": kind or chat_type(chat_id)}
            if chat_id < 0:
                self.chats[chat_id]["title"] = title

    def add_user(self, user_id: int, username: str) -> None:
        """A Telegram user who can press buttons."""
        with self._cond:
            self.users[user_id] = {
                "id": user_id,
                "is_bot": False,
                "first_name": username,
                "username": username,
            }

    def set_member(self, chat_id: int, user_id: int, status: str) -> None:
        """A user's (or the bot's) status in a chat: member, administrator, left, kicked, …"""
        if status not in MEMBER_STATUSES:
            raise BotApiError(400, f"Bad Request: unknown member status {status!r}")
        with self._cond:
            self.members[(chat_id, user_id)] = status

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
                data = _button_data(msg, button)
            qid = str(next(self._query_ids))
            query: dict[str, Any] = {
                "id": qid,
                "from": user,
                "message": self._message_json(msg),
                "chat_instance": f"ci{chat_id}",
                "data": data,
            }
            self.query_ids.add(qid)
            return self._queue({"callback_query": query})

    def inject_update(self, update: Mapping[str, Any]) -> dict[str, Any]:
        """Queue any update as given (another type, a malformed callback_query, …); an
        update_id is assigned unless it has one. A callback_query's id becomes answerable."""
        with self._cond:
            query = update.get("callback_query")
            if isinstance(query, Mapping) and isinstance(query.get("id"), str):
                self.query_ids.add(str(query["id"]))
            return self._queue(dict(update))

    def _queue(self, update: dict[str, Any]) -> dict[str, Any]:
        """Queue an update unless allowed_updates leaves its type out (lock held)."""
        update.setdefault("update_id", next(self._update_ids))
        kind = update_type(update)
        allowed = self.allowed_updates
        if (allowed is None and kind not in OPT_IN_TYPES) or (allowed and kind in allowed):
            self.updates.append(update)
            self._cond.notify_all()
            return update
        return {**update, "dropped": f"{kind} is not in allowed_updates"}

    def inject_fault(
        self,
        method: str,
        code: int,
        *,
        retry_after: int | None = None,
        times: int = 1,
        description: str | None = None,
    ) -> None:
        """Answer the next `times` calls of `method` ("*": any method) with `code`."""
        if not 400 <= code <= 599 or times < 1:
            raise BotApiError(400, "Bad Request: a fault needs a 4xx/5xx code and times >= 1")
        if code == 429 and retry_after is None:
            retry_after = 1
        text = description or (
            f"Too Many Requests: retry after {retry_after}" if code == 429 else _REASONS.get(code)
        )
        with self._cond:
            self.faults.setdefault(method.lower(), []).append(
                Fault(code, text or f"Error {code}", retry_after, times)
            )

    def queue_rate_limit(self, method: str, retry_after: int, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with 429 and `retry_after`."""
        self.inject_fault(method, 429, retry_after=retry_after, times=times)

    def start_outage(self, seconds: float) -> None:
        """Every method answers 502 Bad Gateway for `seconds` (0 ends an outage)."""
        with self._cond:
            self.outage_until = time.monotonic() + max(0.0, seconds)

    def in_outage(self) -> bool:
        """True while an outage runs."""
        return time.monotonic() < self.outage_until

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
            "chat": self.chats.get(m.chat_id, {"id": m.chat_id, "type": chat_type(m.chat_id)}),
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
            for key in (method.lower(), "*"):
                queued = self.faults.get(key)
                if queued:
                    fault = queued[0]
                    fault.times -= 1
                    if fault.times <= 0:
                        queued.pop(0)
                    raise BotApiError(fault.code, fault.description, fault.retry_after)
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

    def _status(self, chat_id: int, user_id: int) -> str:
        return self.members.get((chat_id, user_id), "member")

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

    def get_chat(self, params: Mapping[str, Any]) -> Any:
        with self._cond:
            return dict(self.chats[self._chat(params)])

    def get_chat_member(self, params: Mapping[str, Any]) -> Any:
        with self._cond:
            chat_id = self._chat(params)
            try:
                user_id = int(str(params.get("user_id")))
            except ValueError:
                raise BotApiError(400, "Bad Request: invalid user_id specified") from None
            if user_id == self.bot_id:
                user: dict[str, Any] = self.bot
            elif user_id in self.users:
                user = self.users[user_id]
            else:
                raise BotApiError(400, "Bad Request: PARTICIPANT_ID_INVALID")
            out: dict[str, Any] = {"status": self._status(chat_id, user_id), "user": user}
            if out["status"] == "restricted":
                out["can_send_messages"] = False
            return out

    def send_message(self, params: Mapping[str, Any]) -> Any:
        with self._cond:
            chat_id = self._chat(params)
            status = self._status(chat_id, self.bot_id)
            if status in ("left", "kicked"):
                kind = "channel" if self.chats[chat_id]["type"] == "channel" else "group"
                raise BotApiError(403, f"Forbidden: bot is not a member of the {kind} chat")
            if status == "restricted":
                raise BotApiError(400, "Bad Request: not enough rights to send text messages")
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
        allowed = _allowed(params.get("allowed_updates"))
        deadline = time.monotonic() + timeout
        with self._cond:
            self._poll_gen += 1
            mine = self._poll_gen
            self._cond.notify_all()  # an older long poll on this token ends with 409
            if allowed is not None:
                self.allowed_updates = allowed or None
            if offset > 0:  # an offset confirms every update before it: never returned again
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
            elif offset < 0:  # the last -offset updates; all previous ones are forgotten
                self.updates = self.updates[offset:]
            self.polling += 1
            try:
                while not self.updates and time.monotonic() < deadline:
                    self._cond.wait(timeout=max(0.0, deadline - time.monotonic()))
                    if self._poll_gen != mine:
                        self.conflicts += 1
                        raise BotApiError(409, CONFLICT)
            finally:
                self.polling -= 1
            return list(self.updates[:limit])


_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    409: CONFLICT,
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}

_METHODS = {
    "getme": TelegramState.get_me,
    "getchat": TelegramState.get_chat,
    "getchatmember": TelegramState.get_chat_member,
    "sendmessage": TelegramState.send_message,
    "editmessagetext": TelegramState.edit_message_text,
    "editmessagereplymarkup": TelegramState.edit_message_reply_markup,
    "answercallbackquery": TelegramState.answer_callback_query,
    "getupdates": TelegramState.get_updates,
}


def _button_data(msg: _Message, button: str | int) -> str:
    """The callback_data of a message's button, chosen by index or text."""
    buttons = [b for row in (msg.reply_markup or {}).get("inline_keyboard", []) for b in row]
    for i, b in enumerate(buttons):
        if button == i or button == b.get("text") or str(button) == str(i):
            return str(b.get("callback_data", ""))
    raise BotApiError(400, f"Bad Request: no button {button!r} on the message")


def _allowed(raw: object) -> frozenset[str] | None:
    """allowed_updates as sent (a list, or its JSON text); None when not sent."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise BotApiError(400, "Bad Request: can't parse allowed updates") from None
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise BotApiError(400, "Bad Request: can't parse allowed updates")
    return frozenset(raw)


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

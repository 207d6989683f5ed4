"""A thin, synchronous Telegram Bot API client over pyTelegramBotAPI (telebot).

telebot is sync (the daemon is a BlockingScheduler, no event loop) and lets the API base URL
point elsewhere (the sandbox, a self-hosted Bot API server). Its URL setting is process-wide
(`telebot.apihelper.API_URL`): each call sets it, so one process talks to one Bot API at a
time (the daemon has one client). Every failure becomes a one-line TelegramError (bad token,
unreachable API, chat not found, 409 another poller, 429 with retry_after).

A 429's `retry_after` holds every later call of the client (not only the refused one) until it
has passed: the client refuses them itself, without a request. Updates are read as JSON and
parsed one by one (`parse_update`): one malformed update becomes a Tap with `error` set, never
a failed batch, so the offset always moves past it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

DEFAULT_TIMEOUT = 10  # seconds per request (long polls add their own timeout)
ALLOWED_UPDATES = ["callback_query"]


class TelegramError(RuntimeError):
    """A Bot API call failed; the message is one line and never holds the token."""

    def __init__(
        self, message: str, *, code: int | None = None, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


@dataclass(frozen=True)
class Tap:
    """One callback_query of getUpdates: who pressed what, on which message."""

    update_id: int
    query_id: str
    user_id: int
    username: str
    chat_id: int | None
    message_id: int | None
    data: str
    error: str = ""  # why the update could not be read ("" for a well-formed callback_query)
    kind: str = "callback_query"  # the update's type


def _int(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}.{key} is missing or not an integer")
    return value


def _obj(obj: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}.{key} is missing or not an object")
    return value


def parse_update(raw: object) -> Tap:
    """One getUpdates entry as a Tap. Never raises: an update that is not a well-formed
    callback_query keeps its update_id (-1 when it has none) and says why in `error`."""
    if not isinstance(raw, Mapping):
        return Tap(-1, "", 0, "", None, None, "", error="the update is not an object", kind="")
    uid = raw.get("update_id")
    update_id = uid if isinstance(uid, int) and not isinstance(uid, bool) else -1
    kind = next((str(k) for k in raw if k != "update_id"), "")
    bare = Tap(update_id, "", 0, "", None, None, "", kind=kind)
    if update_id < 0:
        return replace(bare, error="update_id is missing")
    if kind != "callback_query":
        return replace(bare, error=f"not a callback query ({kind or 'empty'})")
    q = raw["callback_query"]
    if not isinstance(q, Mapping):
        return replace(bare, error="callback_query is not an object")
    qid = q.get("id")
    bare = replace(bare, query_id=qid if isinstance(qid, str) else "")
    for read in (_message_of, _callback_query):  # the message first: a bad tap keeps it
        try:
            bare = read(bare, q)
        except ValueError as exc:
            return replace(bare, error=str(exc))
    return bare


def _message_of(bare: Tap, q: Mapping[str, Any]) -> Tap:
    """The chat and message a callback_query's button was on (None when it has no message)."""
    msg = q.get("message")
    if not isinstance(msg, Mapping):
        return bare
    return replace(
        bare,
        message_id=_int(msg, "message_id", "callback_query.message"),
        chat_id=_int(_obj(msg, "chat", "callback_query.message"), "id", "message.chat"),
    )


def _callback_query(bare: Tap, q: Mapping[str, Any]) -> Tap:
    """The fields of a callback_query; ValueError naming the first one that is missing."""
    if not bare.query_id:
        raise ValueError("callback_query.id is missing")
    user = _obj(q, "from", "callback_query")
    user_id = _int(user, "id", "callback_query.from")
    data = q.get("data")
    if data is not None and not isinstance(data, str):
        raise ValueError("callback_query.data is not a string")
    name = user.get("username")
    return replace(
        bare, user_id=user_id, username=name if isinstance(name, str) else "", data=data or ""
    )


class TelegramClient:
    """getMe, sendMessage with an inline keyboard, edits, answerCallbackQuery, getUpdates."""

    def __init__(self, api_url: str, token: str, *, timeout: int = DEFAULT_TIMEOUT) -> None:
        import telebot
        from telebot import apihelper

        if not token or ":" not in token:
            raise TelegramError("telegram: the bot token is not of the form <id>:<secret>")
        self._url = api_url.rstrip("/") + "/bot{0}/{1}"
        apihelper.RETRY_ON_ERROR = False
        self._bot = telebot.TeleBot(token, threaded=False, parse_mode=None)
        self._token = token
        self.timeout = timeout
        self.requests = 0  # API calls made (the idle poll job must make none)
        self.bot_id: int | None = None  # known after get_me
        self.paused_until = 0.0  # wall-clock time (epoch s) before which a 429 holds every call

    def pause_left(self) -> float:
        """Seconds a 429's retry_after still holds the client (0 when it does not)."""
        return max(0.0, self.paused_until - time.time())

    def _call(self, method: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import requests
        from telebot import apihelper
        from telebot.apihelper import ApiHTTPException, ApiTelegramException

        left = self.pause_left()
        if left > 0:
            raise TelegramError(
                f"telegram {method}: not sent, the Bot API asked to wait {left:.0f} s more (429)",
                code=429,
                retry_after=int(left) + 1,
            )
        self.requests += 1
        try:
            # no lock: a long poll must not hold up a send; telebot annotates API_URL as None
            apihelper.API_URL = self._url  # type: ignore[assignment]
            return fn(*args, **kwargs)
        except ApiTelegramException as exc:
            params = (exc.result_json or {}).get("parameters") or {}
            retry = params.get("retry_after")
            desc = str(exc.description or "").replace("\n", " ")
            hint = _HINTS.get(exc.error_code, "")
            after = int(retry) if isinstance(retry, int) and not isinstance(retry, bool) else None
            if exc.error_code == 429:
                after = max(1, after or 1)
                self.paused_until = max(self.paused_until, time.time() + after)
            raise TelegramError(
                f"telegram {method}: {exc.error_code} {desc}{hint}",
                code=exc.error_code,
                retry_after=after,
            ) from None
        except ApiHTTPException as exc:
            raise TelegramError(f"telegram {method}: HTTP {exc.result.status_code}") from None
        except requests.RequestException as exc:
            kind = type(exc).__name__
            raise TelegramError(f"telegram {method}: API unreachable ({kind})") from None

    def get_me(self) -> str:
        """The bot's username (checks the token)."""
        me = self._call("getMe", self._bot.get_me)
        self.bot_id = int(me.id)
        return str(me.username or me.id)

    def chat(self, chat_id: int) -> dict[str, Any]:
        """getChat: the chat's id, type and title as JSON."""
        from telebot import apihelper

        return dict(self._call("getChat", apihelper.get_chat, self._token, chat_id))

    def member_status(self, chat_id: int, user_id: int) -> str:
        """getChatMember: a user's status in a chat (member, administrator, left, …)."""
        from telebot import apihelper

        got = self._call("getChatMember", apihelper.get_chat_member, self._token, chat_id, user_id)
        status = str(got.get("status", ""))
        if status == "restricted" and got.get("can_send_messages") is False:
            return "restricted (cannot send messages)"
        return status

    def send(self, chat_id: int, text: str, buttons: list[tuple[str, str]]) -> int:
        """Post `text` with one row of inline buttons (label, callback_data); its message id."""
        from telebot.types import InlineKeyboardButton, InlineKeyboardMarkup

        markup = InlineKeyboardMarkup()
        markup.row(*(InlineKeyboardButton(label, callback_data=data) for label, data in buttons))
        msg = self._call(
            "sendMessage",
            self._bot.send_message,
            chat_id,
            text,
            reply_markup=markup,
            timeout=self.timeout,
        )
        return int(msg.message_id)

    def edit(self, chat_id: int, message_id: int, text: str) -> None:
        """Replace a message's text and drop its buttons ("not modified" is not an error)."""
        try:
            self._call(
                "editMessageText",
                self._bot.edit_message_text,
                text,
                chat_id=chat_id,
                message_id=message_id,
                timeout=self.timeout,
            )
        except TelegramError as exc:
            if "not modified" not in str(exc):
                raise

    def answer(self, query_id: str, text: str) -> None:
        """Answer a callback query (the toast the tapper sees)."""
        self._call(
            "answerCallbackQuery",
            self._bot.answer_callback_query,
            query_id,
            text=text[:200],
        )

    def updates(self, offset: int, timeout: int) -> list[Tap]:
        """getUpdates from `offset`, long-polling up to `timeout` s (0: answer at once), asking
        for callback queries only; each update parsed on its own (see parse_update)."""
        from telebot import apihelper

        payload = {
            "offset": offset,
            "timeout": timeout + self.timeout,  # the HTTP read timeout
            "long_polling_timeout": max(0, timeout),  # the API's long poll
            "allowed_updates": json.dumps(ALLOWED_UPDATES),
        }
        if not offset:
            del payload["offset"]
        # telebot's get_updates reads a 0 long poll as its 10 s default; its request helper
        # takes the payload as given
        raw = self._call(
            "getUpdates", apihelper._make_request, self._token, "getUpdates", params=payload
        )
        if not isinstance(raw, list):
            raise TelegramError("telegram getUpdates: the result is not a list")
        return [parse_update(u) for u in raw]


_HINTS = {
    401: " (check the bot token)",
    409: " (another process reads this bot's updates: only one daemon may use a token)",
}

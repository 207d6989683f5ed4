"""A thin, synchronous Telegram Bot API client over pyTelegramBotAPI (telebot).

telebot is sync (the daemon is a BlockingScheduler, no event loop) and lets the API base URL
point elsewhere (the sandbox, a self-hosted Bot API server). Its URL setting is process-wide
(`telebot.apihelper.API_URL`): each call sets it, so one process talks to one Bot API at a
time (the daemon has one client). Every failure becomes a one-line TelegramError (bad token,
unreachable API, chat not found, 429 with retry_after).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_TIMEOUT = 10  # seconds per request (long polls add their own timeout)


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

    def _call(self, method: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import requests
        from telebot import apihelper
        from telebot.apihelper import ApiHTTPException, ApiTelegramException

        self.requests += 1
        try:
            # no lock: a long poll must not hold up a send; telebot annotates API_URL as None
            apihelper.API_URL = self._url  # type: ignore[assignment]
            return fn(*args, **kwargs)
        except ApiTelegramException as exc:
            params = (exc.result_json or {}).get("parameters") or {}
            retry = params.get("retry_after")
            desc = str(exc.description or "").replace("\n", " ")
            hint = " (check the bot token)" if exc.error_code == 401 else ""
            raise TelegramError(
                f"telegram {method}: {exc.error_code} {desc}{hint}",
                code=exc.error_code,
                retry_after=int(retry) if isinstance(retry, int) else None,
            ) from None
        except ApiHTTPException as exc:
            raise TelegramError(f"telegram {method}: HTTP {exc.result.status_code}") from None
        except requests.RequestException as exc:
            kind = type(exc).__name__
            raise TelegramError(f"telegram {method}: API unreachable ({kind})") from None

    def get_me(self) -> str:
        """The bot's username (checks the token)."""
        me = self._call("getMe", self._bot.get_me)
        return str(me.username or me.id)

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
        """getUpdates from `offset`, long-polling up to `timeout` s; callback queries only."""
        raw = self._call(
            "getUpdates",
            self._bot.get_updates,
            offset=offset or None,
            timeout=timeout + self.timeout,
            long_polling_timeout=max(1, timeout),  # telebot reads 0 as its default
            allowed_updates=["callback_query"],
        )
        out: list[Tap] = []
        for u in raw:
            q = u.callback_query
            if q is None:
                out.append(Tap(u.update_id, "", 0, "", None, None, ""))
                continue
            msg = q.message
            out.append(
                Tap(
                    update_id=int(u.update_id),
                    query_id=str(q.id),
                    user_id=int(q.from_user.id),
                    username=str(q.from_user.username or ""),
                    chat_id=int(msg.chat.id) if msg is not None else None,
                    message_id=int(msg.message_id) if msg is not None else None,
                    data=str(q.data or ""),
                )
            )
        return out

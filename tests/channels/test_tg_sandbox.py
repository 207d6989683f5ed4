"""The Telegram Bot API sandbox speaks the documented shapes and error bodies over HTTP."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from capdaemon.channels.telegram import TelegramClient, TelegramError
from ghsandbox.telegram import DEFAULT_TOKEN, TelegramSandbox

from .conftest import ALICE_TG, CHAT


def _call(tg: TelegramSandbox, method: str, token: str = DEFAULT_TOKEN, **params: Any) -> Any:
    req = urllib.request.Request(
        f"{tg.api_url}/bot{token}/{method}",
        data=json.dumps(params).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_error_bodies(tgsb: TelegramSandbox) -> None:
    """401 bad token, 400 unknown chat, 404 unknown method, 429 with retry_after."""
    assert _call(tgsb, "getMe", token="1:nope") == (
        401,
        {"ok": False, "error_code": 401, "description": "Unauthorized"},
    )
    code, body = _call(tgsb, "sendMessage", chat_id=42, text="hi")
    assert (code, body["description"]) == (400, "Bad Request: chat not found")
    assert _call(tgsb, "noSuchMethod")[0] == 404
    tgsb.state.queue_rate_limit("sendMessage", 7)
    code, body = _call(tgsb, "sendMessage", chat_id=CHAT, text="hi")
    assert code == 429 and body["parameters"] == {"retry_after": 7}
    assert body["description"] == "Too Many Requests: retry after 7"
    assert _call(tgsb, "sendMessage", chat_id=CHAT, text="hi")[0] == 200


def test_message_keyboard_edit_and_press(tgsb: TelegramSandbox) -> None:
    """sendMessage returns a Message with the keyboard; a press queues a callback_query with
    the message; offsets confirm; editMessageReplyMarkup drops the keyboard."""
    kb = {"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]}
    _, sent = _call(tgsb, "sendMessage", chat_id=CHAT, text="q?", reply_markup=kb)
    msg = sent["result"]
    assert msg["chat"]["id"] == CHAT and msg["reply_markup"] == kb and msg["from"]["is_bot"]
    tgsb.state.press(CHAT, msg["message_id"], ALICE_TG, button="Yes")
    _, got = _call(tgsb, "getUpdates", timeout=0)
    (update,) = got["result"]
    q = update["callback_query"]
    assert q["data"] == "y" and q["from"]["id"] == ALICE_TG and q["message"]["text"] == "q?"
    assert _call(tgsb, "answerCallbackQuery", callback_query_id=q["id"], text="ok")[1] == {
        "ok": True,
        "result": True,
    }
    assert _call(tgsb, "answerCallbackQuery", callback_query_id=q["id"])[0] == 400
    assert _call(tgsb, "getUpdates", offset=update["update_id"] + 1)[1]["result"] == []
    code, edited = _call(tgsb, "editMessageReplyMarkup", chat_id=CHAT, message_id=msg["message_id"])
    assert code == 200 and "reply_markup" not in edited["result"]
    code, body = _call(
        tgsb, "editMessageText", chat_id=CHAT, message_id=msg["message_id"], text="q?"
    )
    assert code == 400 and "message is not modified" in body["description"]
    too_long = {"inline_keyboard": [[{"text": "x", "callback_data": "d" * 65}]]}
    assert _call(tgsb, "sendMessage", chat_id=CHAT, text="x", reply_markup=too_long)[0] == 400


def test_long_poll_returns_when_a_button_is_pressed(tgsb: TelegramSandbox) -> None:
    """getUpdates with a timeout waits, and returns as soon as an update arrives."""
    client = TelegramClient(tgsb.api_url, DEFAULT_TOKEN)
    mid = client.send(CHAT, "q", [("Go", "g")])
    started = time.monotonic()
    assert client.updates(0, 1) == []
    assert time.monotonic() - started >= 0.9
    timer = threading.Timer(0.3, tgsb.state.press, (CHAT, mid, ALICE_TG))
    timer.start()
    started = time.monotonic()
    (tap,) = client.updates(0, 5)
    assert time.monotonic() - started < 3
    assert (tap.user_id, tap.message_id, tap.data) == (ALICE_TG, mid, "g")


def test_client_errors_are_one_line(tgsb: TelegramSandbox) -> None:
    """Bad token, unreachable API and a malformed token each give one clear line."""
    with pytest.raises(TelegramError, match=r"^telegram getMe: 401 Unauthorized"):
        TelegramClient(tgsb.api_url, "1:bad").get_me()
    with pytest.raises(TelegramError, match=r"API unreachable"):
        TelegramClient("http://127.0.0.1:9", DEFAULT_TOKEN).get_me()
    with pytest.raises(TelegramError, match=r"not of the form"):
        TelegramClient(tgsb.api_url, "no-colon")

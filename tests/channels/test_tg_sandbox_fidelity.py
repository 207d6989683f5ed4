"""The Telegram sandbox behaves as the Bot API documents it, over HTTP: one poller per token
(409), allowed_updates, negative offsets, chat types, JSON errors, injected faults."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from capdaemon.channels.telegram import TelegramClient, TelegramError
from ghsandbox.telegram import DEFAULT_TOKEN, TelegramSandbox
from ghsandbox.telegram_state import CONFLICT

from .conftest import ALICE_TG, CHAT
from .tgadmin import admin, bot, post


def _message(tg: TelegramSandbox) -> int:
    kb = {"inline_keyboard": [[{"text": "Go", "callback_data": "g"}]]}
    code, sent = bot(tg, "sendMessage", chat_id=CHAT, text="q", reply_markup=kb)
    assert code == 200
    return int(sent["result"]["message_id"])


def test_a_second_poller_ends_the_first_with_409(tgsb: TelegramSandbox) -> None:
    """Two getUpdates on one token at once: the older long poll is answered 409 Conflict
    with the Bot API's text, the newer one is served (two daemons on one bot are noticed)."""
    got: dict[str, Any] = {}

    def first() -> None:
        got["first"] = bot(tgsb, "getUpdates", timeout=10)

    thread = threading.Thread(target=first)
    started = time.monotonic()
    thread.start()
    time.sleep(0.5)
    second = bot(tgsb, "getUpdates", timeout=1)
    thread.join(timeout=10)
    assert time.monotonic() - started < 5, "the first poll was not ended by the second"
    assert got["first"] == (409, {"ok": False, "error_code": 409, "description": CONFLICT})
    assert second == (200, {"ok": True, "result": []})
    assert admin(tgsb, "state")["conflicts"] == 1


def test_the_client_names_the_conflict(tgsb: TelegramSandbox) -> None:
    """The daemon's client, ended by another poller, says so in one line."""
    client = TelegramClient(tgsb.api_url, DEFAULT_TOKEN)
    timer = threading.Timer(0.5, bot, (tgsb, "getUpdates"))
    timer.start()
    with pytest.raises(TelegramError, match=r"409 Conflict: .*only one daemon may use a token"):
        client.updates(0, 5)
    timer.join()


def test_allowed_updates_and_negative_offset(tgsb: TelegramSandbox) -> None:
    """allowed_updates is kept until changed and updates of other types are not queued; an
    offset of -1 returns only the last update and forgets the ones before it."""
    mid = _message(tgsb)
    assert bot(tgsb, "getUpdates", allowed_updates=["callback_query"])[1]["result"] == []
    dropped = admin(tgsb, "update", update={"message": {"message_id": 9, "text": "hi"}})
    assert "not in allowed_updates" in dropped["dropped"]
    for _ in range(3):
        admin(tgsb, "press", chat_id=CHAT, message_id=mid, user_id=ALICE_TG)
    assert admin(tgsb, "state") == {
        "allowed_updates": ["callback_query"],
        "queued": 3,
        "conflicts": 0,
        "polling": 0,
    }
    (last,) = bot(tgsb, "getUpdates", offset=-1)[1]["result"]
    assert "callback_query" in last
    assert bot(tgsb, "getUpdates")[1]["result"] == [last]  # the two before are forgotten
    bot(tgsb, "getUpdates", offset=last["update_id"] + 1, allowed_updates=[])  # the default
    admin(tgsb, "update", update={"message": {"message_id": 9, "text": "hi"}})
    admin(tgsb, "update", update={"chat_member": {"chat": {"id": CHAT}}})  # opt-in type
    (msg,) = bot(tgsb, "getUpdates")[1]["result"]
    assert msg["message"]["text"] == "hi"


def test_admin_errors_are_json_and_name_the_field(tgsb: TelegramSandbox) -> None:
    """/admin/press without message_id, or with a non-number: a JSON 400 naming it."""
    mid = _message(tgsb)
    code, body = post(f"{tgsb.api_url}/admin/press", {"chat_id": CHAT, "user_id": ALICE_TG})
    assert code == 400 and body["ok"] is False
    assert body["description"] == "Bad Request: field 'message_id' is required"
    code, body = post(
        f"{tgsb.api_url}/admin/press", {"chat_id": CHAT, "message_id": "x", "user_id": 1}
    )
    assert code == 400 and "'message_id'" in body["description"]
    code, body = post(f"{tgsb.api_url}/admin/update", {"update": "[1"})
    assert code == 400 and "'update'" in body["description"]
    assert admin(tgsb, "press", chat_id=CHAT, message_id=mid, user_id=ALICE_TG)["update_id"]


def test_chat_types_follow_the_id(tgsb: TelegramSandbox) -> None:
    """-100… ids are supergroups, other negative ids groups; a channel can be declared."""
    assert bot(tgsb, "getChat", chat_id=CHAT)[1]["result"]["type"] == "supergroup"
    admin(tgsb, "chat", chat_id=-4242, title="old group")
    admin(tgsb, "chat", chat_id=-1009999, title="news", type="channel")
    assert bot(tgsb, "getChat", chat_id=-4242)[1]["result"]["type"] == "group"
    assert bot(tgsb, "getChat", chat_id=-1009999)[1]["result"]["type"] == "channel"
    _, sent = bot(tgsb, "sendMessage", chat_id=-4242, text="x")
    assert sent["result"]["chat"]["type"] == "group"


def test_injected_faults_and_outages(tgsb: TelegramSandbox) -> None:
    """A 503 on one method, a 429 on any method, an outage (502 HTML from the proxy): each
    as the API (or its proxy) answers it, then service resumes."""
    client = TelegramClient(tgsb.api_url, DEFAULT_TOKEN)
    admin(tgsb, "fault", method="getMe", code=503, times=2)
    for _ in range(2):
        with pytest.raises(TelegramError, match=r"^telegram getMe: (503|HTTP 503)"):
            client.get_me()
    assert client.get_me() == "capdaemon_bot"
    admin(tgsb, "outage", seconds=30)
    code, body = bot(tgsb, "getMe")
    assert code == 502 and "Bad Gateway" in body
    with pytest.raises(TelegramError, match=r"HTTP 502"):
        client.get_me()
    admin(tgsb, "outage", seconds=0)
    admin(tgsb, "fault", method="*", code=429, retry_after=3)
    code, body = bot(tgsb, "getChat", chat_id=CHAT)
    assert code == 429 and body["parameters"] == {"retry_after": 3}
    assert bot(tgsb, "getChat", chat_id=CHAT)[0] == 200


def test_the_sandbox_runs_as_its_own_process(tmp_path: Path) -> None:
    """`sandbox telegram --port 0` prints its API URL first; a test in another process sets up
    the chat and a user, posts, presses and reads the tap over HTTP; SIGTERM stops it (0)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from ghsandbox import cli_main; sys.exit(cli_main(sys.argv[1:]))",
            "telegram",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert post(f"{url}/admin/chat", {"chat_id": CHAT, "title": "owners"})[0] == 200
        assert post(f"{url}/admin/user", {"user_id": ALICE_TG, "username": "alice"})[0] == 200
        client = TelegramClient(url, DEFAULT_TOKEN)
        mid = client.send(CHAT, "q", [("Go", "g")])
        code, _ = post(
            f"{url}/admin/press", {"chat_id": CHAT, "message_id": mid, "user_id": ALICE_TG}
        )
        assert code == 200
        (tap,) = client.updates(0, 0)
        assert (tap.user_id, tap.username, tap.message_id, tap.data) == (
            ALICE_TG,
            "alice",
            mid,
            "g",
        )
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0

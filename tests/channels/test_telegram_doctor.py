"""`capdaemon doctor` checks Telegram: the token (getMe), that the bot can post to the chat,
and that the mapped owners are in it — one line each, nothing posted."""

from __future__ import annotations

import pytest

from capdaemon.cli import main

from .conftest import BOB_TG, CHAT, TgHarness
from .tgadmin import admin

pytestmark = pytest.mark.slow


def _telegram_lines(tgd: TgHarness, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["doctor", "--config", str(tgd.config_dir), "--state", str(tgd.state_dir)])
    lines = capsys.readouterr().out.splitlines()
    return code, [" ".join(ln.split()) for ln in lines if " telegram " in f" {ln} "]


def test_doctor_telegram_lines(tgd: TgHarness, capsys: pytest.CaptureFixture[str]) -> None:
    """All well: three ok lines. The bot removed from the chat: FAIL. bob left: a warning
    naming him. A token the API refuses: FAIL and exit 2. No message is ever sent."""
    tgd.configure_telegram()
    _code, lines = _telegram_lines(tgd, capsys)
    assert lines == [
        "ok telegram token bot @capdaemon_bot (id 123456) at " + tgd.tg.api_url[7:],
        f"ok telegram chat chat {CHAT} (supergroup 'owners'): the bot is member and can post",
        "ok telegram users 2 mapped owners, all in the chat",
    ]
    admin(tgd.tg, "member", chat_id=CHAT, user_id=BOB_TG, status="left")
    admin(tgd.tg, "member", chat_id=CHAT, user_id=123456, status="kicked")
    _code, lines = _telegram_lines(tgd, capsys)
    assert lines[1] == (
        f"FAIL telegram chat chat {CHAT} (supergroup 'owners'): the bot is kicked, "
        "it cannot post there"
    )
    assert lines[2] == f"warn telegram users bob ({BOB_TG}) is left in the chat"
    admin(tgd.tg, "chat", chat_id=-1005555, title="news", type="channel")
    tgd.configure_telegram(chat_id=-1005555)
    _code, lines = _telegram_lines(tgd, capsys)
    assert "only administrators post in a channel; the bot is member" in lines[1]
    (tgd.root / "creds" / "tg-token").write_text("1:wrong\n")
    code, lines = _telegram_lines(tgd, capsys)
    assert code == 2
    assert lines == [
        "FAIL telegram token telegram getMe: 401 Unauthorized (check the bot token) "
        "(telegram.token_file / CAPDAEMON_TELEGRAM_TOKEN)"
    ]
    assert admin(tgd.tg, "counters").get("sendMessage") is None

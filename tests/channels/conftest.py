"""Channel test helpers: a Telegram Bot API sandbox and a daemon configured to use it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capdaemon.channels import onetap
from ghsandbox import Sandbox
from ghsandbox.telegram import DEFAULT_TOKEN, TelegramSandbox
from tests.daemon.conftest import daemon  # noqa: F401 (the plain daemon Harness fixture)
from tests.safety.conftest import SESSION, SafetyHarness

CHAT = -1001234
ALICE_TG = 111
BOB_TG = 222
MALLORY_TG = 666
AGENT_TG = 777  # mapped to nobody
HMAC_KEY = "k" * 32
EXAMPLE = {"examples/old.py": "print('v2')\n"}


class TgHarness(SafetyHarness):
    """The safety Harness plus a Telegram sandbox and helpers to press buttons."""

    tg: TelegramSandbox

    def configure_telegram(self, **telegram: Any) -> TgHarness:
        """Config with `telegram:` pointing at the sandbox (token and key in files)."""
        creds = self.root / "creds"
        creds.mkdir(exist_ok=True)
        (creds / "tg-token").write_text(DEFAULT_TOKEN + "\n")
        (creds / "tg-hmac").write_text(HMAC_KEY + "\n")
        section = {
            "api_url": self.tg.api_url,
            "token_file": str(creds / "tg-token"),
            "hmac_key_file": str(creds / "tg-hmac"),
            "chat_id": CHAT,
            "users": {"alice": ALICE_TG, "bob": BOB_TG},
            "poll_seconds": 2,
            **telegram,
        }
        self.configure(telegram=section)
        return self

    def configure_telegram_without(self, key: str) -> None:
        """Drop one key of the telegram section."""
        import yaml

        path = self.config_dir / "capdaemon.yml"
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        del data["telegram"][key]
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    def tier2_pr(self, task: str = "t-2") -> int:
        """A level-2 task's small PR (tier 2: one tap)."""
        self.task(task, level=2)
        return self.open_pr(EXAMPLE, title="task work", trailers=f"{SESSION}\nTask-Id: {task}")

    @property
    def desk(self) -> onetap.TelegramDesk:
        ticker = self.ticker or self.start()
        desk = ticker.safety.channels.desk
        assert desk is not None
        return desk

    def messages(self) -> list[dict[str, Any]]:
        return self.tg.state.list_messages(CHAT)

    def press(
        self, user: int, button: str | int = 0, message: int | None = None, **kw: Any
    ) -> None:
        msgs = self.messages()
        mid = message if message is not None else msgs[-1]["message_id"]
        self.tg.state.press(CHAT, mid, user, button=button, **kw)

    def poll(self) -> int:
        """The poll job's body, at the sandbox's time."""
        ticker = self.ticker or self.start()
        return self.desk.poll(ticker, now=self.sb.now)

    def taps(self) -> list[dict[str, Any]]:
        return self.actions("telegram_tap")


@pytest.fixture
def tgsb() -> Iterator[TelegramSandbox]:
    """A Telegram Bot API sandbox with the owners' chat and four users."""
    with TelegramSandbox() as tg:
        tg.state.add_chat(CHAT, "owners")
        for uid, name in ((ALICE_TG, "alice"), (BOB_TG, "bob"), (MALLORY_TG, "mallory")):
            tg.state.add_user(uid, name)
        tg.state.add_user(AGENT_TG, "agent1")
        yield tg


@pytest.fixture
def tgd(sandbox: Sandbox, tgsb: TelegramSandbox, tmp_path: Path) -> Iterator[TgHarness]:
    """A daemon Harness over the GitHub sandbox with Telegram configured."""
    h = TgHarness(sandbox, tmp_path)
    h.tg = tgsb
    try:
        yield h
    finally:
        h.stop()

"""`capdaemon doctor`'s Telegram lines: the token (getMe), the owners' chat, the mapped users.

Each check is one line and reads only (getMe, getChat, getChatMember): the bot posts nothing.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from urllib.parse import urlsplit

from capdaemon.channels.telegram import TelegramClient, TelegramError
from capdaemon.channels.tgjob import build_client
from capdaemon.config import Config
from capdaemon.config.channels import TelegramConfig
from capdaemon.findings import FAIL, OK, SKIP, WARN, Finding

PRESENT = frozenset({"creator", "administrator", "member"})

Checked = Iterator[tuple[Finding, bool]]  # (finding, whether it is a credentials check)


def check_telegram(
    config: Config, env: Mapping[str, str] | None = None, *, offline: bool = False
) -> Checked:
    """The Telegram findings (none without `telegram:`)."""
    try:
        built = build_client(config, env)
    except ValueError as exc:
        yield Finding(FAIL, "telegram token", str(exc)), True
        return
    if built is None:
        return
    tg, client, _key = built
    if offline:
        yield Finding(SKIP, "telegram token", "--offline: the Bot API not contacted"), False
        return
    host = urlsplit(tg.api_url).netloc
    try:
        name = client.get_me()
    except TelegramError as exc:
        unauthorized = exc.code == 401
        hint = f" (telegram.token_file / {tg.token_env})" if unauthorized else ""
        yield Finding(FAIL, "telegram token", f"{exc}{hint}"), unauthorized
        return
    yield Finding(OK, "telegram token", f"bot @{name} (id {client.bot_id}) at {host}"), False
    if (yield from _chat(tg, client)):
        yield _users(config, tg, client), False


def _chat(
    tg: TelegramConfig, client: TelegramClient
) -> Generator[tuple[Finding, bool], None, bool]:
    """Whether the bot can post to the chat (True: the chat exists and it can)."""
    try:
        chat = client.chat(tg.chat_id)
        status = client.member_status(tg.chat_id, int(client.bot_id or 0))
    except TelegramError as exc:
        yield (
            Finding(
                FAIL,
                "telegram chat",
                f"chat {tg.chat_id}: {exc}; add the bot to the chat or fix telegram.chat_id",
            ),
            False,
        )
        return False
    kind, title = chat.get("type", "?"), chat.get("title") or chat.get("username") or ""
    where = f"chat {tg.chat_id} ({kind}{' ' + repr(title) if title else ''})"
    if status not in PRESENT:
        yield (
            Finding(FAIL, "telegram chat", f"{where}: the bot is {status}, it cannot post there"),
            False,
        )
        return True
    if kind == "channel" and status != "administrator":
        yield (
            Finding(
                FAIL,
                "telegram chat",
                f"{where}: only administrators post in a channel; the bot is {status}",
            ),
            False,
        )
        return True
    yield Finding(OK, "telegram chat", f"{where}: the bot is {status} and can post"), False
    return True


def _users(config: Config, tg: TelegramConfig, client: TelegramClient) -> Finding:
    """Each mapped owner is in the chat (a tap needs it); owners nobody mapped are named."""
    problems: list[str] = []
    for uid, login in tg.users:
        try:
            status = client.member_status(tg.chat_id, uid)
        except TelegramError as exc:
            problems.append(f"{login} ({uid}): {str(exc).split(': ', 1)[-1]}")
            continue
        if status not in PRESENT:
            problems.append(f"{login} ({uid}) is {status} in the chat")
    mapped = {login for _uid, login in tg.users}
    unmapped = sorted(o for o in config.owners if o.lower() not in mapped)
    tail = (
        f"; owners without a Telegram id (their taps cannot count): {', '.join(unmapped)}"
        if unmapped
        else ""
    )
    if problems:
        return Finding(WARN, "telegram users", "; ".join(problems) + tail)
    return Finding(OK, "telegram users", f"{len(tg.users)} mapped owners, all in the chat{tail}")

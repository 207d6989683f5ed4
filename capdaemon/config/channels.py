"""The `telegram:` and `notifications:` sections of capdaemon.yml (both optional, off)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from capdaemon.config.sections import _Section

TELEGRAM_KEYS = frozenset(
    {
        "api_url",
        "token_env",
        "token_file",
        "hmac_key_env",
        "hmac_key_file",
        "chat_id",
        "users",
        "ttl_minutes",
        "poll_seconds",
    }
)
NOTIFICATION_KEYS = frozenset({"urls", "timeout_seconds"})
_ENV_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
_LOGIN_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


@dataclass(frozen=True)
class TelegramConfig:
    """Where the bot posts one-tap requests, who may tap, and how long a request lives."""

    chat_id: int
    users: tuple[tuple[int, str], ...]  # (Telegram user id, owner login in lower case)
    api_url: str = "https://api.telegram.org"
    token_env: str = "CAPDAEMON_TELEGRAM_TOKEN"
    token_file: str | None = None
    hmac_key_env: str = "CAPDAEMON_TELEGRAM_HMAC_KEY"
    hmac_key_file: str | None = None
    ttl_minutes: float = 5.0
    poll_seconds: int = 5  # a long poll's length under `run`; idle, how often the job looks

    def login_of(self, user_id: int) -> str | None:
        """The owner login a Telegram user id is mapped to (None: not mapped)."""
        return next((login for uid, login in self.users if uid == user_id), None)


@dataclass(frozen=True)
class NotificationsConfig:
    """apprise URLs (one per channel) and the time one send may take."""

    urls: tuple[str, ...] = ()
    timeout_seconds: float = 10.0


@dataclass(frozen=True)
class ChannelsConfig:
    """Both optional sections; `telegram` None means Telegram is off."""

    telegram: TelegramConfig | None = None
    notifications: NotificationsConfig = field(default_factory=NotificationsConfig)


def _users(sec: _Section, owners: frozenset[str]) -> tuple[tuple[int, str], ...]:
    """`users: {login: telegram_user_id}` → {user id: login}; each login an owner."""
    raw = sec.data.get("users")
    if not isinstance(raw, dict) or not raw:
        raise sec.error("users", "expected a non-empty mapping of owner login → Telegram user id")
    out: dict[int, str] = {}
    for login, uid in raw.items():
        if not _LOGIN_RE.match(login):
            raise sec.error("users", f"{login!r} is not a GitHub login")
        if login.lower() not in owners:
            raise sec.error("users", f"{login!r} is not one of the owners")
        if isinstance(uid, bool) or not isinstance(uid, int) or uid <= 0:
            raise sec.error("users", f"{login}: expected a positive Telegram user id, got {uid!r}")
        if uid in out:
            raise sec.error("users", f"Telegram user id {uid} is given twice")
        out[uid] = login.lower()
    return tuple(sorted(out.items()))


def parse_channels(sec: _Section, owners: frozenset[str]) -> ChannelsConfig:
    """Validate the optional `telegram:` and `notifications:` sections (errors name the key)."""
    telegram = None
    if sec.has("telegram"):
        ts = sec.section("telegram", TELEGRAM_KEYS)
        td = TelegramConfig(0, ())
        chat = ts.data.get("chat_id")
        if isinstance(chat, bool) or not isinstance(chat, int):
            raise ts.error("chat_id", "expected the numeric Telegram chat id of the owners' chat")
        telegram = TelegramConfig(
            chat_id=chat,
            users=_users(ts, owners),
            api_url=ts.str(
                "api_url", td.api_url, pattern=r"^https?://[^\s/]+", what="an http(s) URL"
            ).rstrip("/"),
            token_env=ts.str("token_env", td.token_env, pattern=_ENV_RE, what="a variable name"),
            token_file=ts.str("token_file", None),
            hmac_key_env=ts.str(
                "hmac_key_env", td.hmac_key_env, pattern=_ENV_RE, what="a variable name"
            ),
            hmac_key_file=ts.str("hmac_key_file", None),
            ttl_minutes=ts.num("ttl_minutes", td.ttl_minutes, minimum=0, exclusive_min=True),
            poll_seconds=ts.int("poll_seconds", td.poll_seconds, minimum=2),
        )
        if telegram.poll_seconds > 50:
            raise ts.error("poll_seconds", "must be at most 50 (the Bot API's long-poll cap)")
    ns = sec.section("notifications", NOTIFICATION_KEYS)
    urls = ns.strs("urls", check=check_apprise_url) or ()
    notifications = NotificationsConfig(
        urls=urls,
        timeout_seconds=ns.num(
            "timeout_seconds", NotificationsConfig.timeout_seconds, minimum=0, exclusive_min=True
        ),
    )
    return ChannelsConfig(telegram=telegram, notifications=notifications)


def check_apprise_url(url: str) -> None:
    """ValueError unless apprise understands the URL (its scheme and shape)."""
    import apprise

    if not apprise.Apprise.instantiate(url, suppress_exceptions=True):
        scheme = url.split("://", 1)[0] if "://" in url else url[:20]
        raise ValueError(f"apprise does not understand this URL (scheme {scheme!r})")

"""Wiring of the Telegram desk: building it from the config, and `run`'s getUpdates job.

While a request is live the job reopens its long poll as soon as the last one returns, so a
tap is read the moment it is pressed (not at the next poll boundary); with nothing live it
makes no request and looks again every `telegram.poll_seconds`. A counted tap runs a tick at
once, so the merge follows in seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from capdaemon.channels import callback
from capdaemon.channels.config import read_secret
from capdaemon.channels.hub import Channels
from capdaemon.channels.onetap import DeskHost, SafetyView, TelegramDesk
from capdaemon.channels.telegram import TelegramClient, TelegramError
from capdaemon.logging import get_logger
from capdaemon.state import StateError

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler

    from capdaemon.config import Config
    from capdaemon.config.channels import TelegramConfig

log = get_logger("capdaemon.telegram")
JOB_ID = "telegram"


class _NetWithChannels(SafetyView, Protocol):
    @property
    def channels(self) -> Channels:
        """The daemon's owner channels (the desk is attached there)."""
        ...


class PollHost(DeskHost, Protocol):
    """The poll job's host: a desk host whose safety net carries the channels."""

    @property
    def safety(self) -> _NetWithChannels:
        """The safety net."""
        ...


def build_client(
    config: Config, env: Mapping[str, str] | None = None
) -> tuple[TelegramConfig, TelegramClient, bytes] | None:
    """The configured client and HMAC key (None without `telegram:`); ValueError (one line,
    naming the setting) for a missing token or key or a malformed token."""
    tg = config.channels.telegram
    if tg is None:
        return None
    config_dir = Path(config.config_dir) if config.config_dir else None
    token, _where = read_secret(
        tg.token_file, tg.token_env, "telegram.token_file", "bot token", env, config_dir
    )
    key = callback.load_key(tg.hmac_key_file, tg.hmac_key_env, env=env, config_dir=config_dir)
    try:
        return tg, TelegramClient(tg.api_url, token.decode("utf-8")), key
    except (TelegramError, UnicodeDecodeError) as exc:
        raise ValueError(f"telegram: {exc}") from None


def build_desk(
    config: Config, state_dir: Path, env: Mapping[str, str] | None = None
) -> TelegramDesk | None:
    """The desk for a config with `telegram:` (None without). ValueError (one line) for a
    missing token or key or a token the API refuses (401); an unreachable API only warns."""
    built = build_client(config, env)
    if built is None:
        return None
    tg, client, key = built
    try:
        client.get_me()
    except TelegramError as exc:
        if exc.code == 401:
            raise ValueError(f"{exc} (telegram.token_file / {tg.token_env})") from None
        log.warning("telegram.unreachable", error=str(exc))
    return TelegramDesk(tg, client, key, Path(state_dir))


def add_poll_job(
    sched: BaseScheduler, ticker: PollHost, *, interval_seconds: float | None = None
) -> None:
    """Schedule the getUpdates job on its own executor (the tick no longer reads updates):
    one run long-polls again at once while a request is live; a request posted wakes it at
    once; with nothing live it looks again after `interval_seconds` (default
    `telegram.poll_seconds`)."""
    desk = ticker.safety.channels.desk
    if desk is None:
        return
    from apscheduler.executors.pool import ThreadPoolExecutor

    desk.reads_in_tick = False
    sched.add_executor(ThreadPoolExecutor(1), JOB_ID)
    interval = interval_seconds or float(desk.config.poll_seconds)

    def schedule(delay: float) -> None:
        sched.add_job(
            job,
            "date",
            run_date=datetime.now(UTC) + timedelta(seconds=delay),
            id=JOB_ID,
            executor=JOB_ID,
            replace_existing=True,
            misfire_grace_time=None,
        )

    running = threading.Event()

    def job() -> None:
        running.set()
        errors, failed = desk.errors, False
        try:
            while sched.running and desk.store.live() and desk.errors == errors:
                if desk.poll(ticker):  # a failed poll (outage, 409, 429) waits an interval
                    ticker.tick()
        except StateError:
            raise
        except Exception as exc:  # a dead channel never stops the daemon
            failed = True
            log.exception("telegram.poll_failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            running.clear()
            # live again since the loop ended (a tick posted meanwhile): at once
            again = not failed and desk.store.live() and desk.errors == errors
            pause = desk.client.pause_left()
            if sched.running:
                schedule(pause if again else max(interval, pause))

    def wake() -> None:
        """A request was posted: poll now rather than at the next idle look."""
        if sched.running and not running.is_set():
            schedule(desk.client.pause_left())

    desk.on_live = wake
    schedule(interval)

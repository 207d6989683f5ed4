"""One daemon's owner channels: its notifier step and its Telegram desk (when configured)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from capdaemon.channels.notify import NotifyStep

if TYPE_CHECKING:
    from capdaemon.channels.onetap import DeskHost, TelegramDesk
    from capdaemon.config import Config
    from capdaemon.report import Report


class Channels:
    """Built once per daemon, with its Telegram desk when Telegram is on (None: off)."""

    def __init__(self, config: Config, state_dir: Path, desk: TelegramDesk | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.notify_step = NotifyStep(config)
        self.desk = desk

    def start_tick(self, now: datetime) -> None:
        """The tick's first step: the notifier's cursor starts before anything is recorded."""
        self.notify_step.start(self.state_dir, now)

    def notify(self, now: datetime, report: Report | None = None) -> None:
        """The tick's last step: notify owners of what this tick (or the CLI) recorded."""
        self.notify_step.run(self.state_dir, now, report)

    def read_taps(self, ticker: DeskHost, now: datetime, report: Report | None = None) -> None:
        """The tick's first hook: act on the Telegram taps pressed since the last tick."""
        if self.desk is not None:
            self.desk.read_taps(ticker, now, report)

    def sync_desk(self, ticker: DeskHost, now: datetime, report: Report | None = None) -> None:
        """The tick's hook (after one-tap issues are read): mirror one-taps into Telegram."""
        if self.desk is not None:
            self.desk.sync(ticker, now, report)

    def after_merge(self, ticker: DeskHost, report: Report | None = None) -> None:
        """The tick's hook after its merges: a request approved by a tap now says "merged"."""
        if self.desk is not None:
            self.desk.announce(ticker, report)

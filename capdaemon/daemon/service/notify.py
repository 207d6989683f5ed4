"""A tiny sd_notify: READY/RELOADING/WATCHDOG/STOPPING/STATUS over $NOTIFY_SOCKET, a no-op
outside systemd."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping

WATCHDOG_FLOOR_SECONDS = 120.0  # a tick's longest silent stretch (retries, pacing) stays under it
WATCHDOG_INTERVALS = 3  # three missed tick intervals: the daemon is hung, not just late


def watchdog_for(tick_seconds: float) -> float:
    """The watchdog timeout that fits a tick interval: three intervals (the daemon pings after
    every tick and from inside long ticks), never under WATCHDOG_FLOOR_SECONDS."""
    return max(WATCHDOG_INTERVALS * tick_seconds, WATCHDOG_FLOOR_SECONDS)


def _address(raw: str) -> str | bytes:
    """The socket address from NOTIFY_SOCKET ('@name' is the Linux abstract namespace)."""
    if raw.startswith("@"):
        return b"\0" + raw[1:].encode()
    return raw


def sd_notify(state: str, env: Mapping[str, str] | None = None) -> bool:
    """Send one notification datagram; False (and nothing sent) when NOTIFY_SOCKET is unset.

    Errors talking to the socket are swallowed (False): notification must never stop the daemon.
    """
    raw = (os.environ if env is None else env).get("NOTIFY_SOCKET", "")
    if not raw or not (raw.startswith("/") or raw.startswith("@")):
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(_address(raw))
            sock.sendall(state.encode("utf-8"))
    except OSError:
        return False
    return True


class Notifier:
    """The daemon's view of systemd: READY once, WATCHDOG per tick, STOPPING on the way out."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(os.environ if env is None else env)

    @property
    def active(self) -> bool:
        """True when running under a systemd unit with a notify socket."""
        return bool(self._env.get("NOTIFY_SOCKET"))

    @property
    def watchdog_seconds(self) -> float | None:
        """The watchdog interval systemd asked for (WATCHDOG_USEC for our pid), or None."""
        usec = self._env.get("WATCHDOG_USEC")
        pid = self._env.get("WATCHDOG_PID")
        if not usec or (pid and pid != str(os.getpid())):
            return None
        try:
            return int(usec) / 1_000_000
        except ValueError:
            return None

    def _send(self, state: str) -> bool:
        return sd_notify(state, self._env)

    def ready(self, status: str = "") -> bool:
        """READY=1 (and an optional STATUS line)."""
        return self._send("READY=1" + (f"\nSTATUS={status}" if status else ""))

    def reloading(self, status: str = "") -> bool:
        """RELOADING=1 with MONOTONIC_USEC (the reload's start, as Type=notify-reload needs it);
        READY=1 follows when the new config has been read and checked."""
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        return self._send(
            f"RELOADING=1\nMONOTONIC_USEC={usec}" + (f"\nSTATUS={status}" if status else "")
        )

    def watchdog(self) -> bool:
        """WATCHDOG=1: the tick loop is alive."""
        return self._send("WATCHDOG=1")

    def fit_watchdog(self, tick_seconds: float) -> float | None:
        """When systemd runs a watchdog for us, set its timeout to `watchdog_for(tick_seconds)`
        (WATCHDOG_USEC=…): the unit's WatchdogSec holds only until then. The timeout set, or
        None when there is no watchdog."""
        if self.watchdog_seconds is None:
            return None
        seconds = watchdog_for(tick_seconds)
        if self._send(f"WATCHDOG_USEC={round(seconds * 1_000_000)}"):
            self._env["WATCHDOG_USEC"] = str(round(seconds * 1_000_000))
            return seconds
        return None

    def stopping(self) -> bool:
        """STOPPING=1: shutting down cleanly."""
        return self._send("STOPPING=1")

    def status(self, text: str) -> bool:
        """STATUS=<text>, shown by `systemctl status`."""
        return self._send(f"STATUS={text}")

"""sd_notify over a real unix datagram socket, and secret redaction in the structlog events."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import pytest
import structlog

from capdaemon.daemon.service.notify import Notifier, sd_notify
from capdaemon.logging import configure_logging, get_logger


def _listener(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(2)
    return sock


def test_sd_notify_is_a_no_op_outside_systemd() -> None:
    """Without NOTIFY_SOCKET nothing is sent and sd_notify says False."""
    assert sd_notify("READY=1", env={}) is False
    assert Notifier(env={}).ready() is False
    assert Notifier(env={}).active is False


def test_sd_notify_sends_datagrams_to_the_socket(tmp_path: Path) -> None:
    """READY, WATCHDOG, STATUS and STOPPING arrive as datagrams on NOTIFY_SOCKET."""
    path = tmp_path / "notify.sock"
    with _listener(path) as sock:
        n = Notifier(env={"NOTIFY_SOCKET": str(path)})
        assert n.ready(status="ticking") and n.watchdog() and n.status("3 PRs") and n.stopping()
        got = [sock.recv(4096).decode() for _ in range(4)]
    assert got == ["READY=1\nSTATUS=ticking", "WATCHDOG=1", "STATUS=3 PRs", "STOPPING=1"]


def test_sd_notify_abstract_socket_and_dead_socket() -> None:
    """An '@' address is the abstract namespace; a socket nobody listens on gives False."""
    name = f"capdaemon-test-{id(object())}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(2)
        assert sd_notify("WATCHDOG=1", env={"NOTIFY_SOCKET": "@" + name})
        assert sock.recv(64) == b"WATCHDOG=1"
    assert sd_notify("WATCHDOG=1", env={"NOTIFY_SOCKET": "@" + name}) is False


def test_watchdog_interval_is_read_for_this_pid() -> None:
    """WATCHDOG_USEC is honoured only when WATCHDOG_PID is unset or ours."""
    assert Notifier(env={"WATCHDOG_USEC": "30000000"}).watchdog_seconds == 30.0
    assert Notifier(env={"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}).watchdog_seconds is None


def test_json_events_never_carry_a_token() -> None:
    """Secret-named keys and token-looking values are redacted from the JSON event lines."""
    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    try:
        log = get_logger("test")
        log.info("forge.auth", token="ghp_" + "a" * 36, repo="acme/widgets")
        log.info("git.push", url="http://x-access-token:ghs_secret123@127.0.0.1/acme/w.git")
        log.info(
            "key.loaded",
            private_key="-----BEGIN PRIVATE KEY-----abc",
            note="github_pat_" + "b" * 30,
        )
    finally:
        structlog.reset_defaults()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["forge.auth", "git.push", "key.loaded"]
    text = out.getvalue()
    for secret in ("ghp_aaaa", "ghs_secret123", "BEGIN PRIVATE KEY", "github_pat_"):
        assert secret not in text
    assert lines[0]["repo"] == "acme/widgets" and lines[0]["token"] == "[redacted]"


def test_the_watchdog_timeout_is_fitted_to_the_tick_interval(tmp_path) -> None:
    """Under a systemd watchdog, the daemon sets WATCHDOG_USEC to three tick intervals (at
    least 120 s): 20 s ticks → 120 s, 600 s ticks → 1,800 s (the unit's 300 s would kill a
    healthy daemon between two 10-minute ticks); no watchdog → nothing sent."""
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(2)
        env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "300000000"}
        assert Notifier(env=env).fit_watchdog(20) == 120.0
        assert sock.recv(64) == b"WATCHDOG_USEC=120000000"
        notifier = Notifier(env=env)
        assert notifier.fit_watchdog(600) == 1800.0
        assert sock.recv(64) == b"WATCHDOG_USEC=1800000000"
        assert notifier.watchdog_seconds == 1800.0
        assert Notifier(env={"NOTIFY_SOCKET": path}).fit_watchdog(20) is None
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(64)

"""A real `capdaemon run` stopped (SIGSTOP) for three tick intervals says so when it resumes:
a `daemon.gap` warning, a `daemon_gap` audit record, a count in tick_metrics.json and a line
under Attention in the digest."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from capdaemon.config import load_config
from capdaemon.daemon.service.digest_job import render_for
from capdaemon.decide.digest import digest_day

from .conftest import Harness

pytestmark = pytest.mark.slow

TICK = 1.0


def _wait_for(predicate: object, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ticks(state: Path) -> int:
    try:
        return int(json.loads((state / "tick_metrics.json").read_text())["ticks"])
    except (OSError, ValueError, KeyError):
        return 0


def test_a_sigstop_of_three_intervals_is_logged_counted_and_in_the_digest(
    daemon: Harness,
) -> None:
    """SIGSTOP for 3.5 intervals, SIGCONT: one gap of kind "paused" is said everywhere,
    /metrics included."""
    port = _free_port()
    daemon.configure(metrics={"listen": f"127.0.0.1:{port}"})
    args = ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "capdaemon.cli", "run", "--tick-seconds", str(TICK), *args,
         "--log-format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )  # fmt: skip
    try:
        assert _wait_for(lambda: _ticks(daemon.state_dir) >= 2, 60), "no tick"
        proc.send_signal(signal.SIGSTOP)
        time.sleep(3.5 * TICK)
        proc.send_signal(signal.SIGCONT)
        assert _wait_for(
            lambda: json.loads((daemon.state_dir / "tick_metrics.json").read_text()).get("gaps"),
            30,
        ), "the gap was not counted"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            scraped = r.read().decode()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    events = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    gaps = [e for e in events if e["event"] == "daemon.gap"]
    assert len(gaps) == 1, gaps
    assert gaps[0]["kind"] == "paused" and gaps[0]["seconds"] >= 3 * TICK
    metrics = json.loads((daemon.state_dir / "tick_metrics.json").read_text())
    assert metrics["gaps"] == 1 and metrics["gaps_recent"][0]["kind"] == "paused"
    gaps_total = [
        s.value
        for f in text_string_to_metric_families(scraped)
        for s in f.samples
        if s.name == "capdaemon_tick_gaps_total"
    ]
    assert gaps_total == [1.0]
    records = [json.loads(x) for x in (daemon.state_dir / "actions.jsonl").read_text().splitlines()]
    (record,) = [r for r in records if r.get("action") == "daemon_gap"]
    assert "frozen" in record["detail"]
    now = datetime.now(UTC)
    config = load_config(daemon.config_dir)
    day = digest_day(now, config.schedule.digest_time, config.schedule.timezone, ended=False)
    text = render_for(config, daemon.state_dir, day, now)
    assert "no tick for" in text and "frozen" in text

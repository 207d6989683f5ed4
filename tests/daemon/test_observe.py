"""`/healthz` and Prometheus `/metrics`: a real `capdaemon run` scraped over HTTP, staleness,
the breaker, the dashboard's `/healthz`, and the loopback-only `metrics.listen`."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from capdaemon.config.central import load_capdaemon
from capdaemon.config.loaders import load_config
from capdaemon.config.sections import ConfigError
from capdaemon.daemon.service.observe import Observed, make_server
from capdaemon.dashboard.server import ModelCache
from capdaemon.dashboard.server import make_server as dashboard_server
from capdaemon.decide.breaker import BreakerState
from capdaemon.stores.safety_state import breaker_update

from .conftest import Harness, write_config
from .test_reload_rules import _edit, _reloader

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, parsed by prometheus_client's own text parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_run_serves_metrics_that_match_what_happened(daemon: Harness, tmp_path: Path) -> None:
    """A real `capdaemon run` with metrics.listen: /healthz is 200 after its first tick, and
    /metrics (parsed as Prometheus text) counts the ticks in tick_metrics.json, the one merge,
    the merged A PR, the requests sent and the closed breaker."""
    port = _free_port()
    daemon.configure(metrics={"listen": f"127.0.0.1:{port}"})
    n = daemon.open_pr({"README.md": "# widgets (scraped)\n"})
    args = ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "capdaemon.cli", "run", "--tick-seconds", "0.5", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        deadline = time.monotonic() + 60
        health: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                status, body = _get(f"http://127.0.0.1:{port}/healthz")
            except OSError:
                time.sleep(0.2)
                continue
            health = json.loads(body)
            if status == 200 and health["last_tick_at"] and daemon.pull(n).merged:
                break
            time.sleep(0.2)
        assert health["status"] == "ok" and health["breaker"] == "closed", health
        assert health["last_tick_outcome"] == "ok"
        metrics_file = daemon.state_dir / "tick_metrics.json"
        for _ in range(50):  # a scrape between two reads of the file that agree
            before = json.loads(metrics_file.read_text())["ticks"]
            status, text = _get(f"http://127.0.0.1:{port}/metrics")
            ticks = json.loads(metrics_file.read_text())["ticks"]
            if ticks == before:
                break
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert status == 200
    got = _samples(text)
    assert got[("capdaemon_ticks_total", (("kind", "full"),))] == ticks >= 1
    merges = sum(v for (name, _), v in got.items() if name == "capdaemon_merges_total")
    assert merges == 1
    assert got[("capdaemon_prs", (("quadrant", "A"), ("state", "merged")))] == 1
    assert got[("capdaemon_classified_total", (("quadrant", "A"),))] >= 1
    assert got[("capdaemon_github_requests_total", ())] > 0
    assert (
        0
        < got[("capdaemon_github_counted_requests_total", ())]
        <= got[("capdaemon_github_requests_total", ())]
    )
    assert got[("capdaemon_github_rate_limit_remaining", ())] > 0
    assert got[("capdaemon_breaker_open", ())] == 0
    assert got[("capdaemon_tick_gaps_total", ())] == 0
    assert got[("capdaemon_config_reloads_total", (("outcome", "applied"),))] == 0
    assert got[("capdaemon_last_tick_duration_seconds", ())] > 0
    kinds = {labels for (name, labels) in got if name == "capdaemon_reactions"}
    assert (("kind", "merge_done"),) in kinds


class _Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _serve(observed: Observed) -> tuple[str, Any]:
    server = make_server(observed, "127.0.0.1", 0)

    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def test_healthz_turns_503_when_ticks_stop_or_the_breaker_trips(daemon: Harness) -> None:
    """200 after a tick; 503 "stale" once the last tick is older than three intervals; 503
    "breaker open" while the breaker is tripped. The dashboard's /healthz says the same."""
    ticker = daemon.start()
    now = datetime.now(UTC)
    ticker.tick(now)
    clock = _Clock(now + timedelta(seconds=30))
    observed = Observed(ticker, None, lambda: 60.0, started=now, clock=clock)
    url, server = _serve(observed)
    cache = ModelCache(daemon.state_dir, ticker.config, clock)
    dash = dashboard_server(cache, "127.0.0.1", 0)

    threading.Thread(target=dash.serve_forever, daemon=True).start()
    dash_url = f"http://127.0.0.1:{dash.server_address[1]}"
    try:
        for base in (url, dash_url):
            status, body = _get(f"{base}/healthz")
            assert status == 200, body
            assert json.loads(body)["last_tick_age_seconds"] == 30.0
        clock.now = now + timedelta(seconds=181)
        for base in (url, dash_url):
            status, body = _get(f"{base}/healthz")
            assert (status, json.loads(body)["status"]) == (503, "stale")
        clock.now = now + timedelta(seconds=10)
        with breaker_update(daemon.state_dir) as bf:
            bf.state = BreakerState(tripped=True, tripped_at=now)
        for base in (url, dash_url):
            status, body = _get(f"{base}/healthz")
            assert (status, json.loads(body)["breaker"]) == (503, "open")
        status, text = _get(f"{url}/metrics")
        assert _samples(text)[("capdaemon_breaker_open", ())] == 1
    finally:
        server.shutdown()
        dash.shutdown()


def test_no_tick_yet_is_healthy_only_for_three_intervals(daemon: Harness) -> None:
    """A daemon that never completed a tick is 503 "no tick yet" once three intervals passed
    since it started (a skipped tick writes nothing)."""
    ticker = daemon.start()
    start = datetime.now(UTC)
    clock = _Clock(start + timedelta(seconds=100))
    observed = Observed(ticker, None, lambda: 60.0, started=start, clock=clock)
    assert observed.health().status == 200
    clock.now = start + timedelta(seconds=181)
    health = observed.health()
    assert (health.status, health.body["status"]) == (503, "no tick yet")


def _config(tmp_path: Path, daemon: Harness, metrics: dict[str, Any]) -> Any:
    write_config(tmp_path / "c", daemon.sb, metrics=metrics)
    return load_config(tmp_path / "c")


def test_metrics_listen_is_loopback_unless_allowed(daemon: Harness, tmp_path: Path) -> None:
    """A non-loopback `metrics.listen` is refused naming the key and the way out; with
    allow_non_loopback it is accepted; absent, nothing is served."""
    with pytest.raises(ConfigError, match=r"metrics\.listen.*not a loopback.*allow_non_loopback"):
        _config(tmp_path, daemon, {"listen": "0.0.0.0:9464"})
    with pytest.raises(ConfigError, match=r"metrics\.listen.*host:port"):
        _config(tmp_path, daemon, {"listen": "9464"})
    with pytest.raises(ConfigError, match=r"port 70000"):
        _config(tmp_path, daemon, {"listen": "127.0.0.1:70000"})
    allowed = _config(tmp_path, daemon, {"listen": "0.0.0.0:9464", "allow_non_loopback": True})
    assert allowed.metrics.address == ("0.0.0.0", 9464)
    assert _config(tmp_path, daemon, {"listen": "[::1]:9464"}).metrics.address == ("::1", 9464)
    write_config(tmp_path / "d", daemon.sb)
    assert load_config(tmp_path / "d").metrics.address is None


def test_a_reload_is_counted_and_a_new_metrics_listen_waits_for_a_restart(
    daemon: Harness,
) -> None:
    """An applied config change counts in capdaemon_config_reloads_total{outcome="applied"}, a
    refused one in "refused"; a changed `metrics:` is held back (the endpoints are bound once)."""
    daemon.configure()
    reloader = _reloader(daemon)
    ticker = daemon.ticker
    assert ticker is not None
    observed = Observed(ticker, reloader, lambda: 60.0, started=datetime.now(UTC))
    url, server = _serve(observed)
    try:

        def change(d: dict[str, Any]) -> None:
            d["owners"] = [*d["owners"], "carol"]
            d["metrics"] = {"listen": "127.0.0.1:9999"}

        _edit(daemon, change)
        daemon.tick()
        assert "carol" in ticker.config.owners and ticker.config.metrics.listen is None
        [rec] = daemon.actions("config.changed")
        assert rec["restart_needed"] == ["metrics"]
        _edit(daemon, lambda d: d.update(mode="sideways"))
        daemon.tick()
        got = _samples(_get(f"{url}/metrics")[1])
        assert got[("capdaemon_config_reloads_total", (("outcome", "applied"),))] == 1
        assert got[("capdaemon_config_reloads_total", (("outcome", "refused"),))] == 1
    finally:
        server.shutdown()


_hosts = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda a: f"[{a}]"),
    st.sampled_from(["localhost", "example.com", "", "::1", "127.0.0.1.evil"]),
    st.text(max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(host=_hosts, port=st.integers(min_value=-5, max_value=70000), allow=st.booleans())
def test_metrics_listen_accepts_only_loopback_or_what_is_allowed(
    host: str, port: int, allow: bool
) -> None:
    """Whatever `metrics.listen` holds, the loader either binds exactly that host and port —
    a loopback one unless allow_non_loopback — or refuses naming metrics.listen."""
    listen = f"{host}:{port}"
    data = {"metrics": {"listen": listen, "allow_non_loopback": allow}}
    try:
        got = load_capdaemon("capdaemon.yml", data)["metrics"]
    except ConfigError as exc:
        assert "metrics.listen" in str(exc)
        return
    bound, bound_port = got.address
    assert (bound, bound_port) == (host.strip("[]"), port) and 0 < port < 65536
    if not allow:
        assert bound == "localhost" or ipaddress.ip_address(bound).is_loopback

"""`capdaemon run`'s `/healthz` and Prometheus `/metrics` (config `metrics.listen`, off by default).

Nothing is counted twice: a custom collector reads, at each scrape, the facts where they
already live — tick_metrics.json's in-memory copy (ticks, tick seconds, merges, reaction
times), the forge's transport counters and rate-limit figures, the PR records, breaker.json,
and the config reloader's counts.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from capdaemon.decide.reaction import SUMMARY_KEY
from capdaemon.logging import get_logger
from capdaemon.model import Quadrant
from capdaemon.state import StateError
from capdaemon.stores.health import Health, judge, last_tick_at
from capdaemon.stores.prparts import PRState
from capdaemon.stores.safety_state import read_breaker

if TYPE_CHECKING:
    from capdaemon.daemon.core.tick import Ticker
    from capdaemon.daemon.service.reload import Reloader

log = get_logger("capdaemon.daemon")
QUANTILES = (("0.5", "p50"), ("0.95", "p95"), ("1", "max"))


@dataclass
class Observed:
    """What the endpoints read: the running Ticker, its reloader, the tick interval (a
    callable: a reloaded `schedule:` changes it) and when the daemon started."""

    ticker: Ticker
    reloader: Reloader | None
    tick_seconds: Callable[[], float]
    started: datetime
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    def breaker_open(self) -> bool:
        """breaker.json says tripped (a corrupt file counts as open: fail closed)."""
        try:
            return read_breaker(self.ticker.state_dir).state.tripped
        except StateError:
            return True

    def health(self) -> Health:
        """The `/healthz` answer now."""
        return judge(
            dict(self.ticker.metrics.data),
            breaker_open=self.breaker_open(),
            tick_seconds=self.tick_seconds(),
            now=self.clock(),
            running_since=self.started,
        )


class DaemonCollector:
    """The Prometheus families of one running daemon, read at each scrape."""

    def __init__(self, observed: Observed) -> None:
        self.observed = observed

    def collect(self) -> Iterator[Metric]:
        """Every family, from the facts as they are now."""
        o = self.observed
        data = dict(o.ticker.metrics.data)
        yield from _tick_families(data)
        yield from _wire_families(o.ticker.forge.rate_budget())
        yield from _pr_families(o.ticker)
        yield from _reaction_families(data.get(SUMMARY_KEY))
        yield _single(
            GaugeMetricFamily,
            "capdaemon_breaker_open",
            "1 while the circuit breaker is tripped (merges stop)",
            1.0 if o.breaker_open() else 0.0,
        )
        yield _single(
            GaugeMetricFamily,
            "capdaemon_shadow_mode",
            "1 in shadow mode (decide and record, never merge)",
            1.0 if o.ticker.shadow else 0.0,
        )
        reloads = CounterMetricFamily(
            "capdaemon_config_reloads",
            "config directory changes since start: applied, or refused (the running one kept)",
            labels=["outcome"],
        )
        counts = o.reloader.counts if o.reloader is not None else {}
        for outcome in ("applied", "refused"):
            reloads.add_metric([outcome], float(counts.get(outcome, 0)))
        yield reloads
        yield _single(
            GaugeMetricFamily,
            "capdaemon_start_time_seconds",
            "when the daemon started (epoch)",
            o.started.timestamp(),
        )


def _count(data: Mapping[str, Any], key: str) -> float:
    value = data.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _single(
    family: type[CounterMetricFamily] | type[GaugeMetricFamily], name: str, text: str, value: float
) -> Metric:
    """A family of one unlabelled sample (a counter's name without `_total`)."""
    out = family(name, text)
    out.add_metric([], value)
    return out


def _by_kind(name: str, text: str, data: Mapping[str, Any], keys: Mapping[str, str]) -> Metric:
    """A counter labelled `kind` (full / targeted), each from its tick_metrics.json key."""
    out = CounterMetricFamily(name, text, labels=["kind"])
    for kind, key in keys.items():
        out.add_metric([kind], _count(data, key))
    return out


def _tick_families(data: Mapping[str, Any]) -> Iterator[Metric]:
    yield _by_kind(
        "capdaemon_ticks",
        "ticks run, by kind (full, or targeted at repos seen changing)",
        data,
        {"full": "ticks", "targeted": "targeted_ticks"},
    )
    yield _by_kind(
        "capdaemon_merges",
        "PRs the daemon merged, by the kind of tick that merged them",
        data,
        {"full": "merged_total", "targeted": "targeted_merged"},
    )
    at = last_tick_at(data)
    for name, text, value in (
        ("duration_seconds", "the last full tick's wall time", _count(data, "last_tick_seconds")),
        (
            "timestamp_seconds",
            "when the last full tick started (epoch; 0: none yet)",
            at.timestamp() if at is not None else 0.0,
        ),
        ("errors", "errors in the last full tick", _count(data, "errors_last_tick")),
    ):
        yield _single(GaugeMetricFamily, f"capdaemon_last_tick_{name}", text, value)
    yield _single(
        CounterMetricFamily,
        "capdaemon_tick_gaps",
        "gaps between ticks: a frozen process, a suspended host or a stepped clock",
        _count(data, "gaps"),
    )
    classified = CounterMetricFamily(
        "capdaemon_classified", "PR heads classified, by quadrant", labels=["quadrant"]
    )
    for q in Quadrant:
        classified.add_metric([q.value], _count(data, f"quadrant_{q.value.lower()}_count"))
    yield classified


def _wire_families(budget: Mapping[str, Any]) -> Iterator[Metric]:
    sent, free = _count(budget, "requests"), _count(budget, "not_modified")
    for name, text, value in (
        ("requests", "HTTP requests sent to GitHub since start (304s included)", sent),
        (
            "counted_requests",
            "requests GitHub counts against the rate limit since start (all but 304 Not Modified)",
            max(0.0, sent - free),
        ),
        ("writes", "write requests sent since start", _count(budget, "writes")),
    ):
        yield _single(CounterMetricFamily, f"capdaemon_github_{name}", text, value)
    for key, name, text in (
        (
            "remaining",
            "capdaemon_github_rate_limit_remaining",
            "requests left in the hour (tightest installation)",
        ),
        (
            "limit",
            "capdaemon_github_rate_limit",
            "the hourly request limit (tightest installation)",
        ),
    ):
        if isinstance(budget.get(key), int):
            yield _single(GaugeMetricFamily, name, text, float(budget[key]))


def _pr_families(ticker: Ticker) -> Iterator[Metric]:
    prs = GaugeMetricFamily(
        "capdaemon_prs",
        "PRs the daemon has a record of, by quadrant and state",
        labels=["quadrant", "state"],
    )
    counts = {(q.value, s.value): 0 for q in Quadrant for s in PRState}
    for rec in list(ticker.prs.records.values()):
        key = (rec.quadrant.value if rec.quadrant else "none", rec.state.value)
        counts[key] = counts.get(key, 0) + 1
    for (quadrant, state), n in sorted(counts.items()):
        prs.add_metric([quadrant, state], float(n))
    yield prs


def _reaction_families(summary: Any) -> Iterator[Metric]:
    seconds = GaugeMetricFamily(
        "capdaemon_reaction_seconds",
        "seconds from a change on GitHub to the daemon's action over the last 24 hours, by kind"
        " (check_published, ballot_counted, merge_done) and quantile",
        labels=["kind", "quantile"],
    )
    count = GaugeMetricFamily(
        "capdaemon_reactions", "actions timed over the last 24 hours, by kind", labels=["kind"]
    )
    for kind, stats in (summary or {}).items() if isinstance(summary, dict) else ():
        if not isinstance(stats, dict):
            continue
        for quantile, key in QUANTILES:
            seconds.add_metric([kind, quantile], _count(stats, key))
        count.add_metric([kind], _count(stats, "n"))
    yield seconds
    yield count


def make_server(observed: Observed, host: str, port: int) -> ThreadingHTTPServer:
    """The HTTP server of `/healthz` and `/metrics` (GET/HEAD; anything else 404/405)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DaemonCollector(observed))

    class Handler(BaseHTTPRequestHandler):
        server_version = "capdaemon"
        sys_version = ""

        def log_message(self, format: str, *args: object) -> None:
            return

        def _send(self, status: int, ctype: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            try:
                if path == "/metrics":
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry))
                elif path == "/healthz":
                    h = observed.health()
                    self._send(h.status, "application/json", health_json(h))
                else:
                    self._send(404, "text/plain; charset=utf-8", b"/healthz or /metrics\n")
            except Exception as exc:  # a scrape must never kill the daemon: say why, 500
                log.exception("metrics.failed", path=path)
                self._send(500, "text/plain; charset=utf-8", f"{type(exc).__name__}\n".encode())

        do_HEAD = do_GET

        def _refuse(self) -> None:
            self._send(405, "text/plain; charset=utf-8", b"405 method not allowed\n")

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    return (_V6Server if ":" in host else _Server)((host, port), Handler)


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class _V6Server(_Server):
    address_family = socket.AF_INET6


def health_json(health: Health) -> bytes:
    """The `/healthz` body."""
    return (json.dumps(health.body, sort_keys=True) + "\n").encode("utf-8")


class Endpoints:
    """The server on its own thread while the daemon runs (a context manager)."""

    def __init__(self, observed: Observed, address: tuple[str, int] | None) -> None:
        self.server = make_server(observed, *address) if address is not None else None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Endpoints:
        if self.server is not None:
            host, port = self.server.server_address[:2]
            self._thread = threading.Thread(
                target=self.server.serve_forever, name="metrics-http", daemon=True
            )
            self._thread.start()
            log.info("metrics.listening", url=f"http://{_hostport(str(host), int(port))}/metrics")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

"""The daemon's health as `/healthz` answers it: the last full tick's age and outcome, the breaker.

One judgment for both servers that answer `/healthz` (`capdaemon run` with `metrics.listen`,
and the dashboard): healthy (200) while the last full tick is younger than STALE_TICKS tick
intervals and the breaker is closed; 503 otherwise, the body saying which.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from capdaemon.filenames import METRICS_FILE
from capdaemon.state import StateError, read_json
from capdaemon.stores.safety_state import read_breaker
from capdaemon.timefmt import parse_utc

STALE_TICKS = 3  # a last tick older than this many intervals: the daemon is not ticking


@dataclass(frozen=True)
class Health:
    """A `/healthz` answer: its HTTP status and its JSON body."""

    status: int
    body: dict[str, Any]


def judge(
    metrics: Mapping[str, Any],
    *,
    breaker_open: bool,
    tick_seconds: float,
    now: datetime,
    running_since: datetime | None = None,
) -> Health:
    """The health from tick_metrics.json's facts and the breaker. `running_since`: when the
    daemon answering started (no tick yet is healthy for STALE_TICKS intervals after it)."""
    stale_after = STALE_TICKS * tick_seconds
    last = last_tick_at(metrics)
    since = last or running_since
    age = (now - since).total_seconds() if since is not None else None
    body = _last_tick(metrics) if last is not None and age is not None else _no_tick()
    if last is not None and age is not None:
        body["last_tick_age_seconds"] = round(age, 1)
    body.update(
        stale_after_seconds=stale_after,
        breaker="open" if breaker_open else "closed",
        mode=metrics.get("mode"),
    )
    problems = []
    if age is None or age > stale_after:
        problems.append("no tick yet" if last is None else "stale")
    if breaker_open:
        problems.append("breaker open")
    body["status"] = "; ".join(problems) if problems else "ok"
    return Health(503 if problems else 200, body)


def _last_tick(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The last full tick's facts as tick_metrics.json has them."""
    errors = metrics.get("errors_last_tick")
    return {
        "last_tick_at": metrics.get("last_tick_at"),
        "last_tick_seconds": metrics.get("last_tick_seconds"),
        "last_tick_outcome": "errors" if errors else "ok",
        "last_tick_errors": errors,
    }


def _no_tick() -> dict[str, Any]:
    keys = ("at", "seconds", "outcome", "errors", "age_seconds")
    return {f"last_tick_{k}": None for k in keys}


def read_health(state_dir: Path, *, tick_seconds: float, now: datetime) -> Health:
    """The health from the files in `state_dir` (the dashboard's view): a state file that
    cannot be read is unhealthy, named in the body."""
    try:
        raw = read_json(Path(state_dir) / METRICS_FILE, None)
        if raw is not None and not isinstance(raw, dict):
            raise StateError(f"{Path(state_dir) / METRICS_FILE}: not a JSON object")
        breaker_open = read_breaker(Path(state_dir)).state.tripped
    except (StateError, OSError) as exc:
        return Health(503, {"status": f"unreadable state: {exc}"})
    return judge(raw or {}, breaker_open=breaker_open, tick_seconds=tick_seconds, now=now)


def last_tick_at(metrics: Mapping[str, Any]) -> datetime | None:
    """When the last full tick started, from tick_metrics.json's `last_tick_at` (None when
    there is none or it is not an aware ISO time)."""
    try:
        return parse_utc(metrics.get("last_tick_at"), "last_tick_at")  # type: ignore[arg-type]
    except ValueError:
        return None

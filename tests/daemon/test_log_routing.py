"""With `--log-format json`, everything on stderr is one JSON event per line: the scheduler's
and other libraries' stdlib logging too, and an overrunning tick is one `tick.overrun` event."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import structlog
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from capdaemon.daemon.service.runner import watch_overruns
from capdaemon.logging import configure_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """These tests point logging at a buffer; later tests get the previous set-up back."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**saved)
    root.handlers[:] = handlers
    root.setLevel(level)


def _events(text: str) -> list[dict[str, object]]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return [json.loads(ln) for ln in lines]  # fails on any non-JSON line


def test_stdlib_logging_is_rendered_as_json_events() -> None:
    """A library's logging.warning comes out as a JSON event with level and component."""
    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    logging.getLogger("urllib3.connectionpool").warning("Connection pool is full: %s", "x")
    (event,) = _events(out.getvalue())
    assert event["event"] == "Connection pool is full: x"
    assert event["level"] == "warning" and event["component"] == "urllib3.connectionpool"
    assert "timestamp" in event


def test_an_overrunning_tick_is_one_structured_event() -> None:
    """A tick still running at its next start: `tick.overrun`, and not the scheduler's plain
    "skipped: maximum number of running instances reached" text; the change detector's
    wake-ups skipped meanwhile are not warned of (one a second would bury the log)."""
    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    release = threading.Event()
    sched = BackgroundScheduler(timezone=UTC, executors={"default": ThreadPoolExecutor(4)})
    for job_id in ("tick", "detect"):  # the detector's wake-ups are held up as often
        sched.add_job(
            release.wait,
            "interval",
            seconds=0.3,
            id=job_id,
            max_instances=1,
            next_run_time=datetime.now(UTC),
            misfire_grace_time=5,
        )
    watch_overruns(sched, 0.3)
    sched.start()
    try:
        deadline = time.monotonic() + 10
        while "tick.overrun" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        release.set()
        sched.shutdown(wait=True)
    events = _events(out.getvalue())
    overruns = [e for e in events if e["event"] == "tick.overrun"]
    assert overruns and overruns[0]["job"] == "tick" and overruns[0]["level"] == "warning"
    assert {e["job"] for e in overruns} == {"tick"}  # a skipped detector wake-up is normal
    assert not any("maximum number of running instances" in str(e["event"]) for e in events)


class _SlowStream(io.StringIO):
    """A stream as slow to take a write as a busy journal pipe: another thread may run
    between any two writes."""

    def write(self, text: str) -> int:
        time.sleep(0.0002)
        return super().write(text)


def test_events_logged_from_several_threads_at_once_stay_one_per_line() -> None:
    """The scheduler's thread, the change detector's and the tick log at the same moment, some
    through structlog and some through stdlib logging: every line is still one JSON event, and
    none is lost."""
    buf = _SlowStream()
    configure_logging("json", "info", stream=buf)
    log = structlog.get_logger("capdaemon.test")
    stdlib = logging.getLogger("apscheduler.test")

    def talk(n: int) -> None:
        for i in range(60):
            if (n + i) % 2:
                log.info("tick.step", thread=n, i=i)
            else:
                stdlib.warning("job %s run %s", n, i)

    threads = [threading.Thread(target=talk, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = _events(buf.getvalue())
    assert len(events) == 240
    assert sum(1 for e in events if e["event"] == "tick.step") == 120

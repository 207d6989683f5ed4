"""The digest at start-up: a catch-up only when the deployment posted digests before, said in
the log, the audit record and the digest itself; a new deployment waits for the digest time."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from structlog.testing import capture_logs

from capdaemon.daemon.service import digest_job

from .conftest import SafetyHarness

SEOUL = {"timezone": "Asia/Seoul", "digest_time": "09:00"}
DAY1_0900 = datetime(2026, 5, 25, 0, 0, tzinfo=UTC)  # 09:00 KST
DAY2_1400 = datetime(2026, 5, 26, 5, 0, tzinfo=UTC)  # 14:00 KST the next day


def _startup(safe: SafetyHarness, now: datetime) -> tuple[Any, list[dict[str, Any]]]:
    """Run the start-up digest job as `capdaemon run` schedules it; (its result, the logs)."""
    sched = BackgroundScheduler(timezone=UTC)
    digest_job.add_digest_job(sched, safe.ticker or safe.start(), clock=lambda: now)
    startup = sched.get_job("digest-startup")
    with capture_logs() as logs:
        got = startup.func(*startup.args, **startup.kwargs)
    return got, logs


def test_a_new_deployment_started_after_nine_posts_no_digest_and_says_why(
    safe: SafetyHarness,
) -> None:
    """First start at 14:00: nothing posted, `digest.first_at` logged with the reason; the
    scheduled run the next morning posts the first digest."""
    safe.configure(schedule=SEOUL)
    got, logs = _startup(safe, DAY2_1400)
    assert got is None and safe.issues("digest") == []
    (first,) = [e for e in logs if e["event"] == "digest.first_at"]
    assert "a new deployment" in first["reason"] and "09:00 Asia/Seoul" in first["reason"]
    t = safe.ticker
    assert t is not None
    assert digest_job.send_if_due(t.config, t.state_dir, t.forge, DAY2_1400.replace(day=27, hour=0))
    assert [r["reason"] for r in safe.actions("digest")] == ["scheduled"]


def test_a_restart_after_nine_catches_up_and_says_so_everywhere(safe: SafetyHarness) -> None:
    """Digests were posted before; down at 09:00 the next day, started at 14:00: the missed
    digest is posted at once, logged as `digest.catch_up` with its reason, audited as a
    catch-up, and its text says it was posted late."""
    safe.configure(schedule=SEOUL)
    t = safe.start()
    assert digest_job.send_if_due(t.config, t.state_dir, t.forge, DAY1_0900) == date(2026, 5, 25)
    got, logs = _startup(safe, DAY2_1400)
    assert got == date(2026, 5, 26)
    (caught,) = [e for e in logs if e["event"] == "digest.catch_up"]
    assert "started after 09:00 Asia/Seoul" in caught["reason"]
    assert "2026-05-26 was not posted" in caught["reason"] and "2026-05-25" in caught["reason"]
    assert [r["reason"] for r in safe.actions("digest")] == ["scheduled", "catch-up"]
    issue = next(i for i in safe.issues("digest") if i.title.endswith("2026-05-26"))
    assert "Posted late, at start-up" in issue.body
    got, _ = _startup(safe, DAY2_1400)
    assert got is None  # never twice for one day

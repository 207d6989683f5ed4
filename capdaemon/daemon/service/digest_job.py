"""The daily digest (SPEC 7): rendered from its facts (digest_facts), written, posted once a day
at its time, with a logged catch-up at start-up."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from capdaemon.audit import AuditLog, log_paths
from capdaemon.config import Config
from capdaemon.daemon.service.digest_facts import gather
from capdaemon.decide.digest import (
    digest_due,
    parse_digest_time,
    render_digest,
)
from capdaemon.decide.labels import Label
from capdaemon.filenames import DIGEST_DIR, DIGEST_STATE_FILE
from capdaemon.logging import get_logger
from capdaemon.state import StateError, atomic_write_json, atomic_write_text, file_lock, read_json
from capdaemon.stores.prfile import pr_records as pr_records  # its one home (read-only)
from capdaemon.timefmt import utc_iso

if TYPE_CHECKING:
    from capdaemon.daemon.core.tick import Ticker
    from capdaemon.forge.port import ForgePort

MISFIRE_GRACE_SECONDS = 6 * 3600  # a daemon down at 09:00 still sends it when back by 15:00
RETRY_MINUTES = 10
MAX_RETRIES = 6

log = get_logger("capdaemon.digest")


def last_sent(state_dir: Path) -> date | None:
    """The local date of the last digest posted (bot-state/digest_state.json)."""
    raw = read_json(Path(state_dir) / DIGEST_STATE_FILE, None)
    if raw is None:
        return None
    try:
        return date.fromisoformat(raw["last_sent_date"])
    except (TypeError, KeyError, ValueError) as exc:
        raise StateError(f"{Path(state_dir) / DIGEST_STATE_FILE}: malformed ({exc})") from exc


def render_for(
    config: Config, state_dir: Path, day: date, now: datetime, *, catch_up: bool = False
) -> str:
    """The digest Markdown of local date `day` as of `now` (`catch_up`: posted at start-up,
    late, and it says so)."""
    facts = gather(config, state_dir, day, now)
    return render_digest(dataclasses.replace(facts, catch_up=catch_up), now)


def write(state_dir: Path, day: date, text: str) -> Path:
    """Write bot-state/digests/YYYY-MM-DD.md atomically; its path."""
    path = Path(state_dir) / DIGEST_DIR / f"{day.isoformat()}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    return path


def post(config: Config, forge: ForgePort, day: date, text: str) -> int | None:
    """Post (or update) the digest issue of `day` in the decision repo; its number."""
    repo = config.ballot_repo
    if repo is None:
        return None
    issue = forge.ensure_issue(
        repo,
        {"kind": "digest", "date": day.isoformat()},
        f"capdaemon digest {day.isoformat()}",
        text,
        [Label.DIGEST.value],
    )
    return int(issue.number)


CATCH_UP = "catch-up"  # posted at start-up: the daemon was not running at digest time
SCHEDULED = "scheduled"


def send_if_due(
    config: Config, state_dir: Path, forge: ForgePort, now: datetime, *, startup: bool = False
) -> date | None:
    """Send today's digest when it is due and not yet sent; the date sent, else None.

    At start-up (`startup`) a due digest is a catch-up: the daemon was not running at the
    digest time. It is sent when an earlier digest was (the deployment ran before: owners
    expect today's), said in the log (`digest.catch_up`, with the reason), in the audit
    record and at the top of the digest. A new deployment (no digest ever sent) posts
    nothing at start-up: its first digest comes at the next digest time (`digest.first_at`).

    Order for crash safety: file, issue (found again by its marker), then the sent date
    and the audit record — a crash in between re-posts into the same issue, never a second.
    """
    state_dir = Path(state_dir)
    sched = config.schedule
    with file_lock(state_dir / (DIGEST_STATE_FILE + ".lock")):
        before = last_sent(state_dir)
        day = digest_due(now, before, sched.digest_time, sched.timezone)
        if day is None:
            return None
        at = f"{sched.digest_time} {sched.timezone}"
        if startup and before is None:
            log.info(
                "digest.first_at",
                reason=f"a new deployment: no digest was ever posted, so nothing is caught up; "
                f"the first is posted at the next {at}",
            )
            return None
        reason = CATCH_UP if startup else SCHEDULED
        if startup:
            log.info(
                "digest.catch_up",
                date=day.isoformat(),
                reason=f"started after {at} and the digest of {day.isoformat()} was not posted "
                f"(the last one was {before.isoformat() if before else 'never'})",
            )
        text = render_for(config, state_dir, day, now, catch_up=startup)
        path = write(state_dir, day, text)
        number = post(config, forge, day, text)
        atomic_write_json(
            state_dir / DIGEST_STATE_FILE, {"last_sent_date": day.isoformat(), "at": utc_iso(now)}
        )
        issue = f"{config.ballot_repo}#{number}" if number is not None else None
        AuditLog(log_paths(state_dir)[1]).append(
            {
                "action": "digest",
                "date": day.isoformat(),
                "issue": issue,
                "file": path.name,
                "reason": reason,
            },
            now=now,
        )
        log.info("digest.sent", date=day.isoformat(), issue=number, reason=reason)
        return day


def cron_trigger(config: Config) -> Any:
    """The APScheduler CronTrigger at schedule.digest_time in schedule.timezone."""
    from apscheduler.triggers.cron import CronTrigger

    at = parse_digest_time(config.schedule.digest_time)
    return CronTrigger(hour=at.hour, minute=at.minute, timezone=ZoneInfo(config.schedule.timezone))


def add_digest_job(
    scheduler: Any, ticker: Ticker, *, clock: Callable[[], datetime] | None = None
) -> Callable[[], date | None]:
    """Schedule the digest: daily at digest_time (misfire grace 6 h, coalesced) and once at
    start-up (a catch-up: sends only when today's is due and missing, and a digest was sent
    before; see send_if_due). A failed post retries every 10 min
    (at most 6 times). Returns the job function (tests call it directly)."""
    clock = clock or (lambda: datetime.now(UTC))
    retries = {"n": 0}

    def job(startup: bool = False) -> date | None:
        try:
            sent = send_if_due(
                ticker.config, ticker.state_dir, ticker.forge, clock(), startup=startup
            )
        except StateError:
            raise
        except Exception as exc:  # a failed post: retried soon, never twice (marker, sent date)
            log.warning("digest.failed", error=f"{type(exc).__name__}: {exc}"[:300])
            if retries["n"] < MAX_RETRIES and getattr(scheduler, "running", True):
                retries["n"] += 1
                scheduler.add_job(
                    job,
                    "date",
                    run_date=clock() + timedelta(minutes=RETRY_MINUTES),
                    id="digest-retry",
                    replace_existing=True,
                    kwargs={"startup": startup},
                )
            return None
        retries["n"] = 0
        return sent

    scheduler.add_job(
        job,
        cron_trigger(ticker.config),
        id="digest",
        max_instances=1,
        coalesce=True,
        misfire_grace_time=MISFIRE_GRACE_SECONDS,
        replace_existing=True,
    )
    scheduler.add_job(
        job,
        "date",
        run_date=clock(),
        id="digest-startup",
        replace_existing=True,
        kwargs={"startup": True},
    )
    return job

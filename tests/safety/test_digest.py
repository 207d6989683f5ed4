"""The daily digest (SPEC 7): 09:00 local schedule, once per day, after a restart, every section."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from apscheduler.schedulers.background import BackgroundScheduler

from capdaemon.audit import AuditLog, log_paths, read_records
from capdaemon.cli import main as cli
from capdaemon.config import Config, ScheduleConfig
from capdaemon.daemon.service import digest_facts, digest_job

from .conftest import SafetyHarness

SEOUL_9 = datetime(2026, 5, 25, 0, 0, tzinfo=UTC)  # 09:00 KST (UTC+9, no DST)


def _fires(tz: str, after: datetime, n: int) -> list[datetime]:
    trigger = digest_job.cron_trigger(Config(schedule=ScheduleConfig(timezone=tz)))
    out, prev, now = [], None, after
    for _ in range(n):
        nxt = trigger.get_next_fire_time(prev, now)
        out.append(nxt.astimezone(UTC))
        prev, now = nxt, nxt
    return out


def test_cron_fires_at_nine_local_in_a_dst_free_and_a_dst_zone() -> None:
    """09:00 Asia/Seoul is always 00:00 UTC; 09:00 New York moves from 14:00 to 13:00 UTC."""
    seoul = _fires("Asia/Seoul", datetime(2026, 3, 6, 12, tzinfo=UTC), 4)
    assert {d.hour for d in seoul} == {0} and [d.day for d in seoul] == [7, 8, 9, 10]
    ny = _fires("America/New_York", datetime(2026, 3, 6, 15, tzinfo=UTC), 3)  # DST starts 8 March
    assert [(d.day, d.hour) for d in ny] == [(7, 14), (8, 13), (9, 13)]
    assert all(d.astimezone(ZoneInfo("America/New_York")).hour == 9 for d in ny)


def test_job_is_coalesced_with_a_generous_misfire_grace(safe: SafetyHarness) -> None:
    """add_digest_job adds the 09:00 cron job (coalesce, hours of grace) and a start-up run."""
    safe.configure()
    sched = BackgroundScheduler(timezone=UTC)
    job_fn = digest_job.add_digest_job(sched, safe.start(), clock=lambda: SEOUL_9)
    jobs = {j.id: j for j in sched.get_jobs()}
    assert set(jobs) == {"digest", "digest-startup"}
    assert jobs["digest"].coalesce and jobs["digest"].misfire_grace_time >= 3600
    assert jobs["digest"].max_instances == 1
    assert job_fn() == date(2026, 5, 25)
    assert job_fn() is None  # never twice for one day


def test_sent_once_per_day_and_after_a_restart_at_0905(safe: SafetyHarness) -> None:
    """Due at 09:00 KST: file + `digest` issue; not again that day; not before 09:00 the next day;
    a daemon restarted at 09:05 still sends that day's, into its own issue."""
    safe.configure()
    t = safe.start()
    assert (
        digest_job.send_if_due(
            t.config, t.state_dir, t.forge, SEOUL_9.replace(hour=23, minute=59, day=24)
        )
        is None
    )
    assert digest_job.send_if_due(t.config, t.state_dir, t.forge, SEOUL_9) == date(2026, 5, 25)
    assert digest_job.send_if_due(t.config, t.state_dir, t.forge, SEOUL_9.replace(hour=5)) is None
    assert (safe.state_dir / "digests" / "2026-05-25.md").exists()
    nearly = datetime(2026, 5, 25, 23, 59, tzinfo=UTC)  # 08:59 KST on the 26th
    assert digest_job.send_if_due(t.config, t.state_dir, t.forge, nearly) is None
    safe.stop()  # restart
    t = safe.start()
    late = datetime(2026, 5, 26, 0, 5, tzinfo=UTC)
    assert digest_job.send_if_due(t.config, t.state_dir, t.forge, late) == date(2026, 5, 26)
    digests = safe.issues("digest")
    assert sorted(i.title for i in digests) == [
        "capdaemon digest 2026-05-25",
        "capdaemon digest 2026-05-26",
    ]
    assert all("digest" in [lb.name for lb in i.labels] for i in digests)
    assert [r["date"] for r in safe.actions("digest")] == ["2026-05-25", "2026-05-26"]


def test_dst_zone_digest_is_due_at_nine_local(safe: SafetyHarness) -> None:
    """In America/New_York (EDT) the digest is due at 13:00 UTC, not at 14:00."""
    safe.configure(schedule={"timezone": "America/New_York"})
    t = safe.start()
    assert (
        digest_job.send_if_due(
            t.config, t.state_dir, t.forge, datetime(2026, 5, 25, 12, 59, tzinfo=UTC)
        )
        is None
    )
    assert digest_job.send_if_due(
        t.config, t.state_dir, t.forge, datetime(2026, 5, 25, 13, 0, tzinfo=UTC)
    ) == date(2026, 5, 25)


def test_digest_has_every_section(safe: SafetyHarness, capsys: object) -> None:
    """After a day of work the digest shows quadrants (Mermaid pie), merges, ballots with age,
    scope violations, breaker, burn-in, errors and rate-limit use (`capdaemon digest --print`)."""
    safe.configure()
    safe.open_pr({"examples/old.py": "print('v2')\n"})
    safe.open_pr({".github/workflows/ci.yml": "name: ci2\n"}, title="CI change")
    safe.tick()
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir)]
    assert (
        cli(["digest", "--date", "2026-05-26", "--print", "--now", "2026-05-26T00:00:00Z", *args])
        == 0
    )
    text = capsys.readouterr().out  # type: ignore[attr-defined]
    for heading in (
        "# capdaemon digest — 2026-05-26 (Asia/Seoul)",
        "## Quadrants",
        "```mermaid",
        "pie title Quadrants",
        "## Merges (1)",
        "## Pending ballots (1)",
        "## Attention (P1)",
        "## Auto-closed reviews",
        "### Scope violations",
        "### Escalations",
        "## Circuit breaker",
        "## Burn-in clocks",
        "claude-code/claude-opus-4",
        "## Errors",
        "## Rate limit",
    ):
        assert heading in text, heading
    assert "21 h" in text  # the ballot's age (opened 03:00 UTC, digest at 00:00 UTC next day)
    assert not (safe.state_dir / "digests" / "2026-05-26.md").exists()  # --print writes nothing


def test_digest_publishes_audit_anchors_that_catch_a_rebuilt_log(
    safe: SafetyHarness, tmp_path
) -> None:
    """The digest file and issue carry one anchor per log (the newest entries at render time);
    `audit verify` with the issue text passes, and fails once the host rebuilds a log."""
    from capdaemon.anchors import find_anchors
    from capdaemon.audit import log_paths
    from tests.core.test_audit_anchors import rewrite_chain

    safe.configure()
    safe.open_pr({".github/workflows/ci.yml": "name: ci2\n"}, title="CI change")
    safe.tick()
    t = safe.ticker or safe.start()
    clog, alog = log_paths(safe.state_dir)
    heads = [list(read_records(p))[-1] for p in (clog, alog)]
    assert digest_job.send_if_due(t.config, t.state_dir, t.forge, SEOUL_9) == date(2026, 5, 25)
    (issue,) = safe.issues("digest")
    saved = tmp_path / "issue.md"
    saved.write_text(issue.body, encoding="utf-8")
    anchors = find_anchors(issue.body)
    assert [(a.log, a.seq, a.hash) for a in anchors] == [
        (p.name, h["seq"], h["hash"]) for p, h in zip((clog, alog), heads, strict=True)
    ]
    assert find_anchors((safe.state_dir / "digests" / "2026-05-25.md").read_text()) == anchors
    safe.stop()
    state = ["--state", str(safe.state_dir)]
    assert cli(["audit", "verify", *state, "--anchors-from", str(saved)]) == 0
    assert cli(["audit", "verify", *state, "--anchors-from-digests"]) == 0
    rewrite_chain(clog, edit=lambda body: {**body, "quadrant": "A"})
    assert cli(["audit", "verify", *state]) == 0  # the rebuilt chain looks whole
    assert cli(["audit", "verify", *state, "--anchors-from", str(saved)]) == 1


def test_broken_or_empty_logs_are_not_anchored(tmp_path) -> None:
    """A log with no entries gets a note; one whose chain fails gets a note and an error,
    never an anchor (an anchor vouches for the whole chain up to it)."""
    from capdaemon.audit import AuditLog, log_paths

    clog, _ = log_paths(tmp_path)
    AuditLog(clog).append({"pr": "o/r#1", "quadrant": "D"}, now=SEOUL_9)
    errors: list[str] = []
    anchors, notes = digest_facts.audit_anchors(tmp_path, errors)
    assert [a.log for a in anchors] == ["classifier_audit.jsonl"] and errors == []
    assert notes == ("actions.jsonl: no entries yet",)
    clog.write_text(clog.read_text().replace('"D"', '"A"'))
    anchors, notes = digest_facts.audit_anchors(tmp_path, errors)
    assert anchors == ()
    assert notes[0] == "classifier_audit.jsonl: not anchored, its chain check failed (see Errors)"
    assert errors == [
        "audit chain check failed: classifier_audit.jsonl:1: hash does not match the content"
    ]


def test_failed_actions_probes_and_drift_are_the_digest_errors(
    safe: SafetyHarness, capsys: object
) -> None:
    """A failed action, a failed probe and a protection drift each give one line under
    "Errors" (time, action, PR or repo, why); the "attempted" record before a failure does not."""
    safe.configure()
    safe.tick()
    safe.stop()
    log, now = AuditLog(log_paths(safe.state_dir)[1]), safe.sb.now()
    merge = {"action": "merge", "pr": "acme/widgets#9", "head_sha": "a" * 40}
    log.append({**merge, "status": "attempted"}, now=now)
    log.append({**merge, "status": "failed", "reason": "head moved"}, now=now)
    log.append({"action": "probe.failed", "repo": "acme/widgets", "error": "no CI"}, now=now)
    log.append({"action": "protection.drift", "repo": "acme/x", "problems": "no PRs"}, now=now)
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir)]
    argv = ["digest", "--date", "2026-05-26", "--print", "--now", "2026-05-26T00:00:00Z", *args]
    assert cli(argv) == 0
    text = capsys.readouterr().out  # type: ignore[attr-defined]
    errors = text.split("## Errors")[1].split("## ")[0]
    lines = [ln for ln in errors.splitlines() if "acme/" in ln]
    assert [ln.split(" ", 2)[2] for ln in lines] == [
        r"merge acme/widgets\#9: head moved",  # Markdown-escaped
        "probe.failed acme/widgets: no CI",
        "protection.drift acme/x: no PRs",
    ], errors

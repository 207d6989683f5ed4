"""`why` folds a re-check's record that repeats the last one of its kind, and nothing else:
a person's events (taps, votes, commands) are each told with their time and reason."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from capdaemon.audit import AuditLog
from capdaemon.cli import main as cli
from capdaemon.filenames import ACTIONS_LOG
from capdaemon.story import tell


def _classified(ts: str, head: str, quadrant: str = "A") -> dict[str, object]:
    return {"ts": ts, "seq": int(ts[-3:-1]), "pr": "o/r#1", "head_sha": head * 40,
            "quadrant": quadrant, "reasoning": "r", "fingerprint": ts}  # fmt: skip


def test_a_repeat_at_the_same_head_is_folded_a_change_is_not() -> None:
    """Same head and verdict twice: one line plus "re-checked"; a new head, a new verdict at
    the same head, and a head that comes back after another are each told."""
    records = [
        _classified("2026-05-25T03:00:01Z", "a"),
        _classified("2026-05-25T03:00:02Z", "a"),  # folded
        _classified("2026-05-25T03:00:03Z", "a", "D"),  # the verdict changed: told
        _classified("2026-05-25T03:00:04Z", "b", "D"),  # a push: told
        _classified("2026-05-25T03:00:05Z", "a", "D"),  # back to a: told, not folded away
    ]
    lines = tell(records)
    told = [ln for ln in lines if "  classified " in ln]
    assert [ln.split()[2:5] for ln in told] == [
        ["A", "at", "a" * 10 + ":"],
        ["D", "at", "a" * 10 + ":"],
        ["D", "at", "b" * 10 + ":"],
        ["D", "at", "a" * 10 + ":"],
    ]
    notes = [ln.strip() for ln in lines if "re-checked" in ln]
    assert notes == [
        "re-checked 1 more time(s) at the same head with the same outcome (a check run or a "
        "label changed), last at 2026-05-25T03:00:02Z"
    ]


def test_each_refused_tap_is_told_with_its_time_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three Telegram taps refused at the same PR: `capdaemon why` prints each, with its own
    time and reason (they were folded into one "recorded again ... (a check run or a label
    changed)" line, which is not why they repeated, with only the last time)."""
    log = AuditLog(tmp_path / ACTIONS_LOG)
    refused = {"action": "telegram_tap", "pr": "acme/widgets#7", "request": "r1",
               "user": 42, "by": "bob", "counted": False}  # fmt: skip
    times = [datetime(2026, 5, 25, 3, 0, s, tzinfo=UTC) for s in (1, 9, 30)]
    reasons = ["bob is not an owner", "bob is not an owner", "the request expired at 03:00:20Z"]
    for at, reason in zip(times, reasons, strict=True):
        log.append({**refused, "reason": reason}, now=at)
    assert cli(["why", "acme/widgets#7", "--state", str(tmp_path)]) == 0
    taps = [ln for ln in capsys.readouterr().out.splitlines() if "telegram tap" in ln]
    assert [ln[:20] for ln in taps] == [
        "2026-05-25T03:00:01Z",
        "2026-05-25T03:00:09Z",
        "2026-05-25T03:00:30Z",
    ]
    assert [ln.split("reason: ", 1)[1].split(";")[0] for ln in taps] == reasons
    assert all("counted: False" in ln for ln in taps)


def test_only_a_recheck_folds_never_a_person_s_event() -> None:
    """A classification and a scope violation repeated at the same head fold; repeated votes
    ignored, commands ignored and refused taps are each told."""
    base = {"pr": "o/r#1", "head_sha": "a" * 40}
    records: list[dict[str, object]] = [
        {"ts": f"2026-05-25T03:00:0{i}Z", **base, "action": action, "reason": "same"}
        for action in ("scope_violation", "vote_ignored", "command_ignored", "telegram_tap")
        for i in (1, 2)
    ]
    lines = tell(records)
    assert sum("scope violation" in ln for ln in lines) == 1
    assert sum("recorded again 1 more time(s)" in ln for ln in lines) == 1
    for what in ("vote ignored", "command ignored", "telegram tap"):
        assert sum(f"  {what}" in ln for ln in lines) == 2, (what, lines)

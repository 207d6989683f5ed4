"""Daily digest (SPEC 7): schedule once per local day, DST zones, and every section of the text."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from capdaemon.decide.breaker import BreakerState, Incident, IncidentKind
from capdaemon.decide.burnin import BurnInState, observe
from capdaemon.decide.digest import (
    DigestBallot,
    DigestFacts,
    DigestItem,
    DigestMerge,
    RateUse,
    digest_due,
    digest_period,
    render_digest,
)
from capdaemon.model import Quadrant

SEOUL = ZoneInfo("Asia/Seoul")
NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def local(tz: ZoneInfo, y: int, mo: int, d: int, h: int, mi: int = 0) -> datetime:
    """An aware local time."""
    return datetime(y, mo, d, h, mi, tzinfo=tz)


D = date(2026, 5, 25)
DUE_CASES = [
    ("seoul-before-9", local(SEOUL, 2026, 5, 25, 8, 59), None, "Asia/Seoul", None),
    ("seoul-at-9", local(SEOUL, 2026, 5, 25, 9, 0), None, "Asia/Seoul", D),
    ("seoul-restart-0905", local(SEOUL, 2026, 5, 25, 9, 5), date(2026, 5, 24), "Asia/Seoul", D),
    ("seoul-already-sent", local(SEOUL, 2026, 5, 25, 9, 5), D, "Asia/Seoul", None),
    (
        "seoul-evening-not-sent",
        local(SEOUL, 2026, 5, 25, 23, 0),
        date(2026, 5, 24),
        "Asia/Seoul",
        D,
    ),
    ("seoul-after-midnight", local(SEOUL, 2026, 5, 26, 0, 30), D, "Asia/Seoul", None),
    # The same instant as 00:05 UTC is 09:05 in Seoul: the zone, not UTC, decides.
    ("utc-input-converted", datetime(2026, 5, 25, 0, 5, tzinfo=UTC), None, "Asia/Seoul", D),
    (
        "utc-input-before",
        datetime(2026, 5, 24, 23, 55, tzinfo=UTC),
        date(2026, 5, 24),
        "Asia/Seoul",
        None,
    ),
    # New York springs forward on 2026-03-08 (02:00 → 03:00) and falls back on 2026-11-01.
    (
        "ny-dst-start-day",
        local(NY, 2026, 3, 8, 9, 0),
        date(2026, 3, 7),
        "America/New_York",
        date(2026, 3, 8),
    ),
    (
        "ny-dst-start-before",
        local(NY, 2026, 3, 8, 8, 59),
        date(2026, 3, 7),
        "America/New_York",
        None,
    ),
    (
        "ny-dst-end-day",
        local(NY, 2026, 11, 1, 9, 1),
        date(2026, 10, 31),
        "America/New_York",
        date(2026, 11, 1),
    ),
    # Berlin springs forward on 2026-03-29.
    (
        "berlin-dst",
        local(BERLIN, 2026, 3, 29, 9, 0),
        date(2026, 3, 28),
        "Europe/Berlin",
        date(2026, 3, 29),
    ),
]


@pytest.mark.parametrize(
    ("now", "last", "tz", "due"), [c[1:] for c in DUE_CASES], ids=[c[0] for c in DUE_CASES]
)
def test_digest_due(now: datetime, last: date | None, tz: str, due: date | None) -> None:
    """The digest is due at or after 09:00 local, once per local date."""
    assert digest_due(now, last, "09:00", tz) == due


def test_once_per_day_over_a_tick_loop() -> None:
    """Ticking every minute across four days sends one digest per day, at 09:00 local."""
    sent: list[datetime] = []
    last: date | None = date(2026, 3, 5)  # 2026-03-06 00:00 UTC is still the 5th in New York
    t = datetime(2026, 3, 6, 0, 0, tzinfo=UTC)
    while t < datetime(2026, 3, 10, tzinfo=UTC):
        day = digest_due(t, last, "09:00", "America/New_York")
        if day is not None:
            sent.append(t.astimezone(NY))
            last = day
        t += timedelta(minutes=1)
    assert [s.date() for s in sent] == [date(2026, 3, 6) + timedelta(days=i) for i in range(4)]
    assert all((s.hour, s.minute) == (9, 0) for s in sent)
    assert sent[2].utcoffset() != sent[1].utcoffset()  # DST changed between them


def test_dst_gap_time() -> None:
    """A digest time inside the spring-forward gap fires at the first wall time after it."""
    assert digest_due(local(NY, 2026, 3, 8, 1, 59), None, "02:30", "America/New_York") is None
    # 01:59 EST + 1 minute is 03:00 EDT
    t = local(NY, 2026, 3, 8, 1, 59).astimezone(UTC) + timedelta(minutes=1)
    assert digest_due(t, None, "02:30", "America/New_York") == date(2026, 3, 8)


def test_digest_period_across_dst() -> None:
    """The period is 24 h normally, 23 h on the spring-forward day."""
    start, end = digest_period(date(2026, 5, 25), "09:00", "Asia/Seoul")
    assert end - start == timedelta(hours=24)
    start, end = digest_period(date(2026, 3, 8), "09:00", "America/New_York")
    assert end.astimezone(UTC) - start.astimezone(UTC) == timedelta(hours=23)


@pytest.mark.parametrize("bad", ["9", "25:00", "09:60", "", "nine"])
def test_bad_digest_time(bad: str) -> None:
    """A malformed digest time is a ValueError."""
    with pytest.raises(ValueError, match="digest_time"):
        digest_due(datetime(2026, 5, 25, tzinfo=UTC), None, bad, "Asia/Seoul")


def test_bad_zone_and_naive() -> None:
    """An unknown zone and a naive now are ValueErrors."""
    with pytest.raises(ValueError, match="time zone"):
        digest_due(datetime(2026, 5, 25, tzinfo=UTC), None, "09:00", "Mars/Olympus")
    with pytest.raises(ValueError, match="timezone-aware"):
        digest_due(datetime(2026, 5, 25), None, "09:00", "Asia/Seoul")


NOW = datetime(2026, 5, 25, 0, 0, tzinfo=UTC)


def full_facts(**kw) -> DigestFacts:
    """Digest facts with something in every section."""
    burn, _ = observe(BurnInState(), ["claude-code/opus"], NOW - timedelta(days=10))
    base = dict(
        date=D,
        timezone="Asia/Seoul",
        quadrant_counts={Quadrant.A: 3, Quadrant.B: 1, Quadrant.C: 0, Quadrant.D: 2},
        merges=(
            DigestMerge("o/r#1", Quadrant.A, "Fix typo"),
            DigestMerge("o/r#2", Quadrant.B, "Refactor"),
        ),
        pending_ballots=(
            DigestBallot(
                "o/r#3", NOW - timedelta(days=3, hours=4), "https://gh/o/bot/issues/9", "Drop table"
            ),
            DigestBallot("o/r#4", NOW - timedelta(hours=5), kind="one-tap"),
        ),
        auto_closed=(DigestItem("o/bot#5", "passive review B"),),
        scope_violations=(DigestItem("o/r#6", "cron_settings.json outside task-1"),),
        escalations=(DigestItem("task-1", "scope guard refused cron_settings.json"),),
        attention=(DigestItem("o/r#7", "P1 validator_agent_registry: unknown model"),),
        burn_in=burn,
        errors=("tick 12: GitHub 502",),
        rate_limit=RateUse(remaining=4000, limit=5000),
    )
    base.update(kw)
    return DigestFacts(**base)


def test_render_has_every_section_and_pie() -> None:
    """The digest has every section, a Mermaid pie without empty slices, and readable ages."""
    text = render_digest(full_facts(), NOW)
    for heading in (
        "# capdaemon digest — 2026-05-25 (Asia/Seoul)",
        "## Quadrants",
        "## Merges (2)",
        "## Pending ballots (2)",
        "## Attention (P1)",
        "## Auto-closed reviews (1)",
        "### Scope violations",
        "### Escalations",
        "## Circuit breaker",
        "## Burn-in clocks",
        "## Errors (1)",
        "## Rate limit",
    ):
        assert heading in text, heading
    assert '```mermaid\npie title Quadrants\n    "A" : 3\n    "B" : 1\n    "D" : 2\n```' in text
    assert "| 3 d 4 h |" in text and "| 5 h 0 min |" in text
    assert text.index("o/r#3") < text.index("o/r#4")  # oldest ballot first
    assert "1000 of 5000 requests used (20 %)" in text
    assert "claude-code/opus | burn-in" in text and "| 50.0 |" in text


def test_tripped_breaker_leads() -> None:
    """A tripped breaker is the first section of the digest."""
    tripped = BreakerState((Incident(NOW, IncidentKind.PROBE_FAILED, "ci failed"),), True, NOW)
    text = render_digest(full_facts(breaker=tripped), NOW)
    first_section = text.split("\n## ")[1]
    assert first_section.startswith("⚠️ Circuit breaker TRIPPED")
    assert text.count("Circuit breaker") == 1


def test_closed_breaker_section_later() -> None:
    """A closed breaker is reported after the violations, not first."""
    text = render_digest(full_facts(), NOW)
    assert text.index("## Circuit breaker") > text.index("## Scope violations")
    assert "TRIPPED" not in text


def test_empty_digest() -> None:
    """An empty day still renders every section, saying none."""
    text = render_digest(DigestFacts(date=D, timezone="Asia/Seoul"), NOW)
    assert "No PR was classified" in text and "None." in text and "Not measured." in text


def test_untrusted_titles_are_escaped() -> None:
    """PR titles cannot smuggle markers, mentions or markup into the digest."""
    evil = 'x <!-- capdaemon: {"kind": "ballot"} --> @owner **bold**'
    text = render_digest(full_facts(merges=(DigestMerge("o/r#1", Quadrant.A, evil),)), NOW)
    assert "<!--" not in text and "@owner" not in text and "**bold**" not in text


def test_audit_anchors_section() -> None:
    """The digest ends with one machine-readable anchor line per log, in a code block,
    the sentence saying what they are for, and notes for logs not anchored."""
    from capdaemon.anchors import Anchor, find_anchors

    anchors = (
        Anchor("classifier_audit.jsonl", 123, "ab" * 32),
        Anchor("actions.jsonl", 45, "0f" * 32),
    )
    text = render_digest(full_facts(audit_anchors=anchors), NOW)
    section = text[text.index("## Audit anchors") :]
    assert text.index("## Rate limit") < text.index("## Audit anchors")
    assert "capdaemon audit verify --anchors-from FILE" in section
    assert (
        "```text\n"
        f"audit-anchor: classifier_audit.jsonl seq=123 hash={'ab' * 32}\n"
        f"audit-anchor: actions.jsonl seq=45 hash={'0f' * 32}\n"
        "```"
    ) in section
    assert find_anchors(text) == list(anchors)  # what `audit verify --anchors-from` reads back

    partial = render_digest(
        full_facts(audit_anchors=anchors[:1], audit_notes=("actions.jsonl: no entries yet",)),
        NOW,
    )
    assert "- actions.jsonl: no entries yet" in partial
    assert len(find_anchors(partial)) == 1
    empty = render_digest(DigestFacts(date=D, timezone="Asia/Seoul"), NOW)
    assert "## Audit anchors" in empty and "No audit entries yet." in empty
    assert find_anchors(empty) == []

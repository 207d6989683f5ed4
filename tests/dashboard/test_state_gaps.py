"""Numbers that add up, banners for state files the logs say should exist, bidi characters."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from capdaemon.audit import AuditLog
from capdaemon.config import Config, RepoConfig
from capdaemon.dashboard.readmodel import build
from capdaemon.dashboard.site import all_paths, render
from capdaemon.filenames import (
    ACTIONS_LOG,
    BREAKER_FILE,
    CLASSIFIER_LOG,
    METRICS_FILE,
    PRS_FILE,
    SAFETY_FILE,
)
from capdaemon.state import atomic_write_json

from .conftest import DashState

NOW = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)
BIDI = "\u202e"


def _card(body: str, key: str) -> int:
    m = re.search(rf'data-card="{key}"><b>(\d+)</b>', body)
    assert m is not None, key
    return int(m.group(1))


def test_quadrant_cards_count_each_pr_once_by_its_latest_classification(tmp_path: Path) -> None:
    """A PR classified A, pushed again and classified D, and another classified B twice at
    one head: the cards say D 1, B 1, A 0 (they add up to the 2 classified PRs) and the
    heads card says 3 heads."""
    sd = tmp_path / "bot-state"
    sd.mkdir()
    log = AuditLog(sd / CLASSIFIER_LOG)
    for ref, head, q, minute in (
        ("acme/w#1", "a" * 40, "A", 1),
        ("acme/w#1", "b" * 40, "D", 2),
        ("acme/w#2", "c" * 40, "B", 3),
        ("acme/w#2", "c" * 40, "B", 4),
    ):
        at = NOW - timedelta(minutes=60 - minute)
        log.append({"pr": ref, "head_sha": head, "quadrant": q, "rules_fired": []}, now=at)
    body = render(build(sd, Config(), NOW), "index.html").body
    totals = {q: _card(body, f"total-{q}") for q in "ABCD"}
    assert totals == {"A": 0, "B": 1, "C": 0, "D": 1}
    assert sum(totals.values()) == _card(body, "prs") == 2
    assert _card(body, "heads") == 3
    assert "PRs now A" in body and "classified heads" in body


@pytest.mark.parametrize(
    ("name", "says"),
    [
        (PRS_FILE, "titles"),
        (METRICS_FILE, "last tick"),
        (SAFETY_FILE, "burn-in"),
    ],
)
def test_a_missing_state_file_the_logs_vouch_for_is_a_banner(
    dash_state: DashState, tmp_path: Path, name: str, says: str
) -> None:
    """Delete prs.json, tick_metrics.json or safety.json (logs intact): every page carries a
    banner naming it, as for a corrupt one, instead of showing blanks as facts."""
    state = dash_state.copy(tmp_path / "s")
    (state.state_dir / name).unlink()
    model = build(state.state_dir, state.config(), state.now)
    for path in all_paths(model):
        if path.endswith(".html"):
            body = render(model, path).body
            assert f"{name}</code> could not be read: missing, though" in body, path
            assert says in body
    index = render(model, "index.html").body
    assert "no tick has run yet" not in index
    if name == PRS_FILE:  # the open D PR's ballot is unknown, not "0 pending" as a fact
        assert 'data-state="open"' not in render(model, "prs.html").body
        assert 'data-card="pending"><b>?</b>' in index


def test_a_missing_breaker_file_after_a_trip_is_a_banner_and_treated_as_tripped(
    dash_state: DashState, tmp_path: Path
) -> None:
    """The actions log records a breaker trip and breaker.json is gone: a banner, the
    breaker shown as unreadable (treated as tripped), and open PRs wait on it."""
    state = dash_state.copy(tmp_path / "s")
    AuditLog(state.state_dir / ACTIONS_LOG).append(
        {"action": "breaker.tripped", "reason": "3 incidents"}, now=state.now
    )
    (state.state_dir / BREAKER_FILE).unlink(missing_ok=True)
    model = build(state.state_dir, state.config(), state.now)
    body = render(model, "index.html").body
    assert f"{BREAKER_FILE}</code> could not be read: missing" in body
    assert "treat it as tripped" in body and "closed (auto-merges allowed)" not in body
    ref = f"acme/widgets#{state.prs['script']}"
    assert "breaker" in {k for k, _ in model.waiting(model.by_ref[ref])}


def test_no_banner_for_a_fresh_state_dir(tmp_path: Path) -> None:
    """Nothing has run yet: no log, no state file, no banner (nothing is missing)."""
    sd = tmp_path / "bot-state"
    sd.mkdir()
    model = build(sd, Config(repos=(RepoConfig(name="acme/w"),)), NOW)
    assert model.problems == []
    assert "no tick has run yet" in render(model, "index.html").body


def test_bidi_and_invisible_characters_are_shown_visibly_on_every_page(
    dash_state: DashState, tmp_path: Path
) -> None:
    """A PR title and branch carrying U+202E (right-to-left override), U+2066 (isolate) and
    U+200B (zero-width space): no page holds the raw characters; each is shown as its
    escape, the way `capdaemon why` prints it, in every cell and title."""
    state = dash_state.copy(tmp_path / "s")
    sd = state.state_dir
    ref = f"acme/widgets#{state.prs['typo']}"
    raw = json.loads((sd / PRS_FILE).read_text())
    raw["prs"][ref]["title"] = f"Fix {BIDI}gnp.exe and \u2066x\u2069\u200b"
    raw["prs"][ref]["head_ref"] = f"agent-2/{BIDI}gnp.exe"
    atomic_write_json(sd / PRS_FILE, raw)
    (sd / "prs.journal").unlink(missing_ok=True)
    model = build(sd, state.config(), state.now)
    pages = {p: render(model, p).body for p in all_paths(model) if p.endswith(".html")}
    for path, body in pages.items():
        assert not re.search("[\u202a-\u202e\u2066-\u2069\u200b-\u200f]", body), path
    assert "agent-2/\\u202egnp.exe" in pages["prs.html"]
    assert "Fix \\u202egnp.exe and \\u2066x\\u2069\\u200b" in pages["prs.html"]


def test_the_overview_tells_targeted_ticks_apart_from_full_ticks(tmp_path: Path) -> None:
    """tick_metrics.json counts the change detector's targeted ticks apart: the Overview says
    when the last full tick ran and, on its own line, how many targeted ticks ran, the last
    one's time and duration and what they merged; with none, no such line."""
    sd = tmp_path / "bot-state"
    sd.mkdir()
    metrics = {
        "ticks": 4,
        "last_tick_at": "2026-05-25T11:58:00Z",
        "last_tick_seconds": 12.5,
        "errors_last_tick": 0,
    }
    atomic_write_json(sd / METRICS_FILE, metrics)
    body = render(build(sd, Config(), NOW), "index.html").body
    assert 'id="last-tick"' in body and 'id="targeted-ticks"' not in body
    metrics |= {
        "targeted_ticks": 7,
        "targeted_merged": 3,
        "last_targeted_at": "2026-05-25T11:57:00Z",
        "last_targeted_seconds": 1.75,
    }
    atomic_write_json(sd / METRICS_FILE, metrics)
    body = render(build(sd, Config(), NOW), "index.html").body
    line = re.search(r'<p id="targeted-ticks">(.*?)</p>', body)
    assert line is not None
    text = re.sub(r"<[^>]+>", "", line.group(1))
    assert "targeted ticks (changes seen between ticks): 7" in text
    assert "took 1.75 s" in text and "PRs merged by them: 3" in text
    assert "(3m ago)" in text  # NOW is 12:00
    assert "took 12.5 s" in body  # the full tick's line is still the full tick's

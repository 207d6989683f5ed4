"""Persisted state types: JSON round trips; malformed dicts raise ValueError naming the field."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from capdaemon.decide.breaker import BreakerState, Incident, IncidentKind
from capdaemon.decide.burnin import BurnInState, advance, observe, record_rejection
from capdaemon.decide.probe import ProbeWatch
from capdaemon.decide.rounds import BallotRound
from capdaemon.decide.tiers import OneTapRequest

from .factories import at


def burn_in() -> BurnInState:
    """A burn-in state with a promoted and a rejected identity."""
    s, _ = observe(BurnInState(), ["a/m1", "b/m2"], at(0))
    s, _ = record_rejection(s, "b/m2", at(days=3))
    s, _ = advance(s, at(days=61))
    return s


STATES = [
    ("breaker-empty", BreakerState()),
    (
        "breaker-tripped",
        BreakerState(
            (Incident(at(0), IncidentKind.REVERT, "reverted", "o/r#1"),), True, at(1), "bob", at(2)
        ),
    ),
    ("burn-in", burn_in()),
    ("probe-watch", ProbeWatch("o/r", 4, "m" * 40, 1, at(0), "develop")),
    ("ballot-round", BallotRound("o/r", 4, "h" * 40, at(0), 3, 17)),
    ("one-tap", OneTapRequest("o/r", 4, "h" * 40, at(0), None)),
]


@pytest.mark.parametrize("state", [s[1] for s in STATES], ids=[s[0] for s in STATES])
def test_round_trip(state) -> None:
    """to_json → JSON text → from_json gives back an equal object."""
    data = json.loads(json.dumps(state.to_json()))
    assert type(state).from_json(data) == state


MALFORMED = [
    ("breaker-not-object", BreakerState, [], "breaker: expected an object"),
    ("breaker-missing-tripped", BreakerState, {"incidents": []}, "breaker.tripped: missing"),
    (
        "breaker-tripped-string",
        BreakerState,
        {"incidents": [], "tripped": "yes"},
        "breaker.tripped",
    ),
    (
        "breaker-bad-kind",
        BreakerState,
        {"incidents": [{"at": "2026-05-25T12:00:00Z", "kind": "boom"}], "tripped": False},
        "breaker.incidents[0].kind",
    ),
    (
        "breaker-naive-time",
        BreakerState,
        {"incidents": [{"at": "2026-05-25T12:00:00", "kind": "revert"}], "tripped": False},
        "breaker.incidents[0].at",
    ),
    (
        "breaker-tripped-without-time",
        BreakerState,
        {"incidents": [], "tripped": True},
        "tripped_at",
    ),
    ("burn-in-bad-id", BurnInState, {"nope": {}}, "tool/model"),
    (
        "burn-in-bad-status",
        BurnInState,
        {
            "a/m": {
                "first_seen": "2026-05-25T12:00:00Z",
                "clock_start": "2026-05-25T12:00:00Z",
                "status": "trusted",
                "rejections": 0,
            }
        },
        "status",
    ),
    (
        "burn-in-negative-rejections",
        BurnInState,
        {
            "a/m": {
                "first_seen": "2026-05-25T12:00:00Z",
                "clock_start": "2026-05-25T12:00:00Z",
                "status": "burn_in",
                "rejections": -1,
            }
        },
        "rejections",
    ),
    ("probe-missing-sha", ProbeWatch, {"repo": "o/r", "pr": 1}, "probe_watch.merge_sha"),
    (
        "probe-bad-time",
        ProbeWatch,
        {"repo": "o/r", "pr": 1, "merge_sha": "m", "parents_count": 1, "merged_at": "yesterday"},
        "probe_watch.merged_at",
    ),
    (
        "round-zero",
        BallotRound,
        {"repo": "o/r", "pr": 1, "head_sha": "h", "round": 0, "started_at": "2026-05-25T12:00:00Z"},
        "ballot_round.round",
    ),
    (
        "round-pr-bool",
        BallotRound,
        {
            "repo": "o/r",
            "pr": True,
            "head_sha": "h",
            "round": 1,
            "started_at": "2026-05-25T12:00:00Z",
        },
        "ballot_round.pr",
    ),
    ("one-tap-missing", OneTapRequest, {"repo": "o/r"}, "one_tap.pr"),
]


@pytest.mark.parametrize(
    ("cls", "data", "field"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_raises_naming_field(cls, data, field: str) -> None:
    """A malformed dict raises ValueError whose message names the field."""
    with pytest.raises(
        ValueError, match=field.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    ):
        cls.from_json(data)


def test_naive_state_construction_rejected() -> None:
    """State types refuse naive datetimes."""
    with pytest.raises(ValueError, match="timezone-aware"):
        ProbeWatch("o/r", 1, "m", 1, datetime(2026, 5, 25))

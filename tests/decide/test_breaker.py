"""Circuit breaker (SPEC 6.3): trips past the threshold in a rolling window; only owners reset."""

from __future__ import annotations

import pytest

from capdaemon.config import BreakerConfig
from capdaemon.decide._common import ActionKind
from capdaemon.decide.breaker import (
    BreakerState,
    Incident,
    IncidentKind,
    allows_merge,
    record_incident,
    reset,
)
from capdaemon.model import Quadrant

from .factories import at

CFG = BreakerConfig(threshold=3, window_hours=24)
OWNERS = ("Alice", "bob")


def incident(hours: float, kind: IncidentKind = IncidentKind.PROBE_FAILED) -> Incident:
    """An incident at T0 + hours."""
    return Incident(at(hours=hours), kind, f"probe failed ({hours} h)", "o/r#1")


def feed(hours: list[float]) -> tuple[BreakerState, list]:
    """Record incidents at the given hours; return the final state and all actions."""
    state, actions = BreakerState(), []
    for h in hours:
        state, acts = record_incident(state, incident(h), at(hours=h), CFG)
        actions += acts
    return state, actions


TRIP_CASES = [
    ("one", [0], False),
    ("two", [0, 1], False),
    ("three-in-window", [0, 1, 2], True),
    ("three-spread-out", [0, 13, 26], False),
    ("edge-of-window", [0, 12, 24], True),
    ("just-outside-window", [0, 12, 24.01], False),
]


@pytest.mark.parametrize(
    ("hours", "tripped"), [c[1:] for c in TRIP_CASES], ids=[c[0] for c in TRIP_CASES]
)
def test_trips_at_threshold_in_window(hours: list[float], tripped: bool) -> None:
    """The breaker trips when the rolling window holds `threshold` incidents."""
    assert feed(hours)[0].tripped is tripped


def test_trip_actions() -> None:
    """Tripping audits and opens one incident issue; later incidents update it."""
    state, actions = feed([0, 1, 2])
    kinds = [a.kind for a in actions]
    assert kinds.count(ActionKind.OPEN_INCIDENT_ISSUE) == 1
    assert any(a.payload.get("action") == "breaker.tripped" for a in actions)
    issue = next(a for a in actions if a.kind is ActionKind.OPEN_INCIDENT_ISSUE)
    assert issue.payload["key"] == state.incident_key
    assert "/breaker reset" in issue.payload["body"]
    state2, more = record_incident(state, incident(3), at(hours=3), CFG)
    assert state2.tripped and state2.tripped_at == state.tripped_at
    assert [a.kind for a in more] == [ActionKind.AUDIT, ActionKind.UPDATE_INCIDENT_ISSUE]


def test_old_incidents_pruned() -> None:
    """Incidents older than the window are dropped from the state."""
    state, _ = feed([0, 30])
    assert [i.at for i in state.incidents] == [at(hours=30)]


def test_no_auto_reset() -> None:
    """A tripped breaker stays tripped however long nothing happens."""
    state, _ = feed([0, 1, 2])
    state, _ = record_incident(state, incident(24 * 30), at(hours=24 * 30), CFG)
    assert state.tripped


RESET_CASES = [
    ("non-owner-refused", "mallory", True, "breaker.reset_refused"),
    ("owner", "bob", False, "breaker.reset"),
    ("owner-case-insensitive", "alice", False, "breaker.reset"),
    ("bot-refused", "capdaemon[bot]", True, "breaker.reset_refused"),
]


@pytest.mark.parametrize(
    ("actor", "still_tripped", "audit"),
    [c[1:] for c in RESET_CASES],
    ids=[c[0] for c in RESET_CASES],
)
def test_reset(actor: str, still_tripped: bool, audit: str) -> None:
    """Only an owner resets; anyone else is refused with a reason."""
    state, _ = feed([0, 1, 2])
    new, actions = reset(state, actor, OWNERS, at(hours=5))
    assert new.tripped is still_tripped
    assert actions[0].payload["action"] == audit
    if still_tripped:
        assert new == state
        reply = next(a for a in actions if a.kind is ActionKind.REPLY)
        assert "not an owner" in reply.payload["body"]
    else:
        assert new.reset_by == actor and new.reset_at == at(hours=5) and new.incidents == ()
        close = next(a for a in actions if a.kind is ActionKind.CLOSE_INCIDENT_ISSUE)
        assert close.payload["key"] == state.incident_key


def test_reset_when_closed_is_noop() -> None:
    """Resetting a closed breaker changes nothing."""
    state, actions = reset(BreakerState(), "bob", OWNERS, at(0))
    assert state == BreakerState() and actions[0].payload["action"] == "breaker.reset_noop"


def test_after_reset_counts_from_zero() -> None:
    """After a reset the old incidents do not count toward the next trip."""
    state, _ = feed([0, 1, 2])
    state, _ = reset(state, "bob", OWNERS, at(hours=3))
    state, _ = record_incident(state, incident(4), at(hours=4), CFG)
    assert not state.tripped


TRIPPED = BreakerState((incident(0),), True, at(0))
ALLOW_CASES = [
    ("closed-d", BreakerState(), Quadrant.D, False, True),
    ("tripped-a", TRIPPED, Quadrant.A, False, False),
    ("tripped-verified-revert-c", TRIPPED, Quadrant.C, True, True),
    ("tripped-verified-revert-a", TRIPPED, Quadrant.A, True, True),
    ("tripped-verified-revert-b", TRIPPED, Quadrant.B, True, False),
    ("tripped-verified-revert-d", TRIPPED, Quadrant.D, True, False),
    ("tripped-unverified-revert-c", TRIPPED, Quadrant.C, False, False),
]


@pytest.mark.parametrize(
    ("state", "quadrant", "verified", "allowed"),
    [c[1:] for c in ALLOW_CASES],
    ids=[c[0] for c in ALLOW_CASES],
)
def test_allows_merge(state, quadrant, verified, allowed) -> None:
    """A tripped breaker blocks merges except a verified auto-revert of quadrant C or lower."""
    ok, reason = allows_merge(state, quadrant, verified)
    assert ok is allowed and reason


def test_tripped_needs_time() -> None:
    """A tripped state without tripped_at is invalid."""
    with pytest.raises(ValueError, match="tripped_at"):
        BreakerState((), True, None)


def test_action_to_dict_is_json() -> None:
    """Actions flatten to JSON-able dicts with their kind."""
    import json

    _, actions = feed([0, 1, 2])
    for a in actions:
        d = json.loads(json.dumps(a.to_dict()))
        assert d["kind"] == a.kind.value

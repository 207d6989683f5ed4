"""The daemon's SafetyNet: one per daemon, its state on disk and nowhere else."""

from __future__ import annotations

import json

import pytest

from capdaemon.decide.breaker import Incident, IncidentKind
from capdaemon.state import StateError
from tests.safety.conftest import SafetyHarness

EXAMPLE = {"examples/net.py": "print('net')\n"}


def test_corrupt_safety_json_stops_the_tick_and_is_kept(safe: SafetyHarness) -> None:
    """A safety.json with a malformed key: the tick refuses, names the file and the key, and
    the file is left byte for byte as it was (never overwritten with fresh defaults)."""
    safe.open_pr(EXAMPLE)
    safe.tick()
    safe.stop()
    path = safe.state_dir / "safety.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tiers"] = ["not", "a", "map"]
    path.write_text(json.dumps(data), encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(StateError, match=r"safety\.json: key 'tiers' is malformed"):
        safe.tick()
    assert path.read_bytes() == before


def test_a_restarted_daemon_keeps_the_breaker_tripped(safe: SafetyHarness) -> None:
    """The breaker tripped in one daemon; a new daemon in the same process (its own safety
    net) still refuses a deleted breaker.json: nothing of the first one's state is needed."""
    safe.configure(breaker={"threshold": 1, "window_hours": 24})
    first = safe.start()
    first.safety.breaker.record(Incident(safe.sb.now(), IncidentKind.OTHER, "x"), safe.sb.now())
    assert first.safety.breaker.state().tripped
    safe.stop()
    (safe.state_dir / "breaker.json").unlink()
    second = safe.start()
    assert second.safety is not first.safety
    with pytest.raises(StateError, match="breaker"):
        second.safety.breaker.state()

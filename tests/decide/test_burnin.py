"""L4 burn-in (SPEC 6.4): new identities start a clock; 60 quiet days promote; rejections reset."""

from __future__ import annotations

from datetime import timedelta

import pytest

from capdaemon.decide.burnin import (
    BurnInState,
    BurnInStatus,
    advance,
    agent_severities,
    observe,
    record_rejection,
)
from capdaemon.model import Severity

from .factories import at

AGENT = "claude-code/claude-opus-4"


def seen() -> BurnInState:
    """A state with AGENT first seen at T0."""
    return observe(BurnInState(), [AGENT], at(0))[0]


def test_observe_new_and_known() -> None:
    """A new identity gets a clock once; seeing it again changes nothing."""
    state, actions = observe(BurnInState(), [AGENT, AGENT], at(0))
    clock = state.get(AGENT)
    assert clock is not None and clock.first_seen == clock.clock_start == at(0)
    assert [a.payload["action"] for a in actions] == ["burn_in.observed"]
    again, more = observe(state, [AGENT], at(days=3))
    assert again == state and more == []


PROMOTE_CASES = [
    ("59-days", timedelta(days=59, hours=23, minutes=59), BurnInStatus.BURN_IN),
    ("exactly-60-days", timedelta(days=60), BurnInStatus.HARD_BLOCK),
    ("61-days", timedelta(days=61), BurnInStatus.HARD_BLOCK),
]


@pytest.mark.parametrize(
    ("after", "status"), [c[1:] for c in PROMOTE_CASES], ids=[c[0] for c in PROMOTE_CASES]
)
def test_promotion_at_60_days(after: timedelta, status: BurnInStatus) -> None:
    """An identity is promoted to hard-block at exactly 60 days without a rejection."""
    state, _ = advance(seen(), at(0) + after)
    assert state.get(AGENT).status is status  # type: ignore[union-attr]


def test_rejection_resets_clock() -> None:
    """A rejection restarts the clock: 60 days count from it."""
    state, actions = record_rejection(seen(), AGENT, at(days=50))
    clock = state.get(AGENT)
    assert clock.clock_start == at(days=50) and clock.rejections == 1  # type: ignore[union-attr]
    assert actions[0].payload["action"] == "burn_in.rejection"
    state, _ = advance(state, at(days=61))
    assert state.get(AGENT).status is BurnInStatus.BURN_IN  # type: ignore[union-attr]
    state, promoted = advance(state, at(days=110))
    assert state.get(AGENT).status is BurnInStatus.HARD_BLOCK  # type: ignore[union-attr]
    assert promoted[0].payload["action"] == "burn_in.promoted"


def test_promotion_is_not_undone() -> None:
    """A rejection after promotion restarts the clock but keeps the hard-block."""
    state, _ = advance(seen(), at(days=60))
    state, _ = record_rejection(state, AGENT, at(days=61))
    assert state.get(AGENT).status is BurnInStatus.HARD_BLOCK  # type: ignore[union-attr]


def test_rejection_of_unseen_agent_starts_clock() -> None:
    """Rejecting an identity never seen before records it."""
    state, _ = record_rejection(BurnInState(), AGENT, at(0))
    assert state.get(AGENT).rejections == 1  # type: ignore[union-attr]


def test_severities() -> None:
    """Burn-in identities are P2, hard-blocked ones P0."""
    state, _ = observe(BurnInState(), [AGENT, "codex/gpt-5"], at(0))
    state, _ = record_rejection(state, "codex/gpt-5", at(days=30))
    state, _ = advance(state, at(days=60))
    assert agent_severities(state) == {AGENT: Severity.P0, "codex/gpt-5": Severity.P2}


@pytest.mark.parametrize("bad", ["", "tool", "tool/model/session123", "Tool/model", "tool/ model"])
def test_bad_agent_ids(bad: str) -> None:
    """Agent ids must be tool/model."""
    with pytest.raises(ValueError, match="tool/model"):
        observe(BurnInState(), [bad], at(0))


def test_days_left() -> None:
    """days_left counts down to promotion."""
    assert seen().get(AGENT).days_left(at(days=15)) == pytest.approx(45)  # type: ignore[union-attr]

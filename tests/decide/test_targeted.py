"""Targeted ticks per minute in tick_metrics.json: every tick counted by exactly one period,
malformed rows named."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.decide.reaction import KEEP
from capdaemon.decide.targeted import (
    TargetedCounts,
    add_targeted,
    parse_targeted,
    targeted_for,
    targeted_in,
)

T0 = datetime(2026, 5, 25, 0, 0, tzinfo=UTC)
ticks = st.lists(
    st.tuples(st.integers(0, 3 * 24 * 3600), st.integers(0, 3)), min_size=1, max_size=40
)


@given(ticks, st.integers(1, 3 * 24 * 60))
def test_consecutive_periods_count_every_tick_once(
    events: list[tuple[int, int]], cut_minute: int
) -> None:
    """Two back-to-back periods split on a whole minute: their counts add up to every tick
    and every merge, wherever the cut falls (no tick counted twice or lost)."""
    rows: list[tuple[int, int, int]] = []
    for offset, merged in sorted(events):
        rows = [(a, b, c) for a, b, c in add_targeted(rows, T0 + timedelta(seconds=offset), merged)]
    assert parse_targeted([list(r) for r in rows]) == rows
    cut = T0 + timedelta(minutes=cut_minute)
    first = targeted_in(rows, T0 - timedelta(days=1), cut)
    second = targeted_in(rows, cut, T0 + timedelta(days=4))
    assert first.ticks + second.ticks == len(events)
    assert first.merged + second.merged == sum(m for _, m in events)
    inside = [e for e in events if T0 + timedelta(seconds=e[0]) < cut]
    assert first == TargetedCounts(len(inside), sum(m for _, m in inside))


def test_rows_older_than_keep_are_dropped() -> None:
    rows = add_targeted([], T0, 1)
    later = add_targeted([(a, b, c) for a, b, c in rows], T0 + KEEP + timedelta(minutes=2), 0)
    assert len(later) == 1 and later[0][1:] == [1, 0]


@pytest.mark.parametrize(
    "raw",
    [{"a": 1}, [[60, 1]], [[61, 1, 0]], [[60, 0, 0]], [[60, 1, -1]], [[60, True, 0]], ["x"]],
)
def test_malformed_rows_are_named(raw: object) -> None:
    with pytest.raises(ValueError, match="targeted_minutes"):
        targeted_for(raw, T0, T0 + timedelta(days=1))


def test_never_recorded_is_none() -> None:
    assert targeted_for(None, T0, T0 + timedelta(days=1)) is None

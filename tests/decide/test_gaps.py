"""A gap between ticks, judged from the wall and monotonic clocks (pure; hypothesis)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.decide.gaps import APART_FLOOR_SECONDS, GapKind, Reading, judge_gap

T0 = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)


def _after(wall: float, mono: float) -> Reading:
    return Reading(T0 + timedelta(seconds=wall), 1000.0 + mono)


START = Reading(T0, 1000.0)


def test_an_ordinary_wait_is_no_gap() -> None:
    """A tick one interval after the last one ended is not reported."""
    assert judge_gap(START, _after(60, 60), 60) is None


def test_a_sigstop_of_three_intervals_is_a_pause() -> None:
    """Both clocks moved 3 intervals together: the process was frozen."""
    gap = judge_gap(START, _after(180, 180.2), 60)
    assert gap is not None and gap.kind is GapKind.PAUSED
    assert gap.intervals == pytest.approx(3.0, abs=0.01)
    assert "frozen" in gap.describe() and "180 s" in gap.describe()


def test_a_suspended_host_is_told_from_a_pause() -> None:
    """The monotonic clock stops while the host sleeps: the wall clock ran 10 min ahead."""
    gap = judge_gap(START, _after(620, 20), 60)
    assert gap is not None and gap.kind is GapKind.SUSPENDED
    assert "suspended" in gap.describe()


def test_a_clock_set_back_is_named() -> None:
    """The wall clock went back 5 minutes between two ordinary ticks."""
    gap = judge_gap(START, _after(-240, 60), 60)
    assert gap is not None and gap.kind is GapKind.CLOCK_STEPPED


def test_a_non_positive_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="interval"):
        judge_gap(START, START, 0)


@given(
    interval=st.floats(min_value=0.5, max_value=3600),
    share=st.floats(min_value=0.0, max_value=1.99),
    slew=st.floats(min_value=-APART_FLOOR_SECONDS, max_value=APART_FLOOR_SECONDS),
)
def test_nothing_within_two_intervals_and_the_slew_floor_is_reported(
    interval: float, share: float, slew: float
) -> None:
    """Spans up to two intervals whose clocks agree within the floor are never gaps."""
    mono = share * interval
    wall = min(mono + slew, 1.99 * interval)
    assert judge_gap(START, _after(wall, mono), interval) is None


@given(
    interval=st.floats(min_value=0.5, max_value=3600),
    over=st.floats(min_value=2.01, max_value=1000),
)
def test_every_span_over_two_intervals_is_reported(interval: float, over: float) -> None:
    """A span longer than two intervals on both clocks is always a gap, of its length."""
    span = over * interval
    gap = judge_gap(START, _after(span, span), interval)
    assert gap is not None and gap.kind is GapKind.PAUSED
    assert gap.seconds == pytest.approx(span)

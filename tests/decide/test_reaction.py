"""Reaction-time samples and their percentiles: the stored form's parser (hypothesis), the
nearest-rank percentile against its definition, the window, and the owner-facing text."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.decide.reaction import (
    KEEP,
    KINDS,
    MAX_SAMPLES,
    describe,
    format_seconds,
    merged_samples,
    parse_samples,
    percentile,
    period_stats,
    stats_of,
)

NOW = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)
seconds = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
json_any = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@given(st.lists(seconds, min_size=1, max_size=60), st.floats(min_value=0.5, max_value=100))
def test_percentile_is_the_nearest_rank(values: list[float], q: float) -> None:
    """At least q % of the values are ≤ the result, fewer than q % are below it."""
    got = percentile(values, q)
    rank = max(1, math.ceil(q / 100 * len(values)))
    assert got in values
    assert sum(v <= got for v in values) >= rank
    assert sum(v < got for v in values) < rank


@given(st.lists(seconds, min_size=1, max_size=60))
def test_stats_are_ordered(values: list[float]) -> None:
    s = stats_of("merge_done", values)
    assert s is not None and s.n == len(values)
    assert s.p50 <= s.p95 <= s.max == round(max(values), 1)


def test_percentile_refuses_nothing_and_bad_q() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="q must be"):
        percentile([1.0], 0)
    assert stats_of("merge_done", []) is None


@given(json_any)
def test_parser_accepts_the_stored_form_or_names_the_field(raw: Any) -> None:
    """Any JSON: valid samples, or one ValueError naming `reaction_samples…`."""
    try:
        got = parse_samples(raw)
    except ValueError as exc:
        assert str(exc).startswith("reaction_samples")
        return
    assert set(got) <= set(KINDS)
    assert all(s >= 0 and math.isfinite(at) for rows in got.values() for at, s in rows)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(KINDS)),
            st.floats(min_value=-20 * 86400, max_value=0, allow_nan=False),
            seconds,
        ),
        max_size=80,
    )
)
def test_merged_samples_round_trip_within_the_window(
    new: list[tuple[str, float, float]],
) -> None:
    """What is stored parses back; nothing older than KEEP survives; all newer ones do."""
    rows = [(k, NOW.timestamp() + off, s) for k, off, s in new]
    stored = merged_samples({}, rows, NOW)
    back = parse_samples(stored)
    floor = NOW.timestamp() - KEEP.total_seconds()
    for kind in KINDS:
        assert all(at >= floor - 0.001 for at, _ in back[kind])
        assert len(back[kind]) == sum(1 for k, at, _ in rows if k == kind and at >= floor)


def test_the_newest_samples_are_kept_when_there_are_too_many() -> None:
    rows = [("merge_done", NOW.timestamp() - i, float(i)) for i in range(MAX_SAMPLES + 10)]
    kept = merged_samples({}, rows, NOW)["merge_done"]
    assert len(kept) == MAX_SAMPLES and max(s for _, s in kept) == MAX_SAMPLES - 1


def test_period_stats_take_the_actions_in_the_period_only() -> None:
    start, end = NOW - timedelta(days=1), NOW
    samples = {
        "merge_done": [
            (start.timestamp() - 1, 999.0),  # the day before: not counted
            (start.timestamp(), 4.0),
            (NOW.timestamp() - 60, 8.0),
            (end.timestamp(), 777.0),  # the next period's
        ],
        "ballot_counted": [(NOW.timestamp() - 5, 2.5)],
    }
    got = {s.kind: s for s in period_stats(samples, start, end)}
    assert set(got) == {"merge_done", "ballot_counted"}
    assert (got["merge_done"].n, got["merge_done"].p50, got["merge_done"].max) == (2, 4.0, 8.0)
    assert describe(got["ballot_counted"]) == (
        "vote counted: p50 2.5 s, p95 2.5 s, max 2.5 s (1 action)"
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.04, "0.0 s"),
        (4.25, "4.2 s"),
        (42.4, "42 s"),
        (185, "3 min 5 s"),
        (120, "2 min"),
        (9000, "2.5 h"),
    ],
)
def test_format_seconds(value: float, text: str) -> None:
    assert format_seconds(value) == text

"""A spender with a share of a rate budget (the detector's rollup sweep in GraphQL's points):
it never runs the budget out while the others keep to their share, and is never held while
it keeps to its own; the GraphQL budget is kept apart from REST's (hypothesis properties)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from capdaemon.forge.ratelimit import RateBook, RateState, pro_rata_room

LIMIT = 5000


def _hour(others_per_min: int, own_per_hour: int, want_per_min: int) -> tuple[int, int, int]:
    """One hour minute by minute: the others spend first, then the spender asks for
    `want_per_min` points; the lowest remaining seen, what it spent, how often it was held."""
    rate = RateState(limit=LIMIT, remaining=LIMIT, reset=3600)
    lowest, spent, held = LIMIT, 0, 0
    for minute in range(60):
        assert rate.remaining is not None
        rate.remaining -= others_per_min
        if want_per_min and pro_rata_room(rate, minute * 60 + 59, want_per_min, own_per_hour):
            rate.remaining -= want_per_min
            spent += want_per_min
        elif want_per_min:
            held += 1
        lowest = min(lowest, rate.remaining)
    return lowest, spent, held


@given(
    st.integers(0, 2500),  # the spender's share an hour
    st.integers(0, 100),  # what it asks for a minute
    st.data(),
)
def test_the_budget_never_runs_out_while_the_others_keep_to_their_share(
    own: int, want: int, data: st.DataObject
) -> None:
    """Whatever the spender asks, the budget never goes below zero within the hour while the
    others spend no more than the rest of the limit (pro rata, a minute at a time)."""
    others = data.draw(st.integers(0, (LIMIT - own) // 60))
    lowest, _, _ = _hour(others, own, want)
    assert lowest >= 0


@given(st.integers(60, 2500), st.integers(1, 40))
def test_a_spender_within_its_own_share_is_never_held_when_nobody_else_spends(
    own: int, want: int
) -> None:
    """Nobody else spends: every request is allowed until the spender has spent its share."""
    _, spent, held = _hour(0, own, want)
    assert spent >= min(own - want, want * 60) or held == 0


def test_an_unknown_budget_has_room_and_a_past_reset_leaves_only_what_is_left() -> None:
    """No answer yet: room (the next answer tells). After the reset time nothing is owed to
    the others, so any points still left may be spent."""
    assert pro_rata_room(None, 0.0, 10, 0)
    assert pro_rata_room(RateState(limit=LIMIT), 0.0, 10, 0)
    past = RateState(limit=LIMIT, remaining=10, reset=100)
    assert pro_rata_room(past, 200.0, 10, 0) and not pro_rata_room(past, 200.0, 11, 0)


def test_graphql_answers_are_kept_apart_from_the_rest_budget() -> None:
    """A GraphQL answer's headers never stand for the REST budget a tick plans by, and the
    GraphQL budget is read from GraphQL answers only."""
    book = RateBook()
    book.note({"x-ratelimit-remaining": "4000", "x-ratelimit-limit": "5000"}, "1")
    gql = {
        "x-ratelimit-remaining": "12",
        "x-ratelimit-limit": "5000",
        "x-ratelimit-reset": "99",
        "x-ratelimit-resource": "graphql",
    }
    book.note(gql, "1")
    assert book.tightest.remaining == 4000
    got = book.graphql_tightest
    assert got is not None and (got.remaining, got.reset) == (12, 99)
    assert RateBook().graphql_tightest is None

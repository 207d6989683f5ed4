"""Property tests of the sandbox's GraphQL pagination: cursors walk every item exactly once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ghsandbox.gql.nodes import page


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 250), size=st.integers(1, 100))
def test_first_after_walks_forward_once(n: int, size: int) -> None:
    """Pages of ``first: size`` chained by ``endCursor`` give the items in order, once each."""
    items = list(range(n))
    seen: list[int] = []
    after: str | None = None
    for _ in range(n + 2):
        conn = page(items, {"first": size, "after": after}, "items")
        seen += conn.items
        assert len(conn.items) <= size
        if not conn.has_next:
            break
        after = conn.edges[-1][1]
    assert seen == items


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 250), size=st.integers(1, 100))
def test_last_before_walks_backward_once(n: int, size: int) -> None:
    """Pages of ``last: size`` chained by ``startCursor`` give each item once, last page first."""
    items = list(range(n))
    pages: list[list[int]] = []
    before: str | None = None
    for _ in range(n + 2):
        conn = page(items, {"last": size, "before": before}, "items")
        pages.append(conn.items)
        if not conn.has_prev:
            break
        before = conn.edges[0][1]
    assert [x for p in reversed(pages) for x in p] == items


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 50), first=st.integers(0, 60), skip=st.integers(0, 60))
def test_total_count_and_flags_agree(n: int, first: int, skip: int) -> None:
    """totalCount is the whole list; hasNextPage/hasPreviousPage say whether items lie outside."""
    items = list(range(n))
    conn = page(items, {"first": skip}, "items")
    after = conn.edges[-1][1] if conn.edges else None
    got = page(items, {"first": first, "after": after}, "items")
    start = min(skip, n)
    assert got.total == n
    assert got.items == items[start : start + first]
    assert got.has_next == (start + first < n)
    assert got.has_prev == (start > 0 if after is not None else False)

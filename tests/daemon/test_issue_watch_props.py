"""Where the decision repo's changes list starts (watch.next_since), as properties: it never
moves past an update a tick has not seen as capdaemon wrote it, never backwards, and stays
put (a stable URL: a free 304) while the list is short."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from capdaemon.daemon.issues.watch import (
    ADVANCE_AT,
    FULL_LIST_BELOW,
    next_since,
    unlabelled,
    wanted_lists,
)
from capdaemon.forge.types import IssueListing
from capdaemon.timefmt import parse_utc, utc_iso

T0 = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)

times = st.integers(min_value=0, max_value=10_000).map(lambda s: T0 + timedelta(seconds=s))
items = st.lists(
    st.tuples(st.integers(1, 400), st.sampled_from(["open", "closed"]), times),
    max_size=FULL_LIST_BELOW + 40,
)


def _listing(rows: list[tuple[int, str, datetime]]) -> IssueListing:
    return IssueListing({}, tuple(rows))


@given(items, st.one_of(st.none(), times), st.sets(st.integers(1, 400)))
def test_since_never_passes_an_unseen_issue_nor_goes_back(
    rows: list[tuple[int, str, datetime]], since_at: datetime | None, unseen: set[int]
) -> None:
    since = utc_iso(since_at) if since_at is not None else None
    new = next_since(_listing(rows), since, unseen)
    if new is None:
        assert since is None and len(rows) < FULL_LIST_BELOW
        return
    at = parse_utc(new)
    if since is not None:
        assert at >= parse_utc(since)
    if new != since:
        assert len(rows) >= (ADVANCE_AT if since is not None else FULL_LIST_BELOW)
        for n, _, updated in rows:
            if n in unseen:
                assert updated > at  # still listed by `since` (inclusive) next time
        assert at < max(updated for _, _, updated in rows)  # the newest is listed again


@given(items, times)
def test_a_short_changes_list_keeps_its_since(
    rows: list[tuple[int, str, datetime]], since_at: datetime
) -> None:
    since = utc_iso(since_at)
    short = rows[: ADVANCE_AT - 1]
    assert next_since(_listing(short), since, set()) == since


def test_an_issue_without_an_update_time_holds_the_since() -> None:
    rows = [(n, "open", T0 + timedelta(seconds=n)) for n in range(ADVANCE_AT)]
    listing = IssueListing({}, (*rows, (999, "open", None)))
    assert next_since(listing, utc_iso(T0), set()) == utc_iso(T0)


def test_a_ballot_listed_only_by_the_changes_list_is_held() -> None:
    """A ballot whose label was taken off shows only in the changes list: held (unlabelled);
    without a `since` there is no label listing to miss it from."""
    listing = IssueListing({}, ((7, "open", T0), (8, "open", T0)), frozenset({8}))
    assert unlabelled(listing, utc_iso(T0), {7, 8, 9}) == {7}
    assert unlabelled(listing, None, {7, 8, 9}) == set()


def test_wanted_lists_read_everything_without_a_since() -> None:
    (only,) = wanted_lists(None, True, True)
    assert only.since is None and only.label is None
    lists = wanted_lists("2026-05-25T03:00:00Z", True, False)
    assert [lst.key() for lst in lists] == [
        "since=2026-05-25T03:00:00Z",
        "label=decision:pending-owner",
    ]

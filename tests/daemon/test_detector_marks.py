"""The change detector's "did anything move" comparison, as pure functions (hypothesis)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from capdaemon.daemon.polling.detector import Moved, repos_moved, what_moved

numbers = st.integers(min_value=1, max_value=40)
marks = st.lists(st.tuples(numbers, st.sampled_from("abcd")), max_size=12, unique_by=lambda x: x[0])
REPOS = ["o/a", "o/b", "o/c", "o/bot"]
open_issues = st.dictionaries(numbers, st.sets(st.sampled_from(REPOS), min_size=1), max_size=8)


@given(marks, st.booleans())
def test_an_unchanged_feed_never_moves(items: list[tuple[int, str]], first: bool) -> None:
    """The same marks twice: nothing moved, whatever the look."""
    assert what_moved(tuple(items), tuple(items), first_look=first) == Moved()


@given(marks, marks)
def test_every_new_changed_or_departed_item_is_named(
    old: list[tuple[int, str]], new: list[tuple[int, str]]
) -> None:
    """Marks that differ in any way: a change; the numbers are exactly the items whose mark is
    new and those no longer listed (an issue closed leaves the open list)."""
    moved = what_moved(tuple(old), tuple(new), first_look=False)
    assert moved.changed == (tuple(old) != tuple(new))
    fresh = {n for n, m in new if (n, m) not in set(old)}
    gone = {n for n, _ in old} - {n for n, _ in new}
    assert moved.numbers == (fresh | gone if moved.changed else set())
    assert not moved.unknown


@given(marks)
def test_a_feed_read_for_the_first_time_moves_only_after_the_first_look(
    new: list[tuple[int, str]],
) -> None:
    """Never read before: on the first look it only sets the marks; later (after a failed
    read, a new repo) what happened meanwhile is unknown, so it counts as moved."""
    assert not what_moved(None, tuple(new), first_look=True).changed
    later = what_moved(None, tuple(new), first_look=False)
    assert later.changed and later.unknown


@given(marks, marks, open_issues, st.sets(st.sampled_from(REPOS)), st.sampled_from([*REPOS, None]))
def test_moved_decision_issues_flag_exactly_their_supervised_repos(
    old: list[tuple[int, str]],
    new: list[tuple[int, str]],
    issues: dict[int, set[str]],
    supervised: set[str],
    decision: str | None,
) -> None:
    """The decision repo's list: the repos flagged are supervised, include the repos of every
    moved open decision issue, and nothing at all when nothing moved."""
    moved = what_moved(tuple(old), tuple(new), first_look=False)
    got = repos_moved(("o/bot", "issues", "1"), moved, issues, supervised, decision)
    assert got <= supervised
    if not moved.changed:
        assert got == set()
    for n in moved.numbers:
        assert issues.get(n, set()) & supervised <= got
    if moved.unknown:
        assert {r for rs in issues.values() for r in rs} & supervised <= got


@given(st.sampled_from(["pulls", "checks"]), st.booleans(), st.sets(st.sampled_from(REPOS)))
def test_a_pr_list_or_a_prs_checks_flag_their_own_repo(
    kind: str, changed: bool, supervised: set[str]
) -> None:
    """A PR list or a waiting PR's checks that moved flag their repo (when supervised)."""
    got = repos_moved(("o/a", kind, "f" * 40), Moved(changed=changed), {}, supervised, None)
    assert got == ({"o/a"} & supervised if changed else set())


@given(st.sets(st.sampled_from(REPOS)), st.sets(st.sampled_from(REPOS)))
def test_a_decision_issue_closed_flags_the_repos_of_its_prs(
    repos: set[str], supervised: set[str]
) -> None:
    """An open decision issue leaves the open list (closed by hand): its PRs' repos are
    flagged, so a targeted tick sees the close at once."""
    moved = what_moved(((7, "a"), (9, "b")), ((9, "b"),), first_look=False)
    got = repos_moved(("o/bot", "issues", "1"), moved, {7: repos, 9: {"o/c"}}, supervised, None)
    assert got == repos & supervised

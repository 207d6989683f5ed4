"""The unified-diff hunk parser: line numbers, counts, headers, malformed input."""

from __future__ import annotations

import pytest

from capdaemon.classify.hunks import PatchError, parse_patch, try_parse_patch

from .classify_builders import make_patch


def test_line_numbers_follow_the_header() -> None:
    """Added lines carry new numbers, removed lines old numbers, context both."""
    (hunk,) = parse_patch(make_patch(["a", "b", "c"], ["a", "B", "c"]))
    assert [(ln.kind, ln.text, ln.old_no, ln.new_no) for ln in hunk.lines] == [
        (" ", "a", 1, 1),
        ("-", "b", 2, 0),
        ("+", "B", 0, 2),
        (" ", "c", 3, 3),
    ]


def test_git_file_header_is_skipped_and_function_header_kept() -> None:
    """`diff --git`/`---`/`+++` lines before the first hunk are skipped; the header is kept."""
    patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@ def f():\n-a\n+b"
    (hunk,) = parse_patch(patch)
    assert hunk.header == "def f():"
    assert [ln.text for ln in hunk.added] == ["b"]


def test_counts_decide_where_a_hunk_ends() -> None:
    """A removed line that looks like `--- x` is read as a removed line, not a file header."""
    patch = "@@ -1,1 +1,1 @@\n--- x\n+++ y\n-z"
    with pytest.raises(PatchError):
        parse_patch(patch)
    (hunk,) = parse_patch("@@ -1,2 +1,1 @@\n--- x\n-y\n+z")
    assert [ln.text for ln in hunk.removed] == ["-- x", "y"]


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param("@@ -1,3 +1,3 @@\n a\n-b", id="ends-early"),
        pytest.param("@@ -1 +1 @@\n-a\n+b\ngarbage", id="text-after-hunk"),
        pytest.param("@@ -1 +1 @@\n?a", id="unknown-prefix"),
        pytest.param("@@ -1 +1 @@\n-a\n+b\ndiff --git a/y b/y", id="second-file"),
        pytest.param("@@ -1,1 +1,1 @@\n+a\n+b", id="too-many-added"),
    ],
)
def test_malformed_patches_raise(patch: str) -> None:
    """Malformed patches raise PatchError (and try_parse_patch gives None)."""
    with pytest.raises(PatchError):
        parse_patch(patch)
    assert try_parse_patch(patch) is None


def test_no_newline_marker_and_empty_context_lines() -> None:
    """`\\ No newline` markers are ignored and an empty line is blank context."""
    patch = "@@ -1,2 +1,2 @@\n\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file"
    (hunk,) = parse_patch(patch)
    assert [ln.kind for ln in hunk.lines] == [" ", "-", "+"]


def test_unavailable_patch_is_none() -> None:
    """A None patch parses to None (carve-outs then do not apply)."""
    assert try_parse_patch(None) is None
    assert parse_patch("") == ()


def test_blocks_pair_removed_and_added_runs() -> None:
    """blocks() groups each run of changes between context lines."""
    (hunk,) = parse_patch(make_patch(["a", "b", "c", "d", "e"], ["a", "B", "c", "D", "E", "e"]))
    shapes = [(len(r), len(a)) for r, a in hunk.blocks()]
    assert shapes == [(1, 1), (1, 2)]


def test_a_5000_digit_line_number_is_an_unreadable_patch_not_a_crash() -> None:
    """int() of 5,000 digits raises ValueError; the parser reports a PatchError instead."""
    import pytest

    from capdaemon.classify.hunks import PatchError, parse_patch, try_parse_patch

    patch = "@@ -" + "9" * 5000 + ",1 +1,1 @@\n-a\n+b\n"
    assert try_parse_patch(patch) is None
    with pytest.raises(PatchError, match="over 18 digits"):
        parse_patch(patch)

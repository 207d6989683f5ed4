"""Hostile marker text: deep JSON, unclosed comments, many openers; round trip under noise."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.forge.markers import MAX_MARKER_CHARS, parse_marker, render_marker, with_marker


def test_deeply_nested_json_is_not_a_marker_and_raises_nothing() -> None:
    """`{"a":` + `[`×100,000 used to raise RecursionError out of the issue reader."""
    bomb = '<!-- capdaemon: {"kind": "x", "a": ' + "[" * 100_000 + "]" * 100_000 + "} -->"
    assert parse_marker(bomb) is None
    # nesting deep enough for RecursionError yet under the size cap
    deep = '<!-- capdaemon: {"kind": "x", "a": ' + "[" * 5000 + "]" * 5000 + "} -->"
    assert parse_marker(deep) is None
    # a real marker after the bomb is still found
    good = render_marker({"kind": "ballot", "pr": "o/r#1"})
    assert parse_marker(bomb + "\n" + good) == {"kind": "ballot", "pr": "o/r#1"}


def test_many_openers_without_a_close_parse_to_none() -> None:
    """65,520 characters of `<!-- capdaemon: {` with no `-->`: no marker, no quadratic scan."""
    unit = "<!-- capdaemon: {}"
    text = unit * (65_520 // len(unit))
    assert parse_marker(text) is None
    assert with_marker(text, {"kind": "k"}).endswith(render_marker({"kind": "k"}))


def test_a_comment_ends_at_its_first_close_as_html_does() -> None:
    """Text after the first `-->` is page content, never part of the marker."""
    assert parse_marker('<!-- capdaemon: {"kind": "x", "v": "--> <b>"} -->') is None


def test_an_unclosed_comment_in_the_body_does_not_hide_the_marker() -> None:
    """A body with a stray `<!--` still yields the marker appended after it (no duplicates)."""
    body = with_marker("summary <!-- unfinished", {"kind": "ballot", "pr": "o/r#2"})
    assert parse_marker(body) == {"kind": "ballot", "pr": "o/r#2"}
    again = with_marker(body, {"kind": "ballot", "pr": "o/r#3"})
    assert again.count("capdaemon:") == 1 and parse_marker(again)["pr"] == "o/r#3"


def test_oversized_markers_are_refused_both_ways() -> None:
    """The bot never writes a marker it would not read back; longer ones are not parsed."""
    big = {"kind": "k", "v": "x" * MAX_MARKER_CHARS}
    try:
        render_marker(big)
    except ValueError as exc:
        assert str(MAX_MARKER_CHARS) in str(exc)
    else:
        raise AssertionError("render_marker accepted an oversized marker")
    assert parse_marker("<!-- capdaemon: " + json.dumps(big) + " -->") is None


_OLD_RE = re.compile(r"<!--\s*capdaemon:\s*(\{.*?\})\s*-->", re.DOTALL)
_noise = st.lists(
    st.sampled_from(
        ["<!--", "-->", "<!-- capdaemon: ", "{", "}", '"kind"', ":", '"x"', " ", "\n", "a"]
    ),
    max_size=30,
).map("".join)
_values = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(st.integers(), st.text(max_size=20), st.booleans(), st.none()),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(before=_noise, after=_noise, d=_values, kind=st.text(min_size=1, max_size=10))
def test_with_marker_round_trips_under_noise(before: str, after: str, d: dict, kind: str) -> None:
    """Whatever surrounds it, a body re-marked by the bot parses to the marker it carries."""
    marker = {**d, "kind": kind}
    body = with_marker(before + "\n" + after, marker)
    assert parse_marker(body) == json.loads(json.dumps(marker))
    assert body.count("capdaemon:") >= 1


@settings(max_examples=200, deadline=None)
@given(text=_noise)
def test_agrees_with_the_old_pattern_on_comments_without_inner_close(text: str) -> None:
    """Where a comment holds no early `-->`, the linear scan finds what the old regex found."""
    old = None
    for m in _OLD_RE.finditer(text):
        if "-->" in m.group(0)[4:-3] or "<!--" in m.group(0)[4:]:
            return  # the old regex read across a comment's bounds; HTML does not
        try:
            obj = json.loads(m.group(1))
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("kind"), str):
            old = obj
            break
    assert parse_marker(text) == old

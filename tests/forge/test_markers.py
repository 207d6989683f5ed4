"""Hidden markers: render, parse, identity (pure)."""

from __future__ import annotations

import pytest

from capdaemon.forge.markers import marker_key, parse_marker, render_marker, with_marker


def test_round_trip() -> None:
    """A rendered marker parses back to the same dict."""
    d = {"kind": "ballot", "pr": "o/r#5", "head": "abc"}
    assert parse_marker(f"Vote here\n\n{render_marker(d)}") == d


def test_marker_cannot_close_the_comment_early() -> None:
    """`-->` inside a value is escaped, so the marker stays one HTML comment and parses intact."""
    d = {"kind": "x", "note": "a --> b <c> & d"}
    text = render_marker(d)
    assert text.count("-->") == 1 and parse_marker(text) == d


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "no marker",
        "<!-- capdaemon: {not json} -->",
        "<!-- capdaemon: [1, 2] -->",
        '<!-- capdaemon: {"no": "kind"} -->',
    ],
)
def test_garbage_is_not_a_marker(text: str | None) -> None:
    """Missing, malformed, non-object or kind-less markers parse to None."""
    assert parse_marker(text) is None


def test_identity_is_kind_plus_key_or_pr() -> None:
    """Volatile fields (head) do not change an issue marker's identity; kind and key/pr do."""
    a = {"kind": "ballot", "pr": "o/r#5", "head": "1"}
    assert marker_key(a) == marker_key({**a, "head": "2"})
    assert marker_key(a) != marker_key({**a, "pr": "o/r#6"})
    assert marker_key({"kind": "k", "key": "x", "pr": "p"}) == marker_key(
        {"kind": "k", "key": "x", "pr": "q"}
    )
    assert marker_key({"kind": "digest", "day": "1"}) != marker_key({"kind": "digest", "day": "2"})


def test_with_marker_replaces_an_old_marker() -> None:
    """Re-marking a body keeps one marker, the new one."""
    body = with_marker(with_marker("text", {"kind": "a"}), {"kind": "b"})
    assert body.count("capdaemon:") == 1 and parse_marker(body) == {"kind": "b"}


def test_render_requires_kind() -> None:
    """A marker without a kind is refused."""
    with pytest.raises(ValueError):
        render_marker({"pr": "o/r#1"})

"""callback_data: round trip, 64-byte limit, and no tampering that still verifies (hypothesis)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.channels import callback

KEY = b"0123456789abcdef0123456789abcdef"

bindings = st.builds(
    callback.Binding,
    request_id=st.text("0123456789abcdef", min_size=12, max_size=12),
    pr=st.builds(
        "{}/{}#{}".format,
        st.sampled_from(["acme", "o", "x-y"]),
        st.sampled_from(["widgets", "r", "bot"]),
        st.integers(1, 10**6),
    ),
    head_sha=st.text("0123456789abcdef", min_size=40, max_size=40),
    chat_id=st.integers(-(10**13), 10**13),
    expires_at=st.just("2026-05-25T03:05:00Z"),
)
actions = st.sampled_from(["approve", "reject"])


@settings(max_examples=60, deadline=None)
@given(bindings, actions)
def test_signed_data_round_trips_and_fits_the_bot_api_limit(b, action) -> None:
    data = callback.sign(KEY, b, action)
    assert len(data.encode()) <= 64
    cb = callback.parse(data)
    assert cb.action == action and cb.request_id == b.request_id
    callback.verify(KEY, cb, b)


@settings(max_examples=60, deadline=None)
@given(bindings, actions, st.data())
def test_any_other_binding_or_key_does_not_verify(b, action, data) -> None:
    """Another PR, head, chat, deadline or key: CallbackError (never a pass)."""
    signed = callback.parse(callback.sign(KEY, b, action))
    other = dataclasses.replace(data.draw(bindings), request_id=b.request_id)
    if other == b:
        return
    with pytest.raises(callback.CallbackError):
        callback.verify(KEY, signed, other)
    with pytest.raises(callback.CallbackError):
        callback.verify(KEY[::-1], signed, b)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=80), st.binary(max_size=80).map(repr)))
def test_parse_never_crashes_on_arbitrary_text(text) -> None:
    """Anything a client can send parses or raises CallbackError with a one-line message."""
    try:
        callback.parse(text)
    except callback.CallbackError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=60, deadline=None)
@given(bindings, actions, st.integers(0, 40), st.characters(codec="ascii"))
def test_one_changed_character_never_verifies(b, action, pos, ch) -> None:
    data = callback.sign(KEY, b, action)
    pos %= len(data)
    mutated = data[:pos] + ch + data[pos + 1 :]
    if mutated == data:
        return
    with pytest.raises(callback.CallbackError):
        callback.verify(KEY, callback.parse(mutated), b)


def test_short_or_missing_key_is_a_one_line_error(tmp_path) -> None:
    short = tmp_path / "k"
    short.write_text("tooshort")
    with pytest.raises(ValueError, match=r"shorter than 16 bytes"):
        callback.load_key(str(short), "X", env={})
    with pytest.raises(ValueError, match=r"telegram.hmac_key_file: cannot read"):
        callback.load_key(str(tmp_path / "missing"), "X", env={})
    with pytest.raises(ValueError, match=r"environment variable TG_KEY"):
        callback.load_key(None, "TG_KEY", env={})
    assert callback.load_key(None, "TG_KEY", env={"TG_KEY": "k" * 20}) == b"k" * 20

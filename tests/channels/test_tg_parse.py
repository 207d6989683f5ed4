"""parse_update never raises, keeps every update's id, and reads a well-formed tap exactly."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from capdaemon.channels.telegram import parse_update

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
KEYS = st.sampled_from(["id", "from", "message", "data", "chat_instance", "chat", "message_id"])


def _tap(uid: int, qid: str, user: int, chat: int, mid: int, data: str) -> dict[str, Any]:
    return {
        "update_id": uid,
        "callback_query": {
            "id": qid,
            "from": {"id": user, "is_bot": False, "first_name": "x", "username": "u"},
            "message": {"message_id": mid, "chat": {"id": chat, "type": "supergroup"}},
            "chat_instance": "c",
            "data": data,
        },
    }


@given(JSON)
def test_arbitrary_json_never_raises(raw: Any) -> None:
    """Whatever the API sends, one Tap comes back, with an error unless it is a real tap."""
    tap = parse_update(raw)
    assert isinstance(tap.update_id, int)
    if not isinstance(raw, dict) or "callback_query" not in raw:
        assert tap.error


@given(
    st.integers(0, 2**40),
    st.text(min_size=1, max_size=20),
    st.integers(1, 2**40),
    st.integers(-(2**45), -1),
    st.integers(1, 2**31),
    st.text(max_size=64),
)
def test_well_formed_taps_round_trip(
    uid: int, qid: str, user: int, chat: int, mid: int, data: str
) -> None:
    """Every field of a well-formed callback_query is read as sent."""
    tap = parse_update(_tap(uid, qid, user, chat, mid, data))
    assert tap.error == ""
    assert (tap.update_id, tap.query_id, tap.user_id, tap.chat_id, tap.message_id, tap.data) == (
        uid,
        qid,
        user,
        chat,
        mid,
        data,
    )


@given(st.integers(0, 2**40), KEYS, JSON)
def test_a_damaged_tap_keeps_its_id_and_names_the_field(uid: int, key: str, junk: Any) -> None:
    """One field of the query replaced by junk (or removed): the update id survives, so the
    offset moves past it, and a field the tap needs is named in the error."""
    raw = _tap(uid, "q1", 5, -100, 7, "d")
    q = raw["callback_query"]
    if key in ("chat", "message_id"):
        q["message"][key] = junk
    elif junk is None:
        del q[key]
    else:
        q[key] = junk
    tap = parse_update(raw)
    assert tap.update_id == uid
    if tap.error:
        assert any(k in tap.error for k in ("id", "from", "message", "data", "chat"))

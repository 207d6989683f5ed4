"""An agent whose PR is D for its Agent-Session trailer is told the rule and what passes: the
part that fails (tool, model or session id), its length, the characters allowed, an example."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from capdaemon.classify.trailers import (
    commit_agent_session,
    explain_agent_session,
    parse_agent_session,
)

# The rules, written out independently of the module's regular expressions (the oracle).
RULES = {
    "tool": (1, 64, "abcdefghijklmnopqrstuvwxyz0123456789._-"),
    "model": (1, 128, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-"),
    "session id": (8, 64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"),
}


def _passes(name: str, part: str) -> bool:
    low, high, allowed = RULES[name]
    return low <= len(part) <= high and all(c in allowed for c in part) and part[0].isalnum()


def test_the_reported_session_id_is_explained() -> None:
    """`aider/gpt-5/sess-1` (it said only "is not <tool>/<model>/<session-id>"): the session
    id is named with its length, the 8-64 rule and an example that passes."""
    session, why = commit_agent_session("Fix\n\nAgent-Session: aider/gpt-5/sess-1\n")
    assert session is None and why is not None
    assert "the session id 'sess-1' (6 characters) does not pass" in why
    assert "8-64 characters of A-Z a-z 0-9 . _ -" in why
    example = why.rsplit("e.g. ", 1)[1]
    assert parse_agent_session(example) is not None


def test_every_malformed_trailer_reason_says_what_passes() -> None:
    """Two trailers, a trailer hidden outside the block, a divider: each says the fix."""
    good = "Agent-Session: claude-code/claude-opus-4/sess-00000001"
    cases = {
        f"Fix\n\n{good}\n{good}\n": "at most one",
        f"Fix\n\n{good}\nnot a trailer line\n": "must hold only trailer lines",
    }
    for message, fix in cases.items():
        _session, why = commit_agent_session(message)
        assert why is not None and fix in why, (message, why)


part = st.text(alphabet="aZ9._:-/ é", max_size=70)


@given(st.lists(part, min_size=1, max_size=4).map("/".join))
def test_the_explanation_names_the_first_part_that_fails(value: str) -> None:
    """For any value that does not parse, the explanation names the count of parts, or the
    first part that breaks its rule (by the oracle above) with its length and that rule."""
    if parse_agent_session(value) is not None:
        assert all(_passes(n, p) for n, p in zip(RULES, value.strip().split("/"), strict=True))
        return
    why = explain_agent_session(value)
    parts = value.strip(" \t").split("/")
    assert "<tool>/<model>/<session-id>" in why
    if len(parts) != 3:
        assert f"has {len(parts)} part(s)" in why
        return
    failing = next(n for n, p in zip(RULES, parts, strict=True) if not _passes(n, p))
    low, high, _ = RULES[failing]
    assert re.search(rf"the {failing} '.*' \(\d+ characters\) does not pass", why), why
    assert f"{low}-{high} characters" in why

"""Comment command parsing: a homu-style table of bodies and the command they hold."""

from __future__ import annotations

import pytest

from capdaemon.decide.ballot import CommandKind, parse_command, unknown_command_reply

K = CommandKind
CASES = [
    ("approve-a", "/approve A", K.APPROVE_A),
    ("approve-b", "/approve B", K.APPROVE_B),
    ("approve-c", "/approve C", K.APPROVE_C),
    ("lower-letter", "/approve a", K.APPROVE_A),
    ("upper-word", "/APPROVE b", K.APPROVE_B),
    ("reject", "/reject", K.REJECT),
    ("reject-caps", "/Reject", K.REJECT),
    ("breaker-reset", "/breaker reset", K.BREAKER_RESET),
    ("breaker-reset-caps", "/Breaker RESET", K.BREAKER_RESET),
    ("trailing-spaces", "/approve A   \t", K.APPROVE_A),
    ("extra-inner-spaces", "/approve    A", K.APPROVE_A),
    ("crlf", "thanks\r\n/approve A\r\n", K.APPROVE_A),
    ("after-text-lines", "Looks good to me.\n\n/approve A\n", K.APPROVE_A),
    ("before-text-lines", "/reject\n\nThis deletes the cron job.", K.REJECT),
    ("same-command-twice", "/approve A\n/approve a", K.APPROVE_A),
    ("valid-beats-unknown", "/approve A\n/lgtm", K.APPROVE_A),
    ("plain-text", "looks fine", None),
    ("empty", "", None),
    ("mid-line", "I would /approve A this", None),
    ("leading-space", " /approve A", None),
    ("indented-code", "    /approve A", None),
    ("tab-indented", "\t/approve A", None),
    ("quote", "> /approve A", None),
    ("nested-quote", "> > /reject", None),
    ("inline-code", "`/approve A`", None),
    ("fenced-backticks", "```\n/approve A\n```", None),
    ("fenced-tildes", "~~~\n/reject\n~~~", None),
    ("fenced-with-info", "```text\n/approve A\n```", None),
    ("fence-longer-close", "````\n/approve A\n```\nstill code\n````", None),
    ("unclosed-fence", "```\n/approve A", None),
    ("after-fence-closes", "```\ncode\n```\n/approve C", K.APPROVE_C),
    ("html-comment", "<!-- /approve A -->", None),
    ("html-comment-multiline", "<!--\n/approve A\n-->", None),
    ("html-comment-then-command", "<!-- note -->\n/reject", K.REJECT),
    ("path-like", "/usr/bin/env is broken", None),
    ("slash-number", "/1 is odd", None),
    ("unknown-word", "/lgtm", K.UNKNOWN),
    ("unknown-merge", "/merge", K.UNKNOWN),
    ("approve-d", "/approve D", K.UNKNOWN),
    ("approve-no-letter", "/approve", K.UNKNOWN),
    ("approve-two-letters", "/approve A B", K.UNKNOWN),
    ("approve-trailing-text", "/approve A thanks!", K.UNKNOWN),
    ("approve-glued", "/approveA", K.UNKNOWN),
    ("approve-lookalike-letter", "/approve А", K.UNKNOWN),  # Cyrillic А
    ("approve-fullwidth-letter", "/approve Ａ", K.UNKNOWN),
    ("approve-zero-width", "/approve A\u200b", K.UNKNOWN),
    ("reject-with-text", "/reject because", K.UNKNOWN),
    ("breaker-no-arg", "/breaker", K.UNKNOWN),
    ("breaker-other", "/breaker trip", K.UNKNOWN),
    ("two-different", "/approve A\n/reject", K.UNKNOWN),
    ("approve-a-and-c", "/approve A\n/approve C", K.UNKNOWN),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parse_command_table(body: str, expected: CommandKind | None) -> None:
    """Each body parses to the expected command kind (None = plain text)."""
    cmd = parse_command(body)
    assert (cmd.kind if cmd else None) is expected


def test_unknown_command_has_reason_and_line() -> None:
    """An unknown command keeps the line as written and says why."""
    cmd = parse_command("/approve A please")
    assert cmd is not None
    assert cmd.line == "/approve A please"
    assert "alone" in cmd.reason


def test_ambiguous_command_reason() -> None:
    """Two different commands are reported as ambiguous."""
    cmd = parse_command("/approve A\n/reject")
    assert cmd is not None and "more than one" in cmd.reason


def test_reply_lists_valid_commands_and_never_parses_itself() -> None:
    """The reply names every valid command, in code spans, so it is not itself a command."""
    reply = unknown_command_reply(parse_command("/lgtm"))  # type: ignore[arg-type]
    for c in ("/approve A", "/approve B", "/approve C", "/reject", "/breaker reset"):
        assert f"`{c}`" in reply
    assert parse_command(reply) is None


def test_long_line_is_truncated() -> None:
    """The stored line is bounded (it goes into audit entries)."""
    cmd = parse_command("/x " + "y" * 1000)
    assert cmd is not None and len(cmd.line) <= 200

"""Parser attacks end to end through the sandbox: trailers git reads, commands GitHub quotes."""

from __future__ import annotations

import pytest

from .conftest import quadrant

pytestmark = pytest.mark.slow

DOC = {"docs/guide/usage.md": "# Usage\n\nRun it.\n"}  # A on its own


def test_agent_session_hidden_behind_a_comment_line_is_d(daemon) -> None:
    """The issue's commit: git reads two Agent-Session trailers past the `#` line (a malformed
    identity); capdaemon used to see none and call it a human commit. Now the PR is D."""
    trailers = "Agent-Session: a/b/12345678\nAgent-Session: a/b/87654321\n\n# x"
    n = daemon.open_pr(DOC, title="docs: usage", trailers=trailers)
    plain = daemon.open_pr(DOC, title="docs: usage again")
    daemon.tick()
    assert quadrant(daemon, n) == "D"
    (rec,) = daemon.classifications(n)[-1:]
    assert "2 Agent-Session trailers" in str(rec)
    assert quadrant(daemon, plain) == "A"  # the same change with one valid trailer


def test_owner_quoting_agent_text_with_a_lazy_continuation_does_not_approve(daemon) -> None:
    """alice quotes agent text and the agent's `/approve A` follows on the next line: GitHub
    renders it inside the quote, so it is not her vote; nor are look-alike spaces, a fence
    closed by a tab, or a multi-line code span. Her plain `/approve A` afterwards counts."""
    n = daemon.open_pr(
        {".github/workflows/ci.yml": "name: ci\non: [pull_request]\n"}, title="change ci"
    )
    daemon.tick()
    daemon.advance(minutes=1)
    alice = daemon.ballot(n, "alice")
    for body in (
        "> the agent says this is safe\n/approve A",
        "1. the agent's plan\n/approve A",
        "/approve\xa0A",
        "/approve\u3000A",
        "```\nlog\n\t```\n/approve A",
        "see `the agent wrote\n/approve A\n` in its log",
        "<pre>\n/approve A\n</pre>",
    ):
        alice.create_comment(body)
    daemon.tick()
    daemon.tick()
    assert not daemon.actions("vote_counted", n)
    assert not daemon.pull(n).merged and daemon.check(n).conclusion == "failure"
    daemon.advance(minutes=1)
    alice.create_comment("Read it myself.\n/approve A")
    daemon.tick()
    assert daemon.actions("vote_counted", n)

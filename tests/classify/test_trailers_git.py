"""Trailers read exactly as git reads them: git itself is the oracle (property-based)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from capdaemon.classify import classify
from capdaemon.classify.trailers import (
    commit_agent_session,
    divider_before_scissors,
    parse_trailers,
)

from .classify_builders import NOW, added, base_config, commit, snapshot

_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@example.com",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@example.com",
}
SESSION = "Agent-Session: a/b/12345678"


def _pairs(out: str) -> list[tuple[str, str]]:
    """git's `token: value` lines (a token never holds a `:`)."""
    pairs = []
    for line in out.split("\n"):
        if line:
            tok, _, val = line.partition(":")
            pairs.append((tok, val[1:] if val.startswith(" ") else val))
    return pairs


def git_parse(message: str) -> list[tuple[str, str]]:
    """`git interpret-trailers --parse` on a message."""
    out = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=message.encode("utf-8"),
        capture_output=True,
        env=_ENV,
        check=True,
        timeout=20,
    ).stdout.decode("utf-8")
    return _pairs(out)


class StoredCommits:
    """A scratch repository: store a message as a commit, read its trailers back with git log."""

    def __init__(self, path: Path) -> None:
        self.path = path
        subprocess.run(["git", "init", "-q", str(path)], env=_ENV, check=True)
        self.tree = self._git("write-tree").strip()

    def _git(self, *args: str, data: bytes | None = None) -> str:
        return subprocess.run(
            ["git", "-C", str(self.path), *args],
            input=data,
            capture_output=True,
            env=_ENV,
            check=True,
        ).stdout.decode("utf-8")

    def trailers(self, message: str) -> list[tuple[str, str]]:
        sha = self._git("commit-tree", self.tree, data=message.encode("utf-8")).strip()
        return _pairs(self._git("log", "-1", "--format=%(trailers:only,unfold)", sha))


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoredCommits]:
    yield StoredCommits(tmp_path_factory.mktemp("trailers-repo"))


_LINES = st.sampled_from(
    [
        "subject",
        "",
        "  ",
        "\r",
        "# x",
        "#",
        "Key: v",
        "Task-Id: t-1",
        SESSION,
        "agent-session :  a/b/87654321 ",
        "Signed-off-by: Ann <a@b>",
        "(cherry picked from commit 0123abc)",
        " continued",
        "\tcontinued too",
        "some prose here",
        "prose: with a colon",
        "---",
        "--- a/file",
        "----",
        "Conflicts:",
        "\tpath/one",
        "# ------------------------ >8 ------------------------",
        "Key With Space: v",
        "K\t: tabbed",
        "-x: y",
        ": empty token",
        "Key:",
        "Key: v\r",
        "\x0b",
        "Ke_y: v",
        "Kéy: v",
    ]
)
_MESSAGES = st.builds(
    lambda lines, end: "\n".join(lines) + end,
    st.lists(_LINES, min_size=1, max_size=12),
    st.sampled_from(["", "\n", "\n\n"]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=_MESSAGES)
def test_parse_agrees_with_git_interpret_trailers(message: str) -> None:
    """Every generated message: the same trailers as `git interpret-trailers --parse`.

    Messages with a `---` divider before a scissors line are left out: git loops forever on
    them (capdaemon refuses their Agent-Session outright, see below)."""
    assume(not divider_before_scissors(message))
    assert parse_trailers(message) == git_parse(message)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(message=_MESSAGES)
def test_stored_commit_reading_agrees_with_git_log(stored: StoredCommits, message: str) -> None:
    """A stored commit (no `---` divider): the same trailers as `git log --format=%(trailers)`."""
    assert parse_trailers(message, stored=True) == stored.trailers(message)


@settings(max_examples=100, deadline=None)
@given(message=_MESSAGES)
def test_agent_identity_fails_closed_where_git_sees_a_session(message: str) -> None:
    """Whenever git reads an Agent-Session trailer, capdaemon never calls the commit human."""
    session, why = commit_agent_session(message)
    if divider_before_scissors(message):
        assert session is None and why is not None and "scissors" in why
        return
    seen = [v for k, v in git_parse(message) if k.casefold() == "agent-session"]
    if seen:
        assert session is not None or why is not None
    if session is not None:
        assert seen and len(seen) == 1


CASES = [
    # the issue's message: git reads two trailers past the comment line, so the identity is
    # malformed (D); the old parser saw no trailer block at all and called it a human commit
    ("subject\n\nAgent-Session: a/b/12345678\nAgent-Session: a/b/87654321\n\n# x\n", "D"),
    # comment lines inside the block are skipped by git, not counted as prose
    (f"subject\n\n{SESSION}\n# note\nTask-Id: t-1\n", "A"),
    # git's 25 % rule with a cherry-pick line
    (f"subject\n\nprose\nprose\nprose\n(cherry picked from commit 0123abc)\n{SESSION}\n", "A"),
    # the divider hides the session from interpret-trailers but not from git log: ambiguous
    (f"subject\n\nbody\n---\n{SESSION}\n", "D"),
    # git interpret-trailers never returns on this one
    (f"subject\n---\n# ------------------------ >8 ------------------------\n{SESSION}\n", "D"),
]


@pytest.mark.parametrize(("message", "quadrant"), CASES)
def test_agent_session_decisions(message: str, quadrant: str) -> None:
    """The classifier's verdict on each message, through the whole engine."""
    v = classify(
        snapshot(added("examples/demo.py"), commits=[commit(message)]), base_config(), now=NOW
    )
    assert v.quadrant.value == quadrant, v.reasoning


def test_the_issue_message_reads_as_git_reads_it() -> None:
    """Two trailers, exactly as git shows them."""
    msg = CASES[0][0]
    assert (
        parse_trailers(msg)
        == git_parse(msg)
        == [
            ("Agent-Session", "a/b/12345678"),
            ("Agent-Session", "a/b/87654321"),
        ]
    )
    assert commit_agent_session(msg) == (
        None,
        "2 Agent-Session trailers: one commit carries at most one",
    )


def test_a_long_continuation_chain_is_linear() -> None:
    """200,000 continuation lines fold into one value (repeated string building was quadratic)."""
    msg = "s\n\nKey: v\n" + " x\n" * 200_000
    ((key, value),) = parse_trailers(msg)
    assert key == "Key" and value == "v" + " x" * 200_000


def test_an_oversized_message_is_refused_unread() -> None:
    """A message over the size cap is not read for an identity: malformed, the PR is D."""
    from capdaemon.classify.trailers import MAX_MESSAGE_CHARS

    msg = f"subject\n\n{'x' * MAX_MESSAGE_CHARS}\n\n{SESSION}\n"
    session, why = commit_agent_session(msg)
    assert session is None and why is not None and str(MAX_MESSAGE_CHARS) in why


def test_a_message_of_too_many_lines_is_refused_unread() -> None:
    """21,800 one-character continuation lines (a trailer bomb under the size cap) are not
    read: malformed, naming the line cap, so the bomb costs no more than prose."""
    from capdaemon.classify.trailers import MAX_MESSAGE_CHARS, MAX_MESSAGE_LINES

    msg = f"Fix\n\n{SESSION}\n" + " x\n" * 21_800
    assert len(msg) <= MAX_MESSAGE_CHARS
    session, why = commit_agent_session(msg)
    assert session is None and why is not None and f"{MAX_MESSAGE_LINES} lines" in why
    prose = "subject\n\n" + "Prose.\n" * (MAX_MESSAGE_LINES - 10) + f"\n{SESSION}\n"
    assert commit_agent_session(prose)[0] is not None

"""Commit-message trailers read exactly as git reads them, and the Agent-Session helpers (2.6).

git's rules (trailer.c, commit.c), which `git interpret-trailers --parse` applies and which the
tests check against git itself:

- a `---` line followed by whitespace starts a patch: nothing from it on is read (the divider;
  `git log --format=%(trailers)` does not apply it but skips leading blank lines, so both
  readings are computed where it matters);
- everything from a `# ------------------------ >8 ------------------------` line on, and a
  final run of `#` comment lines, blank lines and `Conflicts:` blocks, is not read;
- the first paragraph (the subject; `#` lines do not end it) is never trailers;
- the trailer block is the last paragraph, read from the end: `#` lines are skipped, a line
  is a trailer when it starts with a token (ASCII letters, digits, `-`), optional spaces and
  `:`; a line starting with whitespace may continue the trailer above it. The paragraph
  counts when it has trailers and no other lines, or when one line starts with
  `Signed-off-by: ` or `(cherry picked from commit ` and at least 25 % are trailers;
- whitespace is git's: space, tab, newline, carriage return (not `\\v`, `\\f` or Unicode).

All of it is linear in the message length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

COMMENT_CHAR = "#"
AGENT_SESSION_KEY = "agent-session"
_SPACE = " \t\n\r"
_GIT_GENERATED = ("Signed-off-by: ", "(cherry picked from commit ")
_SCISSORS = f"\n{COMMENT_CHAR} ------------------------ >8 ------------------------\n"
_SEPARATOR = re.compile(r"[A-Za-z0-9-]*(?:(?<=[A-Za-z0-9-])[ \t]+)?:")
_FOLD = re.compile(r"\n[ \t\n\r]*")


_DIVIDER = re.compile(r"^---[ \t\r\n]", re.MULTILINE)
_LEADING_BLANKS = re.compile(r"(?:[ \t\r]*\n)*")
MAX_MESSAGE_CHARS = 65_536  # larger messages are not read for an identity (fail closed)
# ... nor are messages of more lines: git's reading is per line, so 65,536 characters of
# one-character lines cost ten times prose of the same size (a squash of 250 commits with
# long bodies stays well under this)
MAX_MESSAGE_LINES = 4_096


def _separator(line: str) -> int:
    """Offset of the `:` ending a trailer token at the start of `line`, or -1 (find_separator)."""
    m = _SEPARATOR.match(line)
    return -1 if m is None else m.end() - 1


def _blank(line: str) -> bool:
    return not line.strip(" \t\r")


def _lines_of(buf: str) -> list[str]:
    """The lines of `buf` without their `\\n` (split on `\\n` only, as git does)."""
    lines = buf.split("\n")
    if not lines[-1]:
        lines.pop()  # "" after a final newline is not a line
    return lines


def _patch_start(buf: str) -> int:
    """Offset of the first `---` divider line, or len(buf)."""
    m = _DIVIDER.search(buf)
    return len(buf) if m is None else m.start()


def _scissors(buf: str, length: int) -> int:
    """Where a `# --- >8 ---` line starts (searched in the whole message, as git does)."""
    if buf.startswith(_SCISSORS[1:]):
        return 0
    p = buf.find(_SCISSORS)
    return p + 1 if p >= 0 else length


def divider_before_scissors(message: str) -> bool:
    """True when a `---` divider comes before a scissors line: git 2.39's reading then loops
    forever (`interpret-trailers` never returns), so no trailer reading of it can be trusted."""
    buf = message.split("\0", 1)[0]
    start = _patch_start(buf)
    return start < len(buf) and _scissors(buf, len(buf)) > start


def _trailer_end(lines: list[str], cutoff: int, *, last_ends: bool) -> int:
    """Index after the trailer-bearing lines: a final run of comment lines, empty lines and
    `Conflicts:` blocks before the scissors is not read (commit.c's ignore_non_trailer)."""
    boc = 0  # 0 doubles as "no run yet", as in git (a run starting at line 0 is not one)
    in_conflicts = False
    for i in range(min(cutoff, len(lines))):
        line = lines[i]
        if not line or line[0] == COMMENT_CHAR:
            if not boc:
                boc = i
        elif line == "Conflicts:" and (i + 1 < len(lines) or last_ends):
            in_conflicts = True
            if not boc:
                boc = i
        elif in_conflicts and line[0] == "\t":
            pass
        elif boc:
            boc = 0
            in_conflicts = False
    return boc if boc else cutoff


class _Line(Enum):
    """What a line is to the search for the trailer block (trailer.c)."""

    COMMENT = "comment"  # starts with the comment character: skipped
    BLANK = "blank"  # only spaces: a paragraph's end
    CONTINUATION = "continuation"  # starts with whitespace: may continue the line above
    GENERATED = "generated"  # a trailer git writes itself (Signed-off-by, cherry picked)
    TRAILER = "trailer"  # a token, optional spaces and `:`
    OTHER = "other"


def _line_kind(line: str) -> _Line:
    """What `line` is to the trailer block search."""
    first = line[:1]
    if first == COMMENT_CHAR:
        return _Line.COMMENT
    if first in _SPACE:  # "" (an empty line) is in any string
        return _Line.BLANK if not line.strip(" \t\r") else _Line.CONTINUATION
    if line.startswith(_GIT_GENERATED):
        return _Line.GENERATED
    if _SEPARATOR.match(line) is not None and line[0] != ":":
        return _Line.TRAILER
    return _Line.OTHER


def _trailer_start(lines: list[str], end: int) -> int:
    """Index of the first line of the trailer block, or `end` when there is none."""
    s = 0
    while s < end and (lines[s].startswith(COMMENT_CHAR) or not _blank(lines[s])):
        s += 1
    end_of_title = s
    only_spaces = True
    recognized = False
    trailers = others = continuations = 0
    for i in range(end - 1, end_of_title - 1, -1):
        kind = _line_kind(lines[i])
        if kind is _Line.COMMENT:
            others += continuations
            continuations = 0
            continue
        if kind is _Line.BLANK:
            if only_spaces:
                continue
            others += continuations
            if (recognized and trailers * 3 >= others) or (trailers and not others):
                return i + 1
            return end
        only_spaces = False
        if kind is _Line.CONTINUATION:
            continuations += 1
            continue
        if kind is _Line.OTHER:
            others += 1 + continuations  # the lines below it were not continuations after all
        else:
            trailers += 1
            recognized = recognized or kind is _Line.GENERATED
        continuations = 0
    return end


def _region(message: str, *, stored: bool) -> tuple[list[str], int, int]:
    """(lines, start, end): the message's lines and the trailer block's line range."""
    buf = message.split("\0", 1)[0]  # git reads the message as a C string
    if stored:
        buf = buf[_LEADING_BLANKS.match(buf).end() :]  # type: ignore[union-attr]
    length = len(buf) if stored else _patch_start(buf)
    cutoff = _scissors(buf, length)
    lines = _lines_of(buf)
    cut = len(lines) if cutoff >= len(buf) else buf.count("\n", 0, cutoff)
    end = _trailer_end(lines, cut, last_ends=buf.endswith("\n"))
    return lines, _trailer_start(lines, end), end


def parse_trailers(message: str, *, stored: bool = False) -> list[tuple[str, str]]:
    """The trailers of a commit message as (token, value), as `git interpret-trailers --parse`.

    With `stored=True`, as `git log --format=%(trailers)` reads a stored commit: a `---` line
    is ordinary text and leading blank lines are skipped. Continuation lines are folded into
    one space.
    """
    lines, start, end = _region(message, stored=stored)
    entries: list[list[str]] = []
    last: list[str] | None = None
    for line in lines[start:end]:
        if last is not None and line[:1] in _SPACE:  # "" (an empty line) included
            last.append(line)
            continue
        entry = [line]
        entries.append(entry)
        last = entry if _separator(line) >= 1 else None
    out: list[tuple[str, str]] = []
    for entry in entries:
        head = entry[0]
        sep = _separator(head)
        if head.startswith(COMMENT_CHAR) or sep < 1:
            continue
        text = "\n".join(entry)
        value = _FOLD.sub(" ", text[sep + 1 :].strip(_SPACE)).strip(_SPACE)
        out.append((head[:sep].strip(_SPACE), value))
    return out


# ----------------------------------------------------------------------------- Agent-Session
_TOOL = r"[a-z0-9][a-z0-9._-]{0,63}"
_MODEL = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}"
_SESSION = r"[A-Za-z0-9][A-Za-z0-9._-]{7,63}"
_AGENT_SESSION = re.compile(rf"({_TOOL})/({_MODEL})/({_SESSION})")


@dataclass(frozen=True, slots=True)
class AgentSession:
    """A parsed `Agent-Session: <tool>/<model>/<session-id>` value."""

    tool: str
    model: str
    session_id: str

    @property
    def agent_id(self) -> str:
        """`tool/model`, the key of the agent registry and of burn-in."""
        return f"{self.tool}/{self.model}"


def parse_agent_session(value: str) -> AgentSession | None:
    """Parse an Agent-Session trailer value; None when it does not follow the grammar."""
    m = _AGENT_SESSION.fullmatch(value.strip(_SPACE))
    if m is None:
        return None
    return AgentSession(m.group(1), m.group(2), m.group(3))


# What each part of an Agent-Session value must be: (name, pattern, the rule in words)
SESSION_FORMAT = "<tool>/<model>/<session-id>, e.g. claude-code/claude-opus-4/sess-00000001"
_PARTS = (
    (
        "tool",
        re.compile(_TOOL),
        "1-64 characters of a-z 0-9 . _ - (lower case), starting with a letter or digit",
    ),
    (
        "model",
        re.compile(_MODEL),
        "1-128 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit",
    ),
    (
        "session id",
        re.compile(_SESSION),
        "8-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit",
    ),
)


def explain_agent_session(value: str) -> str:
    """Why an Agent-Session value does not parse, naming the part, its rule and what passes."""
    shown = value.strip(_SPACE)
    parts = shown.split("/")
    head = f"Agent-Session value {shown[:200]!r}"
    if len(parts) != 3:
        return f"{head} has {len(parts)} part(s) separated by '/'; it must be {SESSION_FORMAT}"
    for (name, pattern, rule), part in zip(_PARTS, parts, strict=True):
        if pattern.fullmatch(part) is None:
            return (
                f"{head}: the {name} {part[:80]!r} ({len(part)} characters) does not pass: "
                f"it must be {rule}; the whole value is {SESSION_FORMAT}"
            )
    return f"{head} does not parse: it must be {SESSION_FORMAT}"


def _sessions(trailers: list[tuple[str, str]]) -> list[str]:
    return [v for k, v in trailers if k.casefold() == AGENT_SESSION_KEY]


def _hidden_session_line(message: str) -> bool:
    """True when the last paragraph git reads has an `Agent-Session:` line git did not take."""
    lines, _start, end = _region(message, stored=False)
    start = end
    while start > 0 and not _blank(lines[start - 1]):
        start -= 1
    for line in lines[start:end]:
        sep = _separator(line)
        if sep >= 1 and line[:sep].strip(_SPACE).casefold() == AGENT_SESSION_KEY:
            return True
    return False


@lru_cache(maxsize=64)
def commit_agent_session(message: str) -> tuple[AgentSession | None, str | None]:
    """(session, None) for an agent commit, (None, None) for a human one, (None, why) if malformed.

    Malformed (fail closed): an Agent-Session value that does not parse; more than one such
    trailer; a message over MAX_MESSAGE_CHARS or MAX_MESSAGE_LINES or with a NUL byte; a
    message whose
    Agent-Session trailers `git interpret-trailers` and `git log` read differently (a `---`
    divider, leading blank lines), or git cannot read at all (a divider before a scissors
    line); or an `Agent-Session:`
    line in the last paragraph that git would not read as a trailer (an agent must not be
    able to hide its identity by breaking the trailer block).
    """
    if len(message) > MAX_MESSAGE_CHARS:
        return None, f"commit message over {MAX_MESSAGE_CHARS} characters is not read"
    if message.count("\n") > MAX_MESSAGE_LINES:
        return None, f"commit message over {MAX_MESSAGE_LINES} lines is not read"
    if "\0" in message:
        return None, "commit message contains a NUL byte (git and GitHub read it differently)"
    if divider_before_scissors(message):
        return None, (
            "a `---` divider before a scissors line: git cannot read the trailers; "
            "remove the `---` line"
        )
    values = _sessions(parse_trailers(message))
    if values != _sessions(parse_trailers(message, stored=True)):
        return None, (
            "git reads the Agent-Session trailers differently in `git log`: put the trailers "
            "in the message's last paragraph, with no `---` line or leading blank lines"
        )
    if len(values) > 1:
        return None, f"{len(values)} Agent-Session trailers: one commit carries at most one"
    if len(values) == 1:
        session = parse_agent_session(values[0])
        if session is None:
            return None, explain_agent_session(values[0])
        return session, None
    if _hidden_session_line(message):
        return None, (
            "Agent-Session line outside a valid trailer block: the message's last paragraph "
            "must hold only trailer lines (`Key: value`), one of them "
            f"`Agent-Session: {SESSION_FORMAT.split(', e.g. ')[0]}`"
        )
    return None, None

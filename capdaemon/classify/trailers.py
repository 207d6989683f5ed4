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

COMMENT_CHAR = "#"
AGENT_SESSION_KEY = "agent-session"
_SPACE = " \t\n\r"
_GIT_GENERATED = ("Signed-off-by: ", "(cherry picked from commit ")
_SCISSORS = f"\n{COMMENT_CHAR} ------------------------ >8 ------------------------\n"
_SEPARATOR = re.compile(r"[A-Za-z0-9-]*(?:(?<=[A-Za-z0-9-])[ \t]+)?:")
_FOLD = re.compile(r"\n[ \t\n\r]*")


def _separator(buf: str, bol: int) -> int:
    """Offset of the `:` ending a trailer token at `bol`, or -1 (git's find_separator)."""
    m = _SEPARATOR.match(buf, bol)
    return -1 if m is None else m.end() - 1 - bol


def _next_line(buf: str, pos: int) -> int:
    nl = buf.find("\n", pos)
    return len(buf) if nl < 0 else nl + 1


def _is_blank(buf: str, pos: int) -> bool:
    end = buf.find("\n", pos)
    line = buf[pos:] if end < 0 else buf[pos:end]
    return not line.strip(_SPACE)


def _last_line(buf: str, length: int) -> int:
    if length == 0:
        return -1
    if length == 1:
        return 0
    return buf.rfind("\n", 0, length - 1) + 1


def _patch_start(buf: str) -> int:
    pos = 0
    while pos < len(buf):
        if buf.startswith("---", pos) and buf[pos + 3 : pos + 4] in tuple(_SPACE):
            return pos
        pos = _next_line(buf, pos)
    return len(buf)


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


def _trailer_end(buf: str, length: int) -> int:
    """Where the trailer-bearing text ends: before the scissors and a final comment run."""
    cutoff = _scissors(buf, length)
    boc = 0
    bol = 0
    in_conflicts = False
    while bol < cutoff:
        ch = buf[bol : bol + 1]
        if ch in (COMMENT_CHAR, "\n"):
            if not boc:
                boc = bol
        elif buf.startswith("Conflicts:\n", bol):
            in_conflicts = True
            if not boc:
                boc = bol
        elif in_conflicts and ch == "\t":
            pass
        elif boc:
            boc = 0
            in_conflicts = False
        bol = _next_line(buf, bol)
    return boc if boc else cutoff


def _trailer_start(buf: str, length: int) -> int:
    """Where the trailer block starts, or `length` when there is none."""
    s = 0
    while s < length:
        if buf[s] != COMMENT_CHAR and _is_blank(buf, s):
            break
        s = _next_line(buf, s)
    end_of_title = s
    only_spaces = True
    recognized = False
    trailers = others = continuations = 0
    line = _last_line(buf, length)
    while line >= end_of_title:
        bol, line = line, _last_line(buf, line)
        first = buf[bol : bol + 1]
        if first == COMMENT_CHAR:
            others += continuations
            continuations = 0
            continue
        if _is_blank(buf, bol):
            if only_spaces:
                continue
            others += continuations
            if (recognized and trailers * 3 >= others) or (trailers and not others):
                return _next_line(buf, bol)
            return length
        only_spaces = False
        if buf.startswith(_GIT_GENERATED, bol):
            trailers += 1
            continuations = 0
            recognized = True
        elif _separator(buf, bol) >= 1 and first not in _SPACE:
            trailers += 1
            continuations = 0
        elif first in _SPACE:
            continuations += 1
        else:
            others += 1
            continuations = 0
    return length


_LEADING_BLANKS = re.compile(r"(?:[ \t\r]*\n)*")


def _block(message: str, *, stored: bool) -> str:
    buf = message.split("\0", 1)[0]  # git reads the message as a C string
    if stored:
        buf = buf[_LEADING_BLANKS.match(buf).end() :]  # type: ignore[union-attr]
    length = len(buf) if stored else _patch_start(buf)
    end = _trailer_end(buf, length)
    return buf[_trailer_start(buf, end) : end]


def parse_trailers(message: str, *, stored: bool = False) -> list[tuple[str, str]]:
    """The trailers of a commit message as (token, value), as `git interpret-trailers --parse`.

    With `stored=True`, as `git log --format=%(trailers)` reads a stored commit: a `---` line
    is ordinary text and leading blank lines are skipped. Continuation lines are folded into
    one space.
    """
    block = _block(message, stored=stored)
    if not block:
        return []
    entries: list[list[str]] = []
    last: list[str] | None = None
    for piece in _lines(block):
        if last is not None and piece[:1] in tuple(_SPACE):
            last.append(piece)
            continue
        entry = [piece]
        entries.append(entry)
        last = entry if _separator(piece, 0) >= 1 else None
    out: list[tuple[str, str]] = []
    for entry in entries:
        text = "".join(entry)
        if text.startswith(COMMENT_CHAR):
            continue
        sep = _separator(text, 0)
        if sep < 1:
            continue
        value = _FOLD.sub(" ", text[sep + 1 :].strip(_SPACE)).strip(_SPACE)
        out.append((text[:sep].strip(_SPACE), value))
    return out


def _lines(block: str) -> list[str]:
    """Split on `\\n` only, keeping it (str.splitlines also splits on `\\r`, `\\v`, `\\x1c` …)."""
    pieces = [p + "\n" for p in block.split("\n")]
    pieces[-1] = pieces[-1][:-1]
    return pieces if pieces[-1] else pieces[:-1]


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


def _sessions(trailers: list[tuple[str, str]]) -> list[str]:
    return [v for k, v in trailers if k.casefold() == AGENT_SESSION_KEY]


def _hidden_session_line(message: str) -> bool:
    """True when the last paragraph git reads has an `Agent-Session:` line git did not take."""
    buf = message.split("\0", 1)[0]
    end = _trailer_end(buf, _patch_start(buf))
    start = end
    while start > 0:
        prev = _last_line(buf, start)
        if prev < 0 or (_is_blank(buf, prev) and buf[prev : prev + 1] != COMMENT_CHAR):
            break
        start = prev
    for piece in _lines(buf[start:end]):
        sep = _separator(piece, 0)
        if sep >= 1 and piece[:sep].strip(_SPACE).casefold() == AGENT_SESSION_KEY:
            return True
    return False


def commit_agent_session(message: str) -> tuple[AgentSession | None, str | None]:
    """(session, None) for an agent commit, (None, None) for a human one, (None, why) if malformed.

    Malformed (fail closed): an Agent-Session value that does not parse; more than one such
    trailer; a message whose Agent-Session trailers `git interpret-trailers` and `git log`
    read differently (a `---` divider, leading blank lines), or git cannot read at all (a divider
    before a scissors line); a NUL byte; or an `Agent-Session:`
    line in the last paragraph that git would not read as a trailer (an agent must not be
    able to hide its identity by breaking the trailer block).
    """
    if "\0" in message:
        return None, "commit message contains a NUL byte (git and GitHub read it differently)"
    if divider_before_scissors(message):
        return None, "a `---` divider before a scissors line: git cannot read the trailers"
    values = _sessions(parse_trailers(message))
    if values != _sessions(parse_trailers(message, stored=True)):
        return None, "git reads the Agent-Session trailers differently in `git log`"
    if len(values) > 1:
        return None, f"{len(values)} Agent-Session trailers"
    if len(values) == 1:
        session = parse_agent_session(values[0])
        if session is None:
            return None, "Agent-Session value is not <tool>/<model>/<session-id>"
        return session, None
    if _hidden_session_line(message):
        return None, "Agent-Session line outside a valid trailer block"
    return None, None

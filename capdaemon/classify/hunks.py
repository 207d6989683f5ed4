"""A small, strict unified-diff hunk parser shared by the carve-outs and the content scans."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MAX_NUMBER_DIGITS = 18  # far past any real file; int() of thousands of digits raises ValueError
_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?([^\n]*)(?=\n|$)")

_FILE_HEADER = re.compile(
    r"^(?:diff --git |index |--- |\+\+\+ |(?:old|new|deleted file|new file) mode |"
    r"similarity index |rename (?:from|to) |copy (?:from|to) |Binary files )"
)

CONTEXT = " "
ADDED = "+"
REMOVED = "-"


class PatchError(ValueError):
    """A patch text that is not a well-formed unified diff (carve-outs then do not apply)."""


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a hunk: its kind (" ", "+", "-"), text, and old/new line numbers (0 if none)."""

    kind: str
    text: str
    old_no: int
    new_no: int


class Hunk:
    """One `@@ -a,b +c,d @@ header` hunk; `raw` holds its body lines with their prefixes."""

    __slots__ = ("_lines", "header", "new_len", "new_start", "old_len", "old_start", "raw")

    def __init__(
        self,
        old_start: int,
        old_len: int,
        new_start: int,
        new_len: int,
        header: str,
        raw: tuple[str, ...],
    ) -> None:
        self.old_start = old_start
        self.old_len = old_len
        self.new_start = new_start
        self.new_len = new_len
        self.header = header
        self.raw = raw
        self._lines: tuple[DiffLine, ...] | None = None

    def __repr__(self) -> str:
        return f"Hunk(-{self.old_start},{self.old_len} +{self.new_start},{self.new_len})"

    @property
    def lines(self) -> tuple[DiffLine, ...]:
        """The body as DiffLines with old/new line numbers (built on first use)."""
        if self._lines is not None:
            return self._lines
        out: list[DiffLine] = []
        old_no, new_no = self.old_start, self.new_start
        for text in self.raw:
            kind = text[0]
            if kind == CONTEXT:
                out.append(DiffLine(CONTEXT, text[1:], old_no, new_no))
                old_no += 1
                new_no += 1
            elif kind == REMOVED:
                out.append(DiffLine(REMOVED, text[1:], old_no, 0))
                old_no += 1
            else:
                out.append(DiffLine(ADDED, text[1:], 0, new_no))
                new_no += 1
        self._lines = tuple(out)
        return self._lines

    @property
    def added(self) -> tuple[DiffLine, ...]:
        """The `+` lines."""
        return tuple(ln for ln in self.lines if ln.kind == ADDED)

    @property
    def removed(self) -> tuple[DiffLine, ...]:
        """The `-` lines."""
        return tuple(ln for ln in self.lines if ln.kind == REMOVED)

    @property
    def has_removals(self) -> bool:
        """True when any line is removed (cheap, no DiffLines built)."""
        return any(t[0] == REMOVED for t in self.raw)

    def line_no(self, index: int) -> int:
        """The line number of raw[index]: new-file number, or old-file number for a removal."""
        old_no, new_no = self.old_start, self.new_start
        for text in self.raw[:index]:
            kind = text[0]
            if kind != ADDED:
                old_no += 1
            if kind != REMOVED:
                new_no += 1
        return old_no if self.raw[index][0] == REMOVED else new_no

    def added_texts(self) -> list[str]:
        """The texts of the `+` lines (cheap, no DiffLines built)."""
        return [t[1:] for t in self.raw if t[0] == ADDED]

    def blocks(self) -> list[tuple[list[DiffLine], list[DiffLine]]]:
        """Runs of changed lines between context lines, as (removed, added) pairs."""
        out: list[tuple[list[DiffLine], list[DiffLine]]] = []
        rem: list[DiffLine] = []
        add: list[DiffLine] = []
        for ln in self.lines:
            if ln.kind == CONTEXT:
                if rem or add:
                    out.append((rem, add))
                    rem, add = [], []
            elif ln.kind == REMOVED:
                rem.append(ln)
            else:
                add.append(ln)
        if rem or add:
            out.append((rem, add))
        return out


def _hunk_headers(patch: str) -> list[re.Match[str]]:
    """The `@@` header matches in order; every line that starts with "@@" must be one."""
    headers: list[re.Match[str]] = []
    pos = 0 if patch.startswith("@@") else patch.find("\n@@") + 1 or -1
    while pos >= 0:
        m = _HUNK_HEADER.match(patch, pos)
        if m is None:
            raise PatchError("a line starting with @@ is not a hunk header")
        headers.append(m)
        pos = patch.find("\n@@", m.end()) + 1 or -1
    return headers


def _check_preamble(preamble: str) -> None:
    """Raise PatchError unless every line before the first hunk is a file header line."""
    if not preamble:
        return
    for i, line in enumerate(preamble.rstrip("\n").split("\n")):
        if not _FILE_HEADER.match(line):
            raise PatchError(f"line {i + 1} is outside any hunk")


def _header_numbers(k: int, m: re.Match[str]) -> tuple[int, int, int, int]:
    """Hunk k's (old_start, old_len, new_start, new_len); an omitted length is 1."""
    g_old, g_old_len, g_new, g_new_len = numbers = m.groups()[:4]
    if any(g is not None and len(g) > _MAX_NUMBER_DIGITS for g in numbers):
        raise PatchError(f"hunk {k + 1}'s header has a number over {_MAX_NUMBER_DIGITS} digits")
    old_len = int(g_old_len) if g_old_len is not None else 1
    new_len = int(g_new_len) if g_new_len is not None else 1
    return int(g_old), old_len, int(g_new), new_len


def _outside_hunk(k: int, body: list[str]) -> PatchError:
    """The error for hunk k's body holding a line that is no hunk line."""
    bad = next(i for i, ln in enumerate(body) if ln[:1] not in ("-", "+", " ", "", "\\"))
    if body[bad].startswith("diff --git "):
        return PatchError("patch covers more than one file")
    return PatchError(f"a line after hunk {k + 1}'s header is outside any hunk")


def _parse_hunk(k: int, m: re.Match[str], text: str) -> Hunk:
    """Hunk k from its header match and `text` ("" or "\n" + body lines joined by "\n")."""
    body = text[1:].split("\n") if text else []
    removed = text.count("\n-")
    added = text.count("\n+")
    context = text.count("\n ")
    markers = text.count("\n\\") if "\\" in text else 0
    empty = len(body) - removed - added - context - markers
    if empty and empty != sum(1 for line in body if not line):
        raise _outside_hunk(k, body)
    context += empty
    old_start, old_len, new_start, new_len = _header_numbers(k, m)
    if removed + context != old_len or added + context != new_len:
        raise PatchError(f"hunk at line {old_start} does not match its header's line counts")
    if markers or empty:
        body = [line or CONTEXT for line in body if line[:1] != "\\"]
    return Hunk(old_start, old_len, new_start, new_len, m.group(5), tuple(body))


def parse_patch(patch: str) -> tuple[Hunk, ...]:
    """Parse the hunks of one file's unified diff (GitHub's `patch` field or `git diff` output).

    Header lines before the first hunk (`diff --git`, `index`, `---`, `+++`, mode lines) are
    skipped. Inside a hunk the line counts of the `@@` header are enforced, so a line such as
    `--- x` inside a hunk is read as a removed line, never as a new file header. Raises
    PatchError on anything malformed.
    """
    if patch.endswith("\n"):
        patch = patch[:-1]
    headers = _hunk_headers(patch)
    _check_preamble(patch[: headers[0].start()] if headers else patch)
    hunks: list[Hunk] = []
    for k, m in enumerate(headers):
        end = headers[k + 1].start() - 1 if k + 1 < len(headers) else len(patch)
        hunks.append(_parse_hunk(k, m, patch[m.end() : end]))
    return tuple(hunks)


def try_parse_patch(patch: str | None) -> tuple[Hunk, ...] | None:
    """parse_patch, or None when the patch is unavailable or malformed."""
    if patch is None:
        return None
    try:
        return parse_patch(patch)
    except PatchError:
        return None

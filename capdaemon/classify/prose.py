"""Code inside a prose file: the lines a typo fix may not touch even in Markdown,
reStructuredText, AsciiDoc or plain text.

Fail closed wherever a changed line may be code: a word changed inside an inline code span
(between backticks), a doctest line (`>>>`, `...`: `pytest --doctest-glob` runs them), an
indented line (a Markdown code block, a reStructuredText literal block), a fence line
(```` ``` ````, `~~~`; in AsciiDoc also `----`, `....`) or a line inside a fenced block, a
line in a reStructuredText literal block or directive (after `::`, `.. code-block::`), and
YAML or TOML front matter (`---`/`+++` from the first line). Markdown, reStructuredText and
AsciiDoc files are read whole on both sides (without their whole texts the typo carve-out is
refused): Markdown by markdown-it-py's CommonMark parser (fenced and indented code and HTML
blocks, in lists and quotes too), the others top down by the rules above; plain text has no
blocks, and its patch is read alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from markdown_it import MarkdownIt

from capdaemon.classify.hunks import ADDED, CONTEXT, REMOVED, DiffLine, Hunk
from capdaemon.languages import wants_whole_prose_type

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ADOC_BLOCK = re.compile(r"^(-{4,}|\.{4,}|\+{4,}|_{4,}|={4,})\s*$")  # AsciiDoc delimited blocks
_FRONT = ("---", "+++")
_DOCTEST = (">>>", "...")
_RST_BLOCK = re.compile(r"(?:^\s*\.\.\s+[\w:-]+::.*|::\s*)$")
_INDENTED = re.compile(r"^(?: {4}|\t)")


def code_in_prose(
    path: str, hunks: Sequence[Hunk], texts: tuple[str | None, str | None] = (None, None)
) -> str:
    """Why a changed line of a prose file is code, not prose ("" when none is); `texts` are
    the whole base and head, which a format with blocks needs."""
    fence = _FENCE
    if path.casefold().endswith((".adoc", ".asciidoc")):
        fence = re.compile(f"{_FENCE.pattern}|{_ADOC_BLOCK.pattern}")
    if wants_whole_prose_type(path):
        base, head = texts
        if base is None or head is None:
            return (
                "whole file unavailable: its code blocks and front matter cannot be told from prose"
            )
        why = _whole_code(path, head, _whole(head, hunks, ADDED), fence) or _whole_code(
            path, base, _whole(base, hunks, REMOVED), fence
        )
    else:
        why = next((w for h in hunks if (w := _hunk_code(h.lines, fence))), "")
    if why:
        return why
    for h in hunks:
        for removed, added in h.blocks():
            for r, a in zip(removed, added, strict=False):
                if not _outside_code_spans(r.text, a.text):
                    return (
                        f"line {a.new_no}: a word inside inline code (between backticks) "
                        "changed: code, not prose"
                    )
    return ""


_MARKDOWN = (".md", ".markdown")
_MD_CODE = frozenset({"fence", "code_block", "html_block"})


@functools.cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


def _whole_code(path: str, text: str, lines: list[DiffLine], fence: re.Pattern[str]) -> str:
    """Why a changed line of one whole side is code: Markdown by its CommonMark blocks plus
    the line rules (front matter, doctests), the other formats by the line rules alone."""
    if not path.casefold().endswith(_MARKDOWN):
        return _hunk_code(lines, fence)
    code = _markdown_code_lines(text)
    for ln in lines:
        if ln.kind != CONTEXT and ln.new_no in code:
            return f"line {ln.new_no}: inside a code fence, code block or HTML block, not prose"
    front = _opens_front_matter(lines)
    for i, ln in enumerate(lines):
        if ln.kind == CONTEXT:
            front = front and not (i and ln.text.strip() in _FRONT)
            continue
        why = _line_code(ln, False, False, front)
        if why and "indented" not in why:  # CommonMark said it is no code block
            return why
    return ""


def _markdown_code_lines(text: str) -> set[int]:
    """The 1-based lines CommonMark puts in a fenced or indented code block or an HTML block."""
    code: set[int] = set()
    for tok in _markdown().parse(text):
        if tok.type in _MD_CODE and tok.map:
            code.update(range(tok.map[0] + 1, tok.map[1] + 1))
    return code


def _whole(text: str, hunks: Sequence[Hunk], kind: str) -> list[DiffLine]:
    """A whole side of the file as one hunk: its changed lines (`kind`: the head's added or
    the base's removed lines) marked so, every other line context."""
    if kind == ADDED:
        changed = {ln.new_no for h in hunks for ln in h.lines if ln.kind == ADDED}
    else:
        changed = {ln.old_no for h in hunks for ln in h.lines if ln.kind == REMOVED}
    return [
        DiffLine(kind if n in changed else CONTEXT, line, n, n)
        for n, line in enumerate(text.split("\n"), 1)
    ]


def _outside_code_spans(old: str, new: str) -> bool:
    """Whether two lines differ only before their first backtick or after their last one
    (anything between backticks may be a code span, whatever the backticks' count)."""
    a, b = old.split("`"), new.split("`")
    if len(a) != len(b):
        return False
    return all(x == y for x, y in zip(a[1:-1], b[1:-1], strict=True))


def _hunk_code(lines: Sequence[DiffLine], fence: re.Pattern[str]) -> str:
    """Why a changed line of one hunk is code, reading its context lines top down."""
    opened = ""  # the marker of the fence the hunk shows open ("" when none)
    literal = False  # after a reStructuredText `::` or directive, until an unindented line
    front = _opens_front_matter(lines)
    for i, ln in enumerate(lines):
        text = ln.text
        if ln.kind != CONTEXT:
            why = _line_code(ln, bool(opened) or bool(fence.match(text)), literal, front)
            if why:
                return why
            continue
        if front and i and text.strip() in _FRONT:
            front = False
        else:
            opened = _fence_after(fence, text, opened)
        inside = not text.strip() or text[:1].isspace()
        literal = bool(_RST_BLOCK.search(text)) or (literal and inside)
    return ""


def _opens_front_matter(lines: Sequence[DiffLine]) -> bool:
    """Whether the hunk starts at the file's first line and that line opens front matter."""
    first = lines[0] if lines else None
    return (
        first is not None
        and first.kind != ADDED
        and first.old_no == 1
        and (first.text.strip() in _FRONT)
    )


def _fence_after(fence: re.Pattern[str], text: str, opened: str) -> str:
    """The open fence's marker after a context line: a fence line opens one when none is
    open, and closes the open one when it is of the same kind, at least as long, and bare."""
    m = fence.match(text)
    if m is None:
        return opened
    marker = next(g for g in m.groups() if g)
    if not opened:
        return marker
    bare = text.strip()  # a closing fence has no info string
    closes = set(bare) == {opened[0]} and len(bare) >= len(opened)
    return "" if closes else opened


def _line_code(ln: DiffLine, fenced: bool, literal: bool, front: bool) -> str:
    """Why one changed line is code, given what the hunk showed above it ("" when prose)."""
    n = ln.new_no or ln.old_no
    text = ln.text
    if front:
        return f"line {n}: inside front matter (data a site generator reads), not prose"
    if fenced:
        return f"line {n}: inside or on a code fence, not prose"
    if literal and (not text.strip() or text[:1].isspace()):
        return f"line {n}: inside a reStructuredText literal block or directive, not prose"
    if _INDENTED.match(text):
        return f"line {n}: an indented line (a code or literal block), not prose"
    if text.lstrip().startswith(_DOCTEST):
        return f"line {n}: a doctest line (doctest runs it), not prose"
    return ""

"""Python's comment-free tokens of a changed file, read only around the change, with a proof
that the rest of both files yields the same tokens.

Python's `tokenize` reads a file line by line; what it carries from one line to the next is
the bracket depth, an open string, a `\\` continuation (together: whether it is *at rest*)
and the stack of indentation levels. It raises `TokenError` at the end of a text that ends
with it not at rest. Base and head share their lines before the first changed line and
after the last one. Take K, a line of the shared head that starts in column 0 with code
(not a blank, space or `#`), and M, such a line of the shared tail (line M of the base is
line M + shift of the head, shift = head lines − base lines):

- The shared lines before K are tokenized alone (once: they are the same on both sides).
  Ending without `TokenError` proves the tokenizer at rest at line K in both files, with the
  same indentation stack; line K, in column 0, closes every open block (the same dedents on
  both sides) and from there the tokenizer runs exactly as a fresh one on the rest of the
  text. So both files' tokens before K are equal, and from K on they are a fresh
  tokenizer's.
- The windows [K, M) of both files are tokenized fresh. Ending without `TokenError` proves
  the tokenizer at rest at line M on both sides; line M, in column 0, closes every block
  (the dedents a fresh tokenizer makes at the end of the window), and the text from M on is
  the same on both sides: so are its tokens.

Hence the whole files' comment-free token streams are equal exactly when the windows' are,
and the comments outside the windows are the same on both sides (they cancel out when
changed comments are counted). An error token or a bad indentation in the shared head is
an error of both whole files: it is raised. When the shared head does not end at rest, K
falls back to line 1; when a window does not, M falls back to the end of the file (the
whole rest, as before).

Quicker still, when the files differ in one line only and the change lies after a `#` that
the base's tokens, read from K to that line, show to start a comment: the tokenizer reads
the head's line the same up to that `#` (the same state, the same text) and then the comment
to the end of the line (no carriage return in it), and is in the same state after it. So the
two files' tokens are the same but for that comment, whatever follows; the rest is not read.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Sequence

from capdaemon.classify.tokens import (
    Comment,
    Lexed,
    OpenAtEnd,
    check_text,
    lex_python,
    shared_chars,
    shared_lines,
)
from capdaemon.languages import PYTHON


def _code_start(line: str) -> bool:
    """Whether a line starts in column 0 with something other than space or a comment."""
    return bool(line) and line[0] not in " \t\f\v\r#\\"


def _join(lines: Sequence[str], start: int, end: int) -> str:
    """Lines [start, end) (1-based) of a file split at "\\n", as text; to the end when
    `end` is past the last line."""
    text = "\n".join(lines[start - 1 : end - 1])
    return text + "\n" if end <= len(lines) else text


def _start_line(old: Sequence[str], same_head: int) -> int:
    """K: the last column-0 code line of the shared head, when the tokenizer is provably at
    rest before it; else 1."""
    k = next((n for n in range(same_head, 1, -1) if _code_start(old[n - 1])), 1)
    if k == 1:
        return 1
    try:
        lex_python(_join(old, 1, k))  # error tokens raise: the whole files have them too
    except OpenAtEnd:
        return 1
    return k


def lex_python_pair(base: str, head: str) -> tuple[Lexed, Lexed]:
    """The comment-free tokens and comments of the windows of base and head that cover the
    change (lines numbered as in the files); raises LexError as whole-file lexing would."""
    check_text(base)
    check_text(head)
    old = base.split("\n")  # as `tokenize` reads lines: "\n" ends a line, nothing else
    new = head.split("\n")
    same_head, same_tail = shared_lines(old, new)
    start = _start_line(old, same_head)
    swapped = _one_comment_swapped(old, new, same_head, same_tail, start)
    if swapped is not None:
        return swapped
    shift = len(new) - len(old)
    first_tail = max(len(old) - same_tail + 1, start + 1)
    end = next(
        (m for m in range(first_tail, len(old) + 1) if _code_start(old[m - 1])), len(old) + 1
    )
    while True:
        try:
            return (
                lex_python(_join(old, start, end), start),
                lex_python(_join(new, start, end + shift), start),
            )
        except OpenAtEnd:
            if end > len(old):
                raise
            end = len(old) + 1  # not at rest at M: read to the end


def _comment_column(old: Sequence[str], start: int, line: int) -> int | None:
    """The column where a comment starts on `line` of the base, read by a tokenizer started
    at rest at line `start` (see `_start_line`); None when the line holds none, or when the
    lines up to it hold a token the whole file would fail on."""
    text = _join(old, start, line + 1)
    found = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.ERRORTOKEN and not tok.string.isspace():
                return None
            if tok.type == tokenize.COMMENT and tok.start[0] == line - start + 1:
                found = tok.start[1]
    except tokenize.TokenError:  # the window ends inside a bracket, say: read so far
        pass
    except SyntaxError:  # an indentation error: the whole file has it too
        return None
    return found


def _one_comment_swapped(
    old: Sequence[str], new: Sequence[str], same_head: int, same_tail: int, start: int
) -> tuple[Lexed, Lexed] | None:
    """Base and head read as one comment each (their code tokens equal) when they differ in
    one line, after a `#` that starts a comment there (see the module's docstring)."""
    if len(old) != len(new) or same_head + same_tail != len(old) - 1:
        return None
    line = same_head + 1  # the one line that differs (1-based)
    before, after = old[line - 1], new[line - 1]
    if "\r" in before or "\r" in after:
        return None
    column = _comment_column(old, start, line)
    if column is None or column >= shared_chars(before, after)[0]:
        return None
    return (
        Lexed(PYTHON, (), (), (Comment(before[column:], line),)),
        Lexed(PYTHON, (), (), (Comment(after[column:], line),)),
    )

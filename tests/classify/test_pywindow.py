"""Python read around the change only: the same answer as tokenizing the whole files, on
generated files full of what carries tokenizer state across lines (open brackets, multi-line
strings, `\\` continuations, indented blocks), and a comment-looking edit inside such state
is still code."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.classify.commentonly import comment_only_files
from capdaemon.classify.pywindow import lex_python_pair
from capdaemon.classify.tokens import Lexed, LexError, lex

# lines that open or close tokenizer state, code at column 0 or indented, comments, junk
LINES = [
    "x = 1",
    "y = (",
    "    2,",
    ")",
    "]",
    "z = [1,",
    's = """',
    "'''",
    '"""',
    "t = '''a",
    "w = 1 + \\",
    "\\",
    "if x:",
    "    y = 2",
    "  y = 3",
    "def f():",
    "    return 1",
    "class C:",
    "@dec",
    "# a comment",
    "    # an indented comment",
    "# a comment \\",
    "",
    "   ",
    "v = 'one # not a comment'",
    'u = "unterminated',
    "$",
    "\tq = 4",
    "else:",
    "p = f'{x}'",
]
COMMENTS = ["# a", "# b", "# changed", "#", "# x = 2", "    # indented", ""]


def _view(old: Lexed, new: Lexed) -> tuple[bool, Counter[str], Counter[str]]:
    """What the carve-out decides on: equal code tokens, and the comments changed each way."""
    before = Counter(c.text for c in old.comments)
    after = Counter(c.text for c in new.comments)
    return old.tokens == new.tokens, before - after, after - before


def _whole(base: str, head: str) -> tuple[bool, Counter[str], Counter[str]] | str:
    try:
        return _view(lex("python", base), lex("python", head))
    except LexError:
        return "error"


def _window(base: str, head: str) -> tuple[bool, Counter[str], Counter[str]] | str:
    try:
        return _view(*lex_python_pair(base, head))
    except LexError:
        return "error"


def _compiles(text: str) -> bool:
    try:
        compile(text, "f.py", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


@st.composite
def _edits(draw: st.DrawFn) -> tuple[str, str]:
    lines = draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=14))
    at = draw(st.integers(0, len(lines)))
    new = draw(st.sampled_from(COMMENTS + LINES))
    how = draw(st.sampled_from(["insert", "replace", "delete"]))
    edited = list(lines)
    if how == "insert" or at == len(lines):
        edited.insert(at, new)
    elif how == "replace":
        edited[at] = new
    else:
        del edited[at]
    end = draw(st.sampled_from(["\n", ""]))
    return "\n".join(lines) + end, "\n".join(edited) + end


@settings(max_examples=1500, deadline=None)
@given(_edits())
def test_the_window_decides_as_the_whole_files_do(edit: tuple[str, str]) -> None:
    base, head = edit
    whole = _whole(base, head)
    window = _window(base, head)
    if whole == window:
        return
    # the one allowed difference: a tokenizer error in the identical tail after a proven
    # rest point, in files the interpreter rejects before and after the change alike
    assert whole == "error" and not _compiles(base) and not _compiles(head), (whole, window)


@pytest.mark.parametrize(
    ("base", "head"),
    [
        pytest.param(
            'x = 1\ns = """\n# a\n"""\ny = 2\n',
            'x = 1\ns = """\n# b\n"""\ny = 2\n',
            id="string-opened-before-the-change",
        ),
        pytest.param(
            "x = 1\ny = (1,\n# a\n2)\nz = 3\n",
            "x = 1\ny = (1,\n# a\n3)\nz = 3\n",
            id="bracket-opened-before-the-change",
        ),
        pytest.param(
            's = """\nx = 1\n"""\n# a\ny = 2\n',
            's = """\nx = 1\n"""\nb = 1\ny = 2\n',
            id="column-0-line-inside-a-string",
        ),
        pytest.param(
            "x = 1\nw = 1 + \\\n# a\ny = 2\n",
            "x = 1\nw = 1 + \\\n3\ny = 2\n",
            id="continuation-before-the-change",
        ),
        pytest.param(
            "if x:\n    y = 1\n# a\nz = 2\n",
            "if x:\n    y = 1\n    w = 3\nz = 2\n",
            id="code-into-an-open-block",
        ),
        pytest.param(
            "x = 1\n# a '''\ny = 2\nz = 3  # '''\nw = 4\n",
            "x = 1\n'''\ny = 2\nz = 3  # '''\nw = 4\n",
            id="comment-turned-into-a-string-opener",
        ),
    ],
)
def test_code_in_carried_state_is_never_comment_only(base: str, head: str) -> None:
    carve = comment_only_files("m.py", base, head)
    assert not carve, carve.why
    assert _window(base, head) == _whole(base, head)


def test_a_comment_edit_deep_in_a_long_file_reads_only_around_it() -> None:
    body = [f"v{i} = f({i})" for i in range(2000)]
    base = "\n".join([*body[:1000], "# old note", *body[1000:]]) + "\n"
    head = "\n".join([*body[:1000], "# new note", *body[1000:]]) + "\n"
    old, new = lex_python_pair(base, head)
    assert comment_only_files("m.py", base, head)
    assert len(old.tokens) < 50 and len(new.tokens) < 50  # not the 12,000 of the whole file
    assert [c.line for c in new.comments] == [1001]


@st.composite
def _comment_interior_edits(draw: st.DrawFn) -> tuple[str, str]:
    """A file with a line holding a comment (alone, after code, inside a string or a
    bracket), and the same file with that line's text after the `#` edited."""
    lines = draw(st.lists(st.sampled_from(LINES), max_size=12))
    at = draw(st.integers(0, len(lines)))
    line = draw(st.sampled_from(["# note", "x = 1  # note", "    # note", "'#' # note", "#"]))
    cut = draw(st.integers(line.index("#") + 1, len(line)))
    put = "".join(draw(st.lists(st.sampled_from(["x", " ", "\\", "'''", '"', "#", ")"]))))
    edited = line[:cut] + put + line[cut + draw(st.integers(0, len(line) - cut)) :]
    end = draw(st.sampled_from(["\n", ""]))
    base = "\n".join([*lines[:at], line, *lines[at:]]) + end
    return base, "\n".join([*lines[:at], edited, *lines[at:]]) + end


@settings(max_examples=1500, deadline=None)
@given(_comment_interior_edits())
def test_one_comment_swapped_decides_as_the_whole_files_do(edit: tuple[str, str]) -> None:
    base, head = edit
    whole = _whole(base, head)
    window = _window(base, head)
    if whole == window:
        return
    # as for the window: an error the whole files share after the proven part
    assert whole == "error" and not _compiles(base) and not _compiles(head), (whole, window)


def test_a_reworded_comment_line_reads_no_tokens() -> None:
    body = [f"v{i} = f({i})" for i in range(2000)]
    base = "\n".join(["# a licence header", *body]) + "\n"
    head = "\n".join(["# a licence header, reworded", *body]) + "\n"
    old, new = lex_python_pair(base, head)
    assert (old.tokens, new.tokens) == ((), ())  # the rest of the file was not read
    assert [c.text for c in new.comments] == ["# a licence header, reworded"]
    assert comment_only_files("m.py", base, head)


@pytest.mark.parametrize(
    ("base", "head"),
    [
        pytest.param('s = """\n# a\n"""\n', 's = """\n# b\n"""\n', id="inside-a-string"),
        pytest.param("x = 1  # a\n", "x = 2  # a\n", id="code-before-the-hash"),
        pytest.param("x = 1\n# a\n", "x = 1\n# a\rx = 2\n", id="carriage-return"),
        pytest.param("# a\nx = 1\n", "# -*- coding: latin-1 -*-\nx = 1\n", id="coding-line"),
        pytest.param("x = 1  # a\n", "x = 1  # type: ignore\n", id="directive"),
    ],
)
def test_a_changed_line_that_is_not_only_a_comment_is_refused(base: str, head: str) -> None:
    assert not comment_only_files("m.py", base, head)

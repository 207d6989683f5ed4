"""Tree-sitter languages read around the change only: the same answer as reading both whole
files, on generated files whose edits open and close comments, strings and blocks, add line
breaks inside comments, and move code in and out of comments."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.classify.commentonly import comment_only_files
from capdaemon.classify.tokens import Lexed, LexError, lex, shared_chars
from capdaemon.classify.tswindow import lex_tree_sitter_pair

_C_LIKE = [
    "/* a */",
    "/*",
    "*/",
    "// b",
    "// c \\",
    "/* d\n e */",
    '"str // not a comment";',
    "'x';",
    "}",
    "{",
    "",
    "  ",
]
LINES: dict[str, list[str]] = {
    "c": [
        *_C_LIKE,
        "int a = 1;",
        "int f(void) { return 1; }",
        "int g(void) {",
        "  return 2;",
        "#define X 1 /* c */",
        "#if 0",
        "#endif",
        'char *s = "a" /* c */ "b";',
        "T * p;",
        "int h(void) { return (1); } /* c */",
        "int k(void) { /* c */ return 1; }",
    ],
    "javascript": [
        *_C_LIKE,
        "let a = 1",
        "function f(x) { return x }",
        "function g(x) {",
        "  return /* c */ x",
        "  return",
        "  x",
        "a++",
        "let t = `a ${1} // b`;",
        "let r = /re/g;",
        "-->",
    ],
    "go": [
        *_C_LIKE,
        "package p",
        "var a = 1",
        "func f(x int) int { return x }",
        "func g(x int) int {",
        "  return /* c */ x",
        "  return",
        "var s = `raw // x`",
    ],
    "java": [
        *_C_LIKE,
        "class A { int a = 1; }",
        "class B {",
        "  int f() { return 1; }",
        '  String s = "/* x */";',
    ],
    "rust": [
        *_C_LIKE,
        "fn f() -> i32 { 1 }",
        "/* nested /* inner */ still */",
        "const A: i32 = 1;",
        'static S: &str = r"// x";',
        "fn g() {",
        "/// doc",
        "//! inner doc",
        "/** block doc */",
        "fn h() { /* c */ 1 } // d",
    ],
    "typescript": [
        *_C_LIKE,
        "let a: number = 1",
        "function f(x: number) { return x }",
        "type T = { a: 1 }",
        "interface I {",
        "  a: number",
    ],
}
COMMENTS = ["// x", "/* y */", "/* z\n */", "/*", "*/", "", "// w"]


def _view(old: Lexed, new: Lexed) -> tuple[bool, Counter[str], Counter[str]]:
    before = Counter(c.text for c in old.comments)
    after = Counter(c.text for c in new.comments)
    return old.tokens == new.tokens, before - after, after - before


def _whole(language: str, base: str, head: str) -> object:
    try:
        return _view(lex(language, base), lex(language, head))
    except LexError:
        return "error"


def _window(language: str, base: str, head: str) -> object:
    try:
        return _view(*lex_tree_sitter_pair(language, base, head))
    except LexError:
        return "error"


@st.composite
def _edits(draw: st.DrawFn, language: str) -> tuple[str, str]:
    lines = draw(st.lists(st.sampled_from(LINES[language]), min_size=1, max_size=12))
    at = draw(st.integers(0, len(lines)))
    new = draw(st.sampled_from(COMMENTS + LINES[language]))
    how = draw(st.sampled_from(["insert", "replace", "delete"]))
    edited = list(lines)
    if how == "insert" or at == len(lines):
        edited.insert(at, new)
    elif how == "replace":
        edited[at] = new
    else:
        del edited[at]
    return "\n".join(lines) + "\n", "\n".join(edited) + "\n"


@pytest.mark.parametrize("language", sorted(LINES))
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_the_window_decides_as_the_whole_files_do(language: str, data: st.DataObject) -> None:
    base, head = data.draw(_edits(language))
    assert _window(language, base, head) == _whole(language, base, head)


@pytest.mark.parametrize(
    ("path", "base", "head"),
    [
        pytest.param(
            "a.go",
            "package p\n\nvar a = 1\n\n/* note */\n\nfunc f(x int) int { return x }\n",
            "package p\n\nvar a = 1\n\n/* note\n\nfunc f(x int) int { return x }\n",
            id="go-comment-opened-over-later-code",
        ),
        pytest.param(
            "a.js",
            "let a = 1\n// note\nfunction f(x) { return x }\nlet b = 2\n",
            "let a = 1\n/* note\nfunction f(x) { return x }\n*/\nlet b = 2\n",
            id="js-comment-around-an-unchanged-function",
        ),
        pytest.param(
            "a.c",
            'int a = 1;\n// note\nchar *s = "x";\nint b = 2;\n',
            'int a = 1;\n// note\nchar *s = "x" /* c */ "y";\nint b = 2;\n',
            id="c-code-next-to-a-comment",
        ),
    ],
)
def test_changes_reaching_unchanged_code_are_not_comment_only(
    path: str, base: str, head: str
) -> None:
    assert not comment_only_files(path, base, head)


# ---------------------------------------------------------------- one comment swapped
_INSIDE = ["x", " ", "\n", "*/", "/*", "\\", "\\\n", "*", "/", '"', "`", "-->", "\u2028", "é"]


@st.composite
def _comment_interior_edits(draw: st.DrawFn, language: str) -> tuple[str, str]:
    """A file with a comment in it, and the same file with text put into, taken out of or
    replaced in that comment's interior (which may end it early, or reach code)."""
    lines = draw(st.lists(st.sampled_from(LINES[language]), min_size=0, max_size=10))
    comment = draw(st.sampled_from(["// note here", "/* note\n here */", "/* a */", "//"]))
    at = draw(st.integers(0, len(lines)))
    before, after = "\n".join(lines[:at]), "\n".join(lines[at:])
    cut = draw(st.integers(2, len(comment)))
    gone = draw(st.integers(0, len(comment) - cut))
    put = "".join(draw(st.lists(st.sampled_from(_INSIDE), max_size=3)))
    edited = comment[:cut] + put + comment[cut + gone :]
    return (
        f"{before}\n{comment}\n{after}\n",
        f"{before}\n{edited}\n{after}\n",
    )


@pytest.mark.parametrize("language", sorted(LINES))
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_a_comment_swapped_alone_decides_as_the_whole_files_do(
    language: str, data: st.DataObject
) -> None:
    base, head = data.draw(_comment_interior_edits(language))
    assert _window(language, base, head) == _whole(language, base, head)


@pytest.mark.parametrize(
    ("language", "base", "head"),
    [
        ("c", "int a;\n// note\nint b(void) { return 1; }\n", "int a;\n// note, reworded\n"
         "int b(void) { return 1; }\n"),
        ("go", "package p\n\n/* note */\nvar a = 1\n", "package p\n\n/* a longer note */\n"
         "var a = 1\n"),
        ("javascript", "let a = 1\nfunction f(x) {\n  // old\n  return x\n}\n",
         "let a = 1\nfunction f(x) {\n  // new\n  return x\n}\n"),
    ],
)  # fmt: skip
def test_a_reworded_comment_is_read_as_one_leaf_swapped(
    language: str, base: str, head: str
) -> None:
    old, new = lex_tree_sitter_pair(language, base, head)
    assert (old.tokens, new.tokens) == ((), ())  # the quick reading: no token was read
    assert [c.text for c in old.comments] != [c.text for c in new.comments]
    assert _view(old, new) == _whole(language, base, head)


@pytest.mark.parametrize(
    ("path", "base", "head"),
    [
        pytest.param(
            "a.c",
            "int a;\n/* note */\nint b;\nint c;\n",
            "int a;\n/* note */ int x; /* */\nint b;\nint c;\n",
            id="c-code-put-between-two-comments",
        ),
        pytest.param(
            "a.c",
            "int a;\n// note\nint b;\n",
            "int a;\n// note \\\nint b;\n",
            id="c-comment-continued-over-the-next-line",
        ),
        pytest.param(
            "a.js",
            "function f(x) {\n  return /* a */ x\n}\n",
            "function f(x) {\n  return /* a\n */ x\n}\n",
            id="js-line-break-put-into-a-comment",
        ),
        pytest.param(
            "a.go",
            "package p\n\n/* note */\nvar a = 1\n",
            "package p\n\n/* note */ var b = 2 /* */\nvar a = 1\n",
            id="go-code-between-comment-delimiters",
        ),
        pytest.param(
            "a.rs",
            "/* outer /* inner */ still */\nfn f() -> i32 { 1 }\n",
            "/* outer /* inner */ still */ */\nfn f() -> i32 { 1 }\n",
            id="rust-nested-comment-closed-early",
        ),
    ],
)
def test_an_edit_inside_a_comment_that_reaches_code_is_refused(
    path: str, base: str, head: str
) -> None:
    assert not comment_only_files(path, base, head)


@settings(max_examples=500, deadline=None)
@given(old=st.binary(max_size=40), new=st.binary(max_size=40))
def test_shared_chars_is_the_longest_shared_start_then_end(old: bytes, new: bytes) -> None:
    head, tail = shared_chars(old, new)
    most = min(len(old), len(new))
    naive = 0
    while naive < most and old[naive] == new[naive]:
        naive += 1
    assert head == naive
    assert head + tail <= most
    assert old[len(old) - tail :] == new[len(new) - tail :]
    assert tail == most - head or old[len(old) - tail - 1] != new[len(new) - tail - 1]

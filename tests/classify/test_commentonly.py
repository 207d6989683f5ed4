"""The whole-file comment-only carve-out: bad input fails closed naming the reason; tools'
directives and the languages' lexing traps are refused; any text never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.classify.axes import classify_file
from capdaemon.classify.commentonly import comment_only_files
from capdaemon.classify.compiled import compile_classifier
from capdaemon.classify.tokens import MAX_LEX_CHARS
from capdaemon.config import ClassifierConfig
from capdaemon.model import FileChange, FileStatus

from .classify_builders import make_patch

REFUSED = [
    pytest.param(
        "a.c",
        "int f(void) { return 1; }\n// a\n",
        "int f(void) { return ; }}\n// b\n",
        "grammar does not accept",
        id="c-syntax-error",
    ),
    pytest.param(
        "a.py", "x = 1\n# a\n", "x = '''\n# b\n", "tokenizer", id="py-unterminated-string"
    ),
    pytest.param(
        "a.py", "x = 1\n# a\n", "x = 1\n# b \ufffd\n", "not valid UTF-8", id="py-bad-utf8"
    ),
    pytest.param(
        "a.py", "x = 1\n# a\n", "x = 1\n# type: ignore\n", "directive", id="py-type-comment"
    ),
    pytest.param("a.py", "x = 1\n", "#!/usr/bin/env python2\nx = 1\n", "shebang", id="py-shebang"),
    pytest.param(
        "a.py",
        "# -*- coding: utf-8 -*-\nx = 1\n",
        "# -*- coding: latin-1 -*-\nx = 1\n",
        "coding declaration",
        id="py-emacs-cookie",
    ),
    pytest.param(
        "a.go",
        "package p\n// a\nfunc f() {}\n",
        "package p\n//go:noinline\nfunc f() {}\n",
        "directive",
        id="go-directive",
    ),
    pytest.param(
        "a.go",
        'package p\n// #include <a.h>\nimport "C"\n',
        'package p\n// #include <b.h>\nimport "C"\n',
        "",
        id="go-cgo-preamble",
    ),
    pytest.param(
        "a.ts", "let x = 1; // a\n", "let x = 1; // @ts-ignore\n", "directive", id="ts-pragma"
    ),
    pytest.param(
        "a.go",
        "package p\n\nfunc f(x int) int { return /* a */ x }\n",
        "package p\n\nfunc f(x int) int { return /* a\n */ x }\n",
        "line break",
        id="go-line-break-in-a-comment-inserts-a-semicolon",
    ),
    pytest.param(
        "a.tsx",
        "function f(x) { return /* a */ x }\n",
        "function f(x) { return /* a\n */ x }\n",
        "line break",
        id="tsx-line-break-in-a-comment-after-return",
    ),
    pytest.param("a.c", "int x; /* a */\n", "int x; /* a ??/\n*/\n", "trigraph", id="c-trigraph"),
    pytest.param(
        "a.html",
        "<p>a</p><!-- a -->",
        "<p>a</p><!--[if IE]><script>x()</script><![endif]-->",
        "conditional",
        id="html-conditional-comment",
    ),
    pytest.param("a.js", "f();\n", "f();  \n", "whitespace or layout", id="js-layout-only"),
    pytest.param(
        "a.rs",
        "fn f() {}\n// a\n",
        "fn f() {}\n/// ```\n/// panic!();\n/// ```\n",
        "directive",
        id="rust-doc-test",
    ),
    pytest.param(
        "a.go",
        "package p\n// a\nfunc f() {}\n",
        "package p\n// Output: 3\nfunc f() {}\n",
        "directive",
        id="go-example-output",
    ),
    pytest.param("a.jsx", "f();\n// a\n", "f();\n/** @jsx h */\n", "directive", id="jsx-pragma"),
    pytest.param("a.md", "# a\n<!-- a -->\n", "# a\n<!-- b -->\n", "no exact tokenizer", id="md"),
    pytest.param("a.yml", "# a\nk: v\n", "# b\nk: v\n", "no exact tokenizer", id="yaml"),
]


@pytest.mark.parametrize(("path", "base", "head", "why"), REFUSED)
def test_refused_with_a_named_reason(path: str, base: str, head: str, why: str) -> None:
    """Each refusal is a plain no with a reason a person can act on."""
    carve = comment_only_files(path, base, head)
    assert not carve
    assert why in carve.why, carve.why


def test_a_file_over_the_tokenizer_budget_fails_closed() -> None:
    """A file over the size budget gets no carve-out, and the verdict says so."""
    big = "x = 1\n" * (MAX_LEX_CHARS // 6 + 1)
    carve = comment_only_files("a.py", big + "# a\n", big + "# b\n")
    assert not carve and "over the tokenizer budget" in carve.why


def test_the_verdict_names_the_refusal_and_what_passes() -> None:
    """Through the classifier: critical, the tokenizer's reason and what would have passed."""
    base, head = "x = '''\n# a\n", "x = '''\n# b\n"
    fc = FileChange(
        path="app/m.py",
        status=FileStatus.MODIFIED,
        patch=make_patch(base.splitlines(), head.splitlines()),
        base_content=base,
        head_content=head,
    )
    v = classify_file(fc, compile_classifier(ClassifierConfig()))
    assert v.critical
    text = " ".join(v.reasons)
    assert "tokenizer" in text and "what passes: files under docs/guide/" in text
    assert "prose in a document is not a comment" in text


_LANG_PATHS = ["a.py", "a.c", "a.cpp", "a.java", "a.js", "a.ts", "a.tsx", "a.go", "a.rs", "a.html"]


@given(
    path=st.sampled_from(_LANG_PATHS),
    base=st.text(max_size=200),
    head=st.text(max_size=200),
)
@settings(max_examples=300, deadline=None)
def test_any_text_gives_an_answer_never_an_exception(path: str, base: str, head: str) -> None:
    """Arbitrary base and head texts in every language: a yes or a reasoned no, no crash."""
    carve = comment_only_files(path, base, head)
    assert carve.ok or carve.why


@given(
    path=st.sampled_from(_LANG_PATHS),
    code=st.text(alphabet="abc(){}[];=+-*/\"'\\<>!# \n", max_size=80),
)
@settings(max_examples=200, deadline=None)
def test_a_file_against_itself_plus_code_is_never_comment_only(path: str, code: str) -> None:
    """Appending a code statement to a file is never comment-only, whatever came before."""
    stmt = {"a.py": "\nzz = 1\n", "a.html": "\n<p>zz</p>\n"}.get(path, "\nint zz = 1;\n")
    if path == "a.html" and "<" in code:
        return  # an unclosed `<!--` or raw-text element really does swallow the rest (HTML5)
    carve = comment_only_files(path, code, code + stmt)
    assert not carve.ok

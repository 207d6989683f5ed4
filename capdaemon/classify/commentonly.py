"""The comment-only carve-out, proven on whole files with the language's own tokenizer.

The base and head files are tokenized whole; with comments removed their token streams must
be identical, and no changed comment may be one its language (or its tools) reads as code:
coding declarations, shebangs, directives, a `\\` line continuation inside a `//` comment,
a `\\u` escape inside a Java comment, an HTML comment closed the way HTML5 allows (`--!>`),
IE conditional comments, any comment of a Go file that imports "C" (cgo compiles its preamble).
In C and C++ the edit must also keep every code token on its line (`__LINE__`, `assert`).
Anything the tokenizer cannot read fails closed.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter

from capdaemon.classify.carveouts import Carve
from capdaemon.classify.cgo import imports_c
from capdaemon.classify.htmlwindow import lex_html_pair
from capdaemon.classify.pywindow import lex_python_pair
from capdaemon.classify.tokens import (
    LINE_BREAK,
    TREE_SITTER_LANGUAGES,
    Comment,
    Lexed,
    LexError,
    lex,
)
from capdaemon.classify.tswindow import lex_tree_sitter_pair
from capdaemon.languages import HTML, PYTHON, language_of

WHAT_PASSES = (
    "comment-only edits (code tokens of the whole file unchanged) in Python, C, C++, Java, "
    "JavaScript, TypeScript, Go, Rust and HTML files"
)

# PEP 263: the coding declaration, in any spelling the interpreter accepts.
_PEP263 = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
# Comments that tools read as instructions (compared on changed comments only).
_DIRECTIVE = re.compile(
    r"^(?:#!|#\s*(?:type|mypy|pyright|pyre|cython)\s*:|#\s*(?:noqa|pragma|pylint|fmt|isort)\b|"
    r"//\s*go:|//\s*\+build|//\s*line\b|//export\b|//\s*@ts-|///\s*<reference|//\s*#|"
    r"/\*+\s*@(?:ts|jsx|flow|cc_on|license|preserve)|//\s*@(?:flow|jsx|cc_on|sourceMappingURL)|"
    r"//#\s*source|/\*+\s*eslint|//\s*eslint|//\s*NOLINT|/\*+\s*webpack|/\*+\s*[#@]__)",
    re.IGNORECASE,
)
# ... and per language: Rust doc comments (doc tests compile and run), Go example output
_LANGUAGE_DIRECTIVE: dict[str, re.Pattern[str]] = {
    "rust": re.compile(r"^(?:///|//!|/\*\*(?!/)|/\*!)"),
    "go": re.compile(r"^//\s*(?:unordered )?output:", re.IGNORECASE),
}
_JAVA_UNICODE = re.compile(r"\\+u", re.ASCII)
_BACKSLASH_EOL = re.compile(r"\\[ \t\f\v]*(?:\r?\n|\r|$)")
_C_SPLICE = re.compile(r"[/*]\\[ \t\f\v]*\r?\n|\\[ \t\f\v]*\r?\n[/*]")
_NON_UTF8_CHARSET = re.compile(r"charset\s*=\s*[\"']?\s*(?!utf-?8\b)[\w-]", re.IGNORECASE)
_LONE_CR = re.compile(r"\r(?!\n)")
_NOSCRIPT = re.compile(r"<noscript", re.IGNORECASE)
# Languages whose preprocessor compiles line numbers into the program (`__LINE__`, assert).
LINE_NUMBER_LANGUAGES = frozenset({"c", "cpp"})
_C_FAMILY = frozenset({"c", "cpp", "java", "javascript", "typescript", "tsx", "go", "rust"})


def comment_only_files(path: str, base: str | None, head: str | None) -> Carve:
    """Whether the change from `base` to `head` of one file touches comments only."""
    language = language_of(path)
    if language is None:
        return Carve(False, "no exact tokenizer for this file type: comments cannot be proven")
    if base is None or head is None:
        return Carve(False, "whole file unavailable, comments cannot be told from code")
    if base == head:
        return Carve(False, "no textual change to inspect")
    try:
        old, new = _lex_both(language, base, head)
    except LexError as exc:
        return Carve(False, f"{language} tokenizer: {exc}")
    why = (
        _code_difference(old, new)
        or _trap(language, base, head, old, new)
        or _lines_moved(language, base, head, old, new)
    )
    if why:
        return Carve(False, why)
    return Carve(True, f"comments only ({language} tokens identical)")


def _lex_both(language: str, base: str, head: str) -> tuple[Lexed, Lexed]:
    """Both sides' tokens; for Python, the tree-sitter languages and HTML only the parts
    around the change (`pywindow`, `tswindow`, `htmlwindow` prove the tokens outside them
    equal, and their comments cancel out in `_changed`)."""
    if language == PYTHON:
        return lex_python_pair(base, head)
    if language in TREE_SITTER_LANGUAGES:
        return lex_tree_sitter_pair(language, base, head)
    if language == HTML:
        return lex_html_pair(base, head)
    return lex(language, base), lex(language, head)


def _code_difference(old: Lexed, new: Lexed) -> str:
    if old.tokens == new.tokens:
        return ""
    i = 0
    while i < min(len(old.tokens), len(new.tokens)) and old.tokens[i] == new.tokens[i]:
        i += 1
    kinds = {t[i][0] for t in (old.tokens, new.tokens) if i < len(t)}
    if LINE_BREAK in kinds:
        return (
            f"{_at(new.lines, i) or _at(old.lines, i)}a line break between code tokens came or "
            "went (Go and JavaScript end statements there, and at a comment holding one): "
            "not comment-only"
        )
    if len(new.tokens) < len(old.tokens) and _is_subsequence(new.tokens, old.tokens):
        return (
            f"{_at(old.lines, i)}code {_short(old.tokens[i][1])} of the base file is gone from "
            "the token stream (a comment delimiter now encloses code that ran): not comment-only"
        )
    if i < len(new.tokens):
        return f"{_at(new.lines, i)}code changed at {_short(new.tokens[i][1])}: not comment-only"
    return f"{_at(old.lines, i)}code {_short(old.tokens[i][1])} removed: not comment-only"


def _lines_moved(language: str, base: str, head: str, old: Lexed, new: Lexed) -> str:
    """In C and C++, why the edit moves code to other lines ("" when every code token keeps
    its line): `__LINE__` and `assert` messages are compiled from line numbers."""
    if language not in LINE_NUMBER_LANGUAGES:
        return ""
    pairs = zip(old.lines, new.lines, strict=False)
    moved = next((i for i, (a, b) in enumerate(pairs) if a != b), None)
    if (
        moved is None
        and len(old.lines) == len(new.lines)
        and (old.tokens or base.count("\n") == head.count("\n") or _last_thing(head, new))
    ):
        return ""
    where = f"line {old.lines[moved]}: " if moved is not None else ""
    return (
        f"{where}the comment edit adds or removes lines, so code after it moves to other "
        "lines (__LINE__ and assert messages compile line numbers in): not comment-only"
    )


def _last_thing(head: str, new: Lexed) -> bool:
    """Whether a file read as one swapped comment (no tokens: `tswindow`) has nothing but
    space after that comment, so a line it gains or loses moves no code."""
    if len(new.comments) != 1:
        return False
    c = new.comments[0]
    start = 0
    for _ in range(c.line - 1):
        start = head.find("\n", start) + 1
        if not start:
            return False
    at = head.find(c.text, start)
    return at >= 0 and not head[at + len(c.text) :].strip()


def _at(lines: tuple[int, ...], i: int) -> str:
    return f"line {lines[i]}: " if i < len(lines) and lines[i] else ""


def _is_subsequence(small: tuple[tuple[str, str], ...], big: tuple[tuple[str, str], ...]) -> bool:
    it = iter(big)
    return all(tok in it for tok in small)


def _short(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _changed(old: Lexed, new: Lexed) -> list[Comment]:
    """Comments present on one side and not (as often) on the other."""
    before = Counter(c.text for c in old.comments)
    after = Counter(c.text for c in new.comments)
    gone = before - after
    came = after - before
    out = [c for c in new.comments if came[c.text] > 0]
    out += [c for c in old.comments if gone[c.text] > 0]
    return out


def _trap(language: str, base: str, head: str, old: Lexed, new: Lexed) -> str:
    """Why a comment change is one the language or its tools read as code ("" when none)."""
    if language == PYTHON:
        why = _python_header(base, head)
        if why:
            return why
    changed = _changed(old, new)
    for c in changed:
        why = _comment_trap(language, c)
        if why:
            return why
    why = _file_trap(language, base, head)
    if why:
        return why
    if not changed:
        return "no comment changed (whitespace or layout only): not comment-only"
    return ""


def _python_header(base: str, head: str) -> str:
    """PEP 263 and shebang: the first two lines' comments can be instructions."""
    b = base.splitlines()[:2]
    h = head.splitlines()[:2]
    if b == h:
        return ""
    for side in (b, h):
        for n, text in enumerate(side, 1):
            if _PEP263.match(text) or "coding" in text.casefold():
                return (
                    f"line {n}: a coding declaration (PEP 263, any spelling) in the first two "
                    "lines changed or moved: that is code"
                )
    if any(side[:1] and side[0].startswith("#!") for side in (b, h)):
        return "line 1: the shebang changed: that is code"
    return ""


def _file_trap(language: str, base: str, head: str) -> str:
    """Whole-file conditions under which comments cannot be told from code exactly."""
    if language == HTML:
        return _html_file_trap(base, head)
    why = _text_trap(language, base) or _text_trap(language, head)
    if why:
        return why
    if language == PYTHON and not (_utf8_python(base) and _utf8_python(head)):
        return (
            "a Python file declaring an encoding other than UTF-8 (PEP 263): its comments "
            "cannot be read as the interpreter decodes them"
        )
    if language == "go" and (imports_c(base) or imports_c(head)):
        return 'a Go file that imports "C": cgo compiles its preamble comment as C code'
    return ""


def _text_trap(language: str, text: str) -> str:
    """`_file_trap`'s conditions on one file of a language other than HTML."""
    if "\r" in text and _LONE_CR.search(text):
        return (
            "a carriage return not followed by a line feed: compilers and interpreters end "
            "lines there, so a comment may end early"
        )
    if language == "java" and _JAVA_UNICODE.search(text):
        return "a Java file with \\u escapes (Java translates them before lexing)"
    if language in ("c", "cpp") and (_C_SPLICE.search(text) or "??/" in text):
        return "a line splice next to '/' or '*', or a '??/' trigraph, in a C file"
    return ""


def _html_file_trap(base: str, head: str) -> str:
    """Whole-file conditions under which an HTML comment cannot be told from text or code."""
    for text in (base, head):
        if _NON_UTF8_CHARSET.search(text):
            return "an HTML file declaring a charset other than UTF-8: comments cannot be located"
        if _NOSCRIPT.search(text):
            return (
                "an HTML file with <noscript>: browsers running scripts read its content as "
                "text (a script can run it), html5lib as markup with comments"
            )
    return ""


def _utf8_python(text: str) -> bool:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8")).readline)
    except SyntaxError:
        return False
    return encoding in ("utf-8", "utf-8-sig")


def _comment_trap(language: str, c: Comment) -> str:
    at = f"line {c.line}: " if c.line else ""
    text = c.text
    rx = _LANGUAGE_DIRECTIVE.get(language)
    if (
        _DIRECTIVE.match(text.lstrip())
        or (rx is not None and rx.match(text.lstrip()))
        or (language == PYTHON and _PEP263.match(text))
    ):
        return f"{at}comment {_short(text)} is a directive tools read: that is code"
    if language in _C_FAMILY and _BACKSLASH_EOL.search(text):
        return f"{at}a comment line ends in '\\' (a line continuation can swallow the next line)"
    if language in ("c", "cpp") and "??/" in text:
        return f"{at}a comment holds the trigraph '??/' (a line continuation in C)"
    if language == "java" and _JAVA_UNICODE.search(text):
        return f"{at}a Java comment holds a \\u escape (Java translates it before lexing)"
    return _html_trap(text) if language == HTML else ""


def _html_trap(text: str) -> str:
    if "--!" in text or "--" in text.strip("-") or text.startswith((">", "->")):
        return "an HTML comment with '--!', '--' or a '>' opening (HTML5 ends comments there)"
    if text.lstrip().startswith(("[if", "[endif", "<![endif")) or "<!" in text:
        return "an HTML conditional or nested comment (browsers may read it as markup)"
    return ""

"""Exact tokenizers per language: a file's code tokens with its comments set apart.

Python goes through the standard library's `tokenize`; C, C++, Java, JavaScript, TypeScript,
Go and Rust through the tree-sitter grammars their authors publish; HTML through html5lib's
HTML5 parser (the DOM a browser builds, comments apart). Any other language has no exact
tokenizer here, and `lex` says so. Every failure is a `LexError` naming the reason; callers
fail closed on it.
"""

from __future__ import annotations

import functools
import io
import re
import tokenize
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, AnyStr

import html5lib
import tree_sitter
import tree_sitter_c
import tree_sitter_cpp
import tree_sitter_go
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_rust
import tree_sitter_typescript

from capdaemon.languages import HTML, PYTHON

MAX_LEX_CHARS = 1_000_000  # per side; a larger file gets no comment carve-out

_GRAMMARS: dict[str, Callable[[], object]] = {
    "c": tree_sitter_c.language,
    "cpp": tree_sitter_cpp.language,
    "java": tree_sitter_java.language,
    "javascript": tree_sitter_javascript.language,
    "typescript": tree_sitter_typescript.language_typescript,
    "tsx": tree_sitter_typescript.language_tsx,
    "go": tree_sitter_go.language,
    "rust": tree_sitter_rust.language,
}
TREE_SITTER_LANGUAGES = frozenset(_GRAMMARS)
# Node types that are comments in each grammar (anything else is code, `html_comment` too).
COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
# Parents whose children's gaps are literal text (string bodies), not insignificant space.
_HTML_VERBATIM = frozenset({"pre", "textarea", "listing", "script", "style", "plaintext", "xmp"})
# Languages where a line break between two tokens can change the code: Go and JavaScript
# insert semicolons there (and a comment holding a line break counts as one), so whether
# code tokens are on one line is part of the stream.
LINE_BREAK_LANGUAGES = frozenset({"go", "javascript", "typescript", "tsx"})
LINE_BREAK = "line-break"  # the token kind marking a line break between code tokens
LINE_END = re.compile("[\n\r\u2028\u2029]")
_LITERAL_PARENT = re.compile(r"string|char|template|raw|heredoc|literal|rune", re.IGNORECASE)


class LexError(ValueError):
    """A file the exact tokenizer could not read (the carve-out then does not apply)."""


class OpenAtEnd(LexError):
    """Python text that ends inside a bracket, a string or a `\\` continuation."""


@dataclass(frozen=True, slots=True)
class Comment:
    """One comment: its text and the 1-based line it starts on."""

    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Lexed:
    """A file as its language reads it: code tokens (with the line of each) and comments."""

    language: str
    tokens: tuple[tuple[str, str], ...]
    lines: tuple[int, ...]
    comments: tuple[Comment, ...]


def shared_lines(old: Sequence[Any], new: Sequence[Any]) -> tuple[int, int]:
    """How many lines two files (as lists of lines) share at the start, and then at the end
    (the two runs never overlap)."""
    most = min(len(old), len(new))
    head = 0
    while head < most and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < most - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return head, tail


def shared_chars(old: AnyStr, new: AnyStr) -> tuple[int, int]:
    """How many characters (or bytes) two texts share at the start, and then at the end (the
    two runs never overlap); found by halving, each step one comparison of slices."""
    most = min(len(old), len(new))
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[:mid] == new[:mid]:
            lo = mid
        else:
            hi = mid - 1
    head = lo
    lo, hi = 0, most - head
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid :] == new[len(new) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return head, lo


def check_text(text: str) -> None:
    """Raise LexError for a file no tokenizer here reads: over the budget, or not UTF-8."""
    if len(text) > MAX_LEX_CHARS:
        raise LexError(f"{len(text)} characters, over the tokenizer budget of {MAX_LEX_CHARS}")
    if "\ufffd" in text or "\x00" in text:
        raise LexError("the file is not valid UTF-8 text")


def lex(language: str, text: str) -> Lexed:
    """Tokenize a whole file; raises LexError when it cannot be read exactly."""
    check_text(text)
    if language == PYTHON:
        return _lex_python(text)
    if language == HTML:
        return _lex_html(text)
    if language in _GRAMMARS:
        return _lex_tree_sitter(language, text)
    raise LexError(f"no exact tokenizer for {language}")


# ----------------------------------------------------------------------------- python
_SKIP_PY = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.ENCODING})


def lex_python(text: str, first_line: int = 1) -> Lexed:
    """Tokenize Python text that starts at line `first_line` of its file, with the tokenizer
    at rest there (see `pywindow`); the caller has checked the whole file (`check_text`).
    Raises OpenAtEnd when the text ends with the tokenizer not at rest."""
    return _lex_python(text, first_line - 1)


def _lex_python(text: str, offset: int = 0) -> Lexed:
    tokens: list[tuple[str, str]] = []
    lines: list[int] = []
    comments: list[Comment] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments.append(Comment(tok.string, tok.start[0] + offset))
            elif tok.type == tokenize.ERRORTOKEN and not tok.string.isspace():
                line = tok.start[0] + offset
                raise LexError(f"line {line}: Python's tokenizer rejects {tok.string!r}")
            elif tok.type not in _SKIP_PY:
                tokens.append((tokenize.tok_name[tok.type], tok.string))
                lines.append(tok.start[0] + offset)
    except tokenize.TokenError as exc:
        raise OpenAtEnd(f"Python's tokenizer failed: {exc}") from None
    except (IndentationError, SyntaxError) as exc:
        raise LexError(f"Python's tokenizer failed: {exc}") from None
    return Lexed(PYTHON, tuple(tokens), tuple(lines), tuple(comments))


# ----------------------------------------------------------------------------- tree-sitter
@functools.lru_cache(maxsize=16)
def _parser(language: str) -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(_GRAMMARS[language]()))


def parse_tree(language: str, text: str) -> tree_sitter.Tree:
    """The tree-sitter tree of a file; raises LexError when the grammar does not accept it."""
    return parse_bytes(language, text.encode("utf-8"))


def parse_bytes(
    language: str, data: bytes, old: tree_sitter.Tree | None = None
) -> tree_sitter.Tree:
    """`parse_tree` of UTF-8 bytes, reusing an edited earlier tree when given."""
    parser = _parser(language)
    tree = parser.parse(data) if old is None else parser.parse(data, old)
    if tree.root_node.has_error:
        node = _first_error(tree.root_node)
        line = node.start_point[0] + 1 if node is not None else 0
        raise LexError(f"line {line}: the {language} grammar does not accept the file")
    return tree


def _first_error(node: tree_sitter.Node) -> tree_sitter.Node | None:
    if node.is_error or node.is_missing:
        return node
    for child in node.children:
        if child.has_error or child.is_missing:
            return _first_error(child)
    return None


def _leaves(
    root: tree_sitter.Node, shared: Callable[[tree_sitter.Node], Shared | None] | None = None
) -> Iterator[tuple[tree_sitter.Node, Shared | None]]:
    """The leaves (comments whole) under a node, in order; with `shared`, a subtree it
    returns a `Shared` for is yielded as its first leaf with that, instead of its leaves
    (each leaf comes with None)."""
    cursor = root.walk()
    comment_types = COMMENT_TYPES
    while True:
        node = cursor.node
        if node is not None and (node.child_count == 0 or node.type in comment_types):
            yield node, None
        elif node is not None and shared is not None and (same := shared(node)) is not None:
            yield same.first, same
        elif cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


@functools.lru_cache(maxsize=4096)
def _literal_type(node_type: str) -> bool:
    """Whether a leaf of this type can border literal text (quotes, string bodies)."""
    return bool(_LITERAL_PARENT.search(node_type)) or not node_type.strip("\"'`")


_BYTES_SPACE = " \t\n\r\x0b\x0c"  # what bytes.strip() strips: the gap test of every file


def _no_line_end(_text: str) -> None:
    """Where line breaks do not matter: never one."""


SHARED = "shared subtree"  # the token kind standing for a subtree both files have


@dataclass(frozen=True, slots=True)
class Shared:
    """A subtree that base and head have in common (the same tree-sitter subtree over the
    same text), with its first and last leaves, both code tokens. Read as its first leaf
    (what it yields depends on what came before) and then one token naming the subtree:
    after the first code token the tokens depend on the subtree alone, and after the last
    one the reading state is fixed by it (position, last token kind, no pending break)."""

    node: tree_sitter.Node
    first: tree_sitter.Node
    last: tree_sitter.Node


@dataclass(slots=True)
class LeafWalk:
    """Reading a tree-sitter tree's leaves in order into code tokens and comments: the
    text between two leaves is dropped when it is space (kept next to literals, where it
    may be part of one), and in Go and JavaScript a line break between code tokens is a
    token of its own. Its state (`pos`, `prev_literal`, `broke`, `seen`) is what carries
    from one leaf to the next."""

    text: str
    breaks: bool
    ascii_only: bool
    data: bytes
    tokens: list[tuple[str, str]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    pos: int = 0  # byte offset where the last leaf ended
    prev_literal: bool = False  # the last leaf can border literal text
    broke: bool = False  # a line ended since the last code token (in space or in a comment)
    seen: bool = False  # a code token was read

    @classmethod
    def of(cls, language: str, text: str) -> LeafWalk:
        """A walk from the start of a file."""
        # tree-sitter reports byte offsets; in ASCII text they are character offsets too,
        # so slices of the text itself stand for the decoded bytes (no per-token decoding)
        ascii_only = text.isascii()
        data = b"" if ascii_only else text.encode("utf-8")
        return cls(text, language in LINE_BREAK_LANGUAGES, ascii_only, data)

    def _slice(self, start: int, end: int | None) -> str:
        if self.ascii_only:
            return self.text[start:end]
        return self.data[start:end].decode("utf-8", "replace")

    def read(self, leaves: Iterable[tuple[tree_sitter.Node, Shared | None]]) -> None:
        """Read leaves in order; a `Shared` subtree is read as its first leaf and then one
        token naming the subtree (see `Shared`)."""
        text, data, ascii_only = self.text, self.data, self.ascii_only
        tokens, lines, literal_type = self.tokens, self.lines, _literal_type
        line_end = LINE_END.search if self.breaks else _no_line_end
        pos, prev_literal, broke, seen = self.pos, self.prev_literal, self.broke, self.seen
        for node, shared in leaves:
            start = node.start_byte
            end = node.end_byte
            kind = node.type
            line = node.start_point.row + 1
            literal = literal_type(kind)
            if start > pos:
                gap = text[pos:start] if ascii_only else data[pos:start].decode("utf-8", "replace")
                # text between two leaves: whitespace is insignificant, except where it may
                # be part of a literal (next to a quote or a string body: kept exactly)
                if (prev_literal and literal) or gap.strip(_BYTES_SPACE):
                    tokens.append(("gap", gap))
                    lines.append(line)
                if line_end(gap):
                    broke = True
            body = text[start:end] if ascii_only else data[start:end].decode("utf-8", "replace")
            pos = end
            if kind in COMMENT_TYPES:
                self.comments.append(Comment(body, line))
                prev_literal = False
                if line_end(body):
                    broke = True
                continue
            if broke and seen:  # a line break before the first code token is layout
                tokens.append((LINE_BREAK, ""))
                lines.append(line)
            broke = False
            seen = True
            tokens.append((kind, body))
            lines.append(line)
            prev_literal = literal
            if shared is not None:
                tokens.append((SHARED, str(shared.node.id)))
                lines.append(line)
                pos = shared.node.end_byte
                prev_literal = literal_type(shared.last.type)
        self.pos, self.prev_literal, self.broke, self.seen = pos, prev_literal, broke, seen

    def finish(self, language: str) -> Lexed:
        """The tokens read, once the whole file has been (text after the last leaf fails)."""
        if self._slice(self.pos, None).strip(_BYTES_SPACE):
            raise LexError("text after the end of the parsed file")
        return Lexed(language, tuple(self.tokens), tuple(self.lines), tuple(self.comments))


def read_tree(
    language: str,
    text: str,
    tree: tree_sitter.Tree,
    shared: Callable[[tree_sitter.Node], Shared | None] | None = None,
) -> Lexed:
    """The tokens and comments of a parsed file (subtrees `shared` picks read as `Shared`)."""
    walk = LeafWalk.of(language, text)
    walk.read(_leaves(tree.root_node, shared))
    return walk.finish(language)


def _lex_tree_sitter(language: str, text: str) -> Lexed:
    return read_tree(language, text, parse_tree(language, text))


# ----------------------------------------------------------------------------- html
def _lex_html(source: str) -> Lexed:
    """The DOM html5lib builds (as browsers do), serialised as tokens, comments apart."""
    parser = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("dom"))
    try:
        doc = parser.parse(source)
    except Exception as exc:  # html5lib is lenient; anything raised is unexpected
        raise LexError(f"the HTML5 parser failed ({type(exc).__name__})") from None
    tokens: list[tuple[str, str]] = []
    comments: list[Comment] = []
    open_tags: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        run = "".join(pending)
        pending.clear()
        if run and (run.strip() or any(t in _HTML_VERBATIM for t in open_tags)):
            tokens.append(("Characters", run))
        elif run:
            tokens.append(("Space", ""))  # whitespace between elements: its amount is layout

    for tok in html5lib.getTreeWalker("dom")(doc):
        kind = tok["type"]
        if kind == "Comment":
            comments.append(Comment(str(tok["data"]), 0))
            continue
        if kind in ("Characters", "SpaceCharacters"):
            pending.append(str(tok["data"]))
            continue
        flush()
        if kind == "StartTag":
            open_tags.append(str(tok["name"]))
        elif kind == "EndTag" and open_tags:
            open_tags.pop()
        tokens.append((kind, _html_token_text(tok)))
    flush()
    errors = tuple(str(e[1]) for e in parser.errors)
    tokens.append(("parse-errors", ",".join(sorted(set(errors)))))
    return Lexed(HTML, tuple(tokens), tuple(0 for _ in tokens), tuple(comments))


def _html_token_text(tok: dict[str, Any]) -> str:
    if tok["type"] in ("StartTag", "EmptyTag"):
        attrs = sorted((str(k), str(v)) for k, v in tok["data"].items())
        return f"{tok.get('namespace')}|{tok['name']}|{attrs!r}"
    if tok["type"] == "EndTag":
        return f"{tok.get('namespace')}|{tok['name']}"
    if tok["type"] == "Doctype":
        return f"{tok.get('name')}|{tok.get('publicId')}|{tok.get('systemId')}"
    return str(tok.get("data", ""))

"""HTML comment edits proven from the base file's parse up to the comment, the head unparsed.

A browser reads HTML in one pass: the tokenizer (whose state the tree builder switches after
`<script>`, `<title>`, `<textarea>`, `<style>`, `<plaintext>`… and which reads `<![CDATA[`
by the open element's namespace) feeds tokens to the tree builder, which never looks at a
comment's text: it only inserts a comment node holding it. Let base and head share the text
before the changed part and after it, and let the change lie inside the text D of one
comment `<!--D-->` of the base, D becoming D' in the head. If

- html5lib's tokenizer, run on the base with its tree builder, reaches the comment start
  state right after that `<!--` (which lies in the shared start, so the head's parse reaches
  the same state there: everything before is the same text), and
- D and D' are plain comment text: no `--` (so the first `-->` after `<!--` ends the
  comment, and `--!>` cannot), no `<!`, not starting with `>` or `-` and not ending with
  `-` (no abrupt `<!-->` or `<!--->`), no control character or noncharacter (no parse error
  from the input stream), no carriage return,

then both tokenizers read their comment text to the same `-->` and emit one comment token
each, with no parse error, and are back in the data state with the same text after it. The
token streams are the same but for that comment's text; so are the trees built from them
and the parse errors. Reading both files whole would find the same code tokens and exactly
these two comments changed: that is the answer returned, and nothing after the comment is
parsed. Anything else (an edit reaching a delimiter, two comments changed, a comment added
or removed, whose presence can split text runs or keep a `<pre>` newline) is parsed whole.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import html5lib
from html5lib._tokenizer import HTMLTokenizer

from capdaemon.classify.tokens import Comment, Lexed, check_text, lex, shared_chars
from capdaemon.languages import HTML

# Characters whose presence in comment text is not plain: controls other than tab and line
# feed (and carriage return, which the input stream rewrites), noncharacters, surrogates.
_NOT_PLAIN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff\ud800-\udfff]|[\U0001fffe-\U0010ffff]"
)


class _Reached(Exception):
    """The tokenizer entered a comment at the position looked for (`at` says whether
    exactly there, or first past it)."""

    def __init__(self, at: bool) -> None:
        super().__init__()
        self.at = at


class _Probe(HTMLTokenizer):
    """html5lib's tokenizer, stopping the parse when it enters a comment at or past a
    (line, column) of the stream."""

    target: tuple[int, int] = (0, 0)

    def commentStartState(self) -> bool:  # html5lib's name
        where = self.stream.position()
        if where >= self.target:
            raise _Reached(where == self.target)
        result: bool = super().commentStartState()
        return result


def _no_errors(_data: str) -> None:
    """Report no character errors."""


class _ProbeParser(html5lib.HTMLParser):
    """html5lib's parser, its tokenizer a `_Probe` (as `HTMLParser._parse`, otherwise)."""

    target: tuple[int, int] = (0, 0)

    def _parse(
        self,
        stream: Any,
        innerHTML: bool = False,
        container: str = "div",
        scripting: bool = False,
        **kwargs: Any,
    ) -> None:  # html5lib's signature
        self.innerHTMLMode = innerHTML
        self.container = container
        self.scripting = scripting
        self.tokenizer = _Probe(stream, parser=self, **kwargs)
        self.tokenizer.target = self.target
        # invalid characters only add parse errors, which the probe does not read (the
        # comment texts are checked for them): skip html5lib's scan for them
        self.tokenizer.stream.reportCharacterErrors = _no_errors
        self.reset()
        self.mainLoop()


def _line_col(text: str, offset: int) -> tuple[int, int]:
    """html5lib's stream position (1-based line, 0-based column) of an offset in text
    without carriage returns."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1)


_PARSERS = threading.local()  # one parser per thread: building one costs more than a parse


def _parser() -> _ProbeParser:
    parser: _ProbeParser | None = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = _ProbeParser(tree=html5lib.getTreeBuilder("etree"))
    return parser


def _comment_starts_at(base: str, start: int) -> bool:
    """Whether html5lib's parse of base enters a comment's text at offset `start`."""
    parser = _parser()
    parser.target = _line_col(base, start)
    try:
        parser.parse(base)
    except _Reached as reached:
        return reached.at
    except Exception:  # anything html5lib raises: the files are read whole, as before
        return False
    return False


def _plain(text: str) -> bool:
    """Comment text that the tokenizer reads in the comment state alone, to the `-->` that
    follows it, without a parse error (see the module's docstring)."""
    return not (
        "--" in text
        or "<!" in text
        or text.startswith((">", "-"))
        or text.endswith("-")
        or "\r" in text
        or _NOT_PLAIN.search(text)
    )


def _one_comment_swapped(base: str, head: str) -> tuple[Lexed, Lexed] | None:
    """Base and head read as one comment each (their other tokens equal) when the change is
    inside one plain comment the base's parse enters (see the module's docstring)."""
    if "\r" in base or "\r" in head:
        return None
    lo, tail = shared_chars(base, head)
    hi, shift = len(base) - tail, len(head) - len(base)
    opening = base.rfind("<!--", 0, lo)  # ends within the shared start
    if opening < 0:
        return None
    start = opening + 4
    end = base.find("--", start)
    if end < hi or not base.startswith("-->", end):
        return None
    if head.find("--", start) != end + shift or not head.startswith("-->", end + shift):
        return None
    old, new = base[start:end], head[start : end + shift]
    if not (_plain(old) and _plain(new)) or not _comment_starts_at(base, start):
        return None
    return (
        Lexed(HTML, (), (), (Comment(old, 0),)),
        Lexed(HTML, (), (), (Comment(new, 0),)),
    )


def lex_html_pair(base: str, head: str) -> tuple[Lexed, Lexed]:
    """The tokens and comments of base and head: one comment each when the change is
    inside one comment (see the module's docstring), else both files read whole; raises
    LexError as reading them whole would."""
    check_text(base)
    check_text(head)
    return _one_comment_swapped(base, head) or (lex(HTML, base), lex(HTML, head))

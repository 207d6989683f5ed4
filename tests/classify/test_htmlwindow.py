"""HTML read from the base's parse up to the changed comment: the same answer as html5lib's
parse of both whole files, on generated documents whose comment edits open and close
comments, reach `<script>`, raw text, RCDATA, `<plaintext>` and foreign CDATA, and cross the
parser's 10,240-character chunks; and the attacks a quick path invites, refused."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.classify.commentonly import comment_only_files
from capdaemon.classify.htmlwindow import lex_html_pair
from capdaemon.classify.tokens import Lexed, LexError, lex
from capdaemon.languages import HTML

FRAGMENTS = [
    "<!doctype html>",
    "<p>x</p>",
    "<p class='a'>",
    "x",
    " ",
    "\n",
    "&amp;",
    "&notin",
    "<br/>",
    "<script>",
    "</script>",
    "<script>/*",
    "*/</script>",
    "<style>",
    "</style>",
    "<textarea>",
    "</textarea>",
    "<title>",
    "</title>",
    "<xmp>",
    "</xmp>",
    "<iframe>",
    "</iframe>",
    "<noembed>",
    "<noframes>",
    "<plaintext>",
    "<svg>",
    "</svg>",
    "<math>",
    "</math>",
    "<![CDATA[",
    "]]>",
    "<table>",
    "<tr><td>a",
    "</table>",
    "<pre>",
    "</pre>",
    "<select>",
    "<template>",
    "</template>",
    "<a title='<!-- x -->'>",
    "<!-- c -->",
    "<!--",
    "-->",
    "--!>",
    "<!",
    "<",
    "<?x ?>",
    "</x y>",
]
COMMENTS = ["<!-- note here -->", "<!--a-->", "<!---->", "<!-- two\nlines -->"]
INSIDE = ["x", " ", "\n", "-", "--", ">", "<", "!", "<!", "-->", "--!>", "\x01", "é", "]]>"]
INSIDE += ["</script>", "</title>", "\r", "<!--", "[if IE]>"]
LONG = "<p>" + "y" * 11_000 + "</p>\n"  # past html5lib's 10,240-character chunk


def _view(old: Lexed, new: Lexed) -> tuple[bool, Counter[str], Counter[str]]:
    before = Counter(c.text for c in old.comments)
    after = Counter(c.text for c in new.comments)
    return old.tokens == new.tokens, before - after, after - before


def _whole(base: str, head: str) -> object:
    try:
        return _view(lex(HTML, base), lex(HTML, head))
    except LexError:
        return "error"


def _window(base: str, head: str) -> object:
    try:
        return _view(*lex_html_pair(base, head))
    except LexError:
        return "error"


@st.composite
def _comment_edits(draw: st.DrawFn) -> tuple[str, str]:
    """A document with a comment in it, and the same document with text put into, taken
    out of or replaced in that comment's text (which may end it early, or reach markup)."""
    parts = draw(st.lists(st.sampled_from([*FRAGMENTS, LONG]), max_size=10))
    at = draw(st.integers(0, len(parts)))
    comment = draw(st.sampled_from(COMMENTS))
    cut = draw(st.integers(4, len(comment) - 3))
    gone = draw(st.integers(0, len(comment) - 3 - cut))
    put = "".join(draw(st.lists(st.sampled_from(INSIDE), max_size=3)))
    edited = comment[:cut] + put + comment[cut + gone :]
    before, after = "".join(parts[:at]), "".join(parts[at:])
    return before + comment + after, before + edited + after


@settings(max_examples=1500, deadline=None)
@given(edit=_comment_edits())
def test_the_quick_reading_decides_as_parsing_both_files_whole_does(
    edit: tuple[str, str],
) -> None:
    base, head = edit
    assert _window(base, head) == _whole(base, head)


@pytest.mark.parametrize(
    ("base", "head"),
    [
        ("<!doctype html><title>t</title>\n<!-- note -->\n<p>a</p>\n",
         "<!doctype html><title>t</title>\n<!-- note, reworded -->\n<p>a</p>\n"),
        (f"<!doctype html>{LONG * 2}<p>a</p>\n<!-- note -->\n<p>b</p>\n",
         f"<!doctype html>{LONG * 2}<p>a</p>\n<!-- a new note -->\n<p>b</p>\n"),
        ("<svg><!-- note --><circle/></svg>", "<svg><!-- new --><circle/></svg>"),
        (f"<!doctype html><p>{'y' * 10_216}</p><!-- note -->\n",  # `<!--` across 10,240
         f"<!doctype html><p>{'y' * 10_216}</p><!-- new note -->\n"),
    ],
    ids=["reworded", "past-two-chunks", "in-svg", "opened-across-a-chunk-boundary"],
)  # fmt: skip
def test_a_reworded_comment_is_read_without_parsing_the_head(base: str, head: str) -> None:
    old, new = lex_html_pair(base, head)
    assert (old.tokens, new.tokens) == ((), ())  # the quick reading: the head was not parsed
    assert _view(old, new) == _whole(base, head)
    assert comment_only_files("a.html", base, head)


_PAGE = "<!doctype html><title>t</title>\n"


@pytest.mark.parametrize(
    ("base", "head"),
    [
        pytest.param(
            f"{_PAGE}<script>let a = 1; /*<!-- note -->*/</script>\n",
            f"{_PAGE}<script>let a = 1; /*<!-- note */ a = 2 /* -->*/</script>\n",
            id="script-text-that-looks-like-a-comment",
        ),
        pytest.param(
            f"{_PAGE}<script>let a = 1 <!-- note\nlet b = 2</script>\n",
            f"{_PAGE}<script>let a = 1 <!-- note -->\nlet b = 2</script>\n",
            id="script-html-like-comment",
        ),
        pytest.param(
            f"{_PAGE}<!-- note -->\n<p>a</p>\n",
            f"{_PAGE}<!-- note --!><script>document.title='x'</script><!-- -->\n<p>a</p>\n",
            id="bang-closer-then-a-live-script",
        ),
        pytest.param(
            f"{_PAGE}<!-- note -->\n<p>a</p>\n",
            f"{_PAGE}<!-- note --><img src=x onerror=alert(1)><!-- -->\n<p>a</p>\n",
            id="closer-then-live-markup",
        ),
        pytest.param(
            f"{_PAGE}<textarea><!-- note --></textarea>\n",
            f"{_PAGE}<textarea><!-- changed --></textarea>\n",
            id="textarea-rcdata",
        ),
        pytest.param(
            "<!doctype html><title>a <!-- note --></title>\n",
            "<!doctype html><title>a <!-- changed --></title>\n",
            id="title-rcdata",
        ),
        pytest.param(
            f"{_PAGE}<style>p {{ color: red }} <!-- note --></style>\n",
            f"{_PAGE}<style>p {{ color: red }} <!-- changed --></style>\n",
            id="style-rawtext",
        ),
        pytest.param(
            f"{_PAGE}<xmp><!-- note --></xmp><iframe><!-- a --></iframe>\n",
            f"{_PAGE}<xmp><!-- changed --></xmp><iframe><!-- a --></iframe>\n",
            id="xmp-rawtext",
        ),
        pytest.param(
            f"{_PAGE}<svg><![CDATA[ <!-- note --> ]]></svg>\n",
            f"{_PAGE}<svg><![CDATA[ <!-- changed --> ]]></svg>\n",
            id="svg-cdata",
        ),
        pytest.param(
            f"{_PAGE}<math><mi><![CDATA[x]]></mi><![CDATA[ <!-- note --> ]]></math>\n",
            f"{_PAGE}<math><mi><![CDATA[x]]></mi><![CDATA[ <!-- changed --> ]]></math>\n",
            id="mathml-cdata",
        ),
        pytest.param(
            f"{_PAGE}<plaintext><p>a</p><!-- note -->\n",
            f"{_PAGE}<plaintext><p>a</p><!-- changed -->\n",
            id="plaintext",
        ),
        pytest.param(
            f"{_PAGE}<noscript><!-- note --></noscript>\n",
            f"{_PAGE}<noscript><!-- changed --></noscript>\n",
            id="noscript-read-two-ways",
        ),
        pytest.param(
            f"{_PAGE}<a title='<!-- note -->'>a</a>\n",
            f"{_PAGE}<a title='<!-- changed -->'>a</a>\n",
            id="attribute-value",
        ),
        pytest.param(
            f"{_PAGE}<!-- note -->\n<p>a</p>\n",
            f"{_PAGE}<!--[if IE]><script>x()</script><![endif]-->\n<p>a</p>\n",
            id="conditional-comment",
        ),
        pytest.param(
            f"{_PAGE}<!-- note -->\n<p>a</p>\n",
            f"{_PAGE}<!-->\n<p>a</p><!-- -->\n",
            id="abrupt-closer",
        ),
    ],
)
def test_comment_lookalikes_and_closers_are_refused(base: str, head: str) -> None:
    assert not comment_only_files("a.html", base, head)


def test_threads_reading_at_once_each_get_their_own_answer() -> None:
    """The probe's parser is kept per thread: parses running at once do not mix."""
    pairs = [
        (f"<p>{'x' * n}</p><!-- a -->", f"<p>{'x' * n}</p><!-- b -->", True) for n in range(20)
    ] + [(f"<script>{'x' * n}<!-- a --></script>", f"<script>{'x' * n}<!-- b --></script>",
          False) for n in range(20)]  # fmt: skip
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda p: comment_only_files("a.html", p[0], p[1]).ok, pairs * 5))
    assert got == [ok for _, _, ok in pairs] * 5

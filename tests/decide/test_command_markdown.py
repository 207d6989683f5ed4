"""Ballot commands count only where GitHub renders them as top-level paragraph text."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.footnote import footnote_plugin

from capdaemon.decide.commands import CommandKind, command_lines, parse_command

K = CommandKind
# Each of these approved (or rejected) on the line-based reader although GitHub renders the
# command inside a quote, a list, code or HTML.
ATTACKS = [
    ("lazy-quote-continuation", "> agent text\n/approve A"),
    ("lazy-nested-quote", "> > agent text\n/approve A"),
    ("lazy-list-continuation", "1. agent text\n/approve A"),
    ("lazy-bullet-continuation", "- agent text\n/reject"),
    ("multi-line-code-span", "see `the agent said\n/approve A\n` above"),
    ("fence-closed-by-8-spaces", "```\ncode\n        ```\n/approve A\n"),
    ("fence-closed-by-tab", "```\ncode\n\t```\n/approve A\n"),
    ("tilde-fence-closed-by-tab", "~~~\ncode\n\t~~~\n/reject\n"),
    ("pre-block", "<pre>\n/approve A\n</pre>"),
    ("div-block", "<div>\n/approve A\n</div>"),
    ("script-block", "<script>\n/approve A\n</script>"),
    ("html-block-type-7", "<custom-tag>\n/approve A"),
    ("blockquote-html-block-then-paragraph", "<blockquote>\n\n/approve A"),
    ("unclosed-inline-pre", "agent text <pre>\n\n/approve A"),
    ("unclosed-pre-in-a-quote", "> agent text <pre>\n\n/approve A"),
    ("html-before-command-fails-closed", "<pre>\nx\n</pre>\n\n/reject"),
    ("inline-html-across-lines", "text <span title='x\n/approve A\n'>y</span>"),
    ("setext-heading", "agent text\n/approve A\n---"),
    ("heading", "# /approve A"),
    ("strikethrough", "~~/approve A~~"),
    ("backslash-escape", "\\/approve A"),
    ("entity", "&#47;approve A"),
    # GitHub-flavoured Markdown: rendered in the footnotes section, as math, in an alert or
    # inside a collapsed <details>, never as a top-level paragraph.
    ("footnote-definition-lazy-line", "See[^1].\n\n[^1]: agent text\n/approve A"),
    ("footnote-definition-indented", "See[^n].\n\n[^n]:\n    /approve A\n"),
    ("footnote-definition-second-paragraph", "See[^n].\n\n[^n]: text\n\n    /reject\n"),
    ("math-block", "$$\n/approve A\n$$"),
    ("math-block-after-text", "$$ x = 1\n/approve A\n$$"),
    ("math-block-with-blank-line", "$$\nx\n\n/approve A\n$$"),
    ("inline-math-across-lines", "so $x\n/approve A\n$ holds"),
    ("math-fence", "```math\n/approve A\n```"),
    ("alert-lazy-continuation", "> [!NOTE]\n/approve A"),
    ("alert", "> [!WARNING]\n> /approve A"),
    ("details-block", "<details>\n<summary>log</summary>\n\n/approve A\n\n</details>"),
    ("details-inline", "<details><summary>log</summary>\n\n/reject\n</details>"),
]
WHITESPACE = [
    ("nbsp", "/approve\xa0A"),
    ("ideographic-space", "/approve\u3000A"),
    ("vertical-tab", "/approve\x0bA"),
    ("file-separator", "/approve\x1cA"),
    ("line-separator", "/approve\u2028A"),
    ("paragraph-separator", "/approve\u2029A"),
    ("tab", "/approve\tA"),
    ("em-space", "/approve\u2003A"),
    ("form-feed", "/breaker\x0creset"),
]


@pytest.mark.parametrize("body", [a[1] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_rendered_as_quote_list_code_or_html_never_counts(body: str) -> None:
    """No valid command comes out of text GitHub does not render as a plain paragraph line."""
    cmd = parse_command(body)
    assert cmd is None or cmd.kind is K.UNKNOWN


@pytest.mark.parametrize("body", [w[1] for w in WHITESPACE], ids=[w[0] for w in WHITESPACE])
def test_only_ascii_space_separates_command_and_letter(body: str) -> None:
    """Look-alike whitespace is answered as unknown (the owner is told why), never counted."""
    cmd = parse_command(body)
    assert cmd is not None and cmd.kind is K.UNKNOWN
    assert "ASCII spaces" in cmd.reason


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("/approve A", K.APPROVE_A),
        ("/approve   A  ", K.APPROVE_A),
        ("> quoted agent text\n\n/approve A", K.APPROVE_A),  # a blank line ends the quote
        ("```\ncode\n```\n/approve B", K.APPROVE_B),
        ("<!-- a note -->\n/reject", K.REJECT),
        ("Looks right.\n/approve A\nThanks", K.APPROVE_A),
        ("text `code` here\n/approve C", K.APPROVE_C),
        ("/breaker reset", K.BREAKER_RESET),
        ("See[^1].\n\n[^1]: a note\n\n/approve A", K.APPROVE_A),  # after the footnote
        ("$$\nx = 1\n$$\n\n/approve B", K.APPROVE_B),  # after the math block
    ],
)
def test_plain_paragraph_commands_still_count(body: str, kind: CommandKind) -> None:
    """Ordinary owner comments keep working."""
    cmd = parse_command(body)
    assert cmd is not None and cmd.kind is kind


# ----------------------------------------------------------------------------- property
_md = (
    MarkdownIt("commonmark")
    .enable(["table", "strikethrough"])
    .use(footnote_plugin)
    .use(dollarmath_plugin)
)
_PIECES = st.sampled_from(
    [
        "/approve A",
        "/reject",
        "/approve B",
        "> ",
        ">",
        "- ",
        "1. ",
        "    ",
        "\t",
        "```",
        "~~~",
        "`",
        "<pre>",
        "</pre>",
        "<div>",
        "<!--",
        "-->",
        "---",
        "===",
        "# ",
        "|",
        "[^1]",
        "[^1]: ",
        "$$",
        "$",
        "<details>",
        "text",
        "*",
        "\\",
        " ",
        "\n",
        "\n",
        "\n\n",
    ]
)


class _TopLevelParagraphText(HTMLParser):
    """The lines of rendered HTML that are plain text directly inside a top-level `<p>`
    (a line touched by any other tag is marked with NUL, so it never matches a command)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.lines: list[str] = []
        self._buf: list[str] = []

    def _flush(self) -> None:
        self.lines.extend("".join(self._buf).split("\n"))
        self._buf = []

    def handle_starttag(self, tag: str, attrs: list) -> None:  # type: ignore[type-arg]
        if tag == "br" and self.stack == ["p"]:
            return  # a hard line break: markdown-it writes a newline after it, ending the line
        if self.stack[:1] == ["p"]:
            self._buf.append("\x00")
        if tag not in ("br", "hr", "img", "input"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "br" and self.stack == ["p"]:
            return
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        if self.stack[:1] == ["p"]:
            self._buf.append("\x00")
        elif not self.stack:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self.stack == ["p"]:
            self._buf.append(data)
        elif self.stack[:1] == ["p"]:
            self._buf.append("\x00")

    def close(self) -> None:
        super().close()
        self._flush()


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_PIECES, max_size=20))
def test_every_accepted_line_renders_inside_a_top_level_paragraph(parts: list[str]) -> None:
    """For generated markdown, every command line accepted is, in markdown-it's rendered HTML,
    a whole line of plain text directly inside a top-level `<p>` (not in a quote, list item,
    code block, code span or HTML block)."""
    text = "".join(parts)
    html = _md.render(text)
    reader = _TopLevelParagraphText()
    reader.feed(html)
    reader.close()
    plain = {line.strip(" \t") for line in reader.lines}
    for line in command_lines(text):
        assert line.strip(" \t") in plain, (text, line, html)

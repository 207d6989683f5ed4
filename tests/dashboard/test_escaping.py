"""Property: any string from GitHub or an agent comes back from the page as the same text."""

from __future__ import annotations

from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.config import Config
from capdaemon.dashboard.prfacts import PRFacts
from capdaemon.dashboard.readmodel import PRRow, ReadModel
from capdaemon.dashboard.site import render, story_href
from capdaemon.quoting import printable

NOW = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)


class Cells(HTMLParser):
    """The text of each <td> (joined across inner elements), and every tag seen."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: list[str] = []
        self.tags: list[str] = []
        self._td = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "td":
            self._td = True
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._td = False

    def handle_data(self, data: str) -> None:
        if self._td:
            self.cells[-1] += data


hostile = st.text(
    alphabet=st.sampled_from("<>\"'&=/ ;:abcscriptimgonerror()`\\\t\n\u00a0é€") | st.characters(),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(title=hostile, author=hostile, branch=hostile.filter(bool))
def test_title_author_and_branch_render_as_the_same_text(
    title: str, author: str, branch: str
) -> None:
    """The PRs table and the story page show the exact title, author and head branch name
    (control and format characters as their escapes, as `capdaemon why` prints them), and no
    markup from them: the tags are the same as for plain ones."""
    row = _row(title, author, branch)
    model = ReadModel(Path("/nonexistent"), NOW, Config(), prs=[row], by_ref={row.ref: row})
    plain = _row("x", "y", "z")
    base = ReadModel(Path("/nonexistent"), NOW, Config(), prs=[plain], by_ref={plain.ref: plain})
    for path in ("prs.html", story_href(row.ref)):
        got, want = Cells(render(model, path).body), Cells(render(base, path).body)
        assert got.tags == want.tags
        shown = [printable_lines(t) for t in (title, author, branch)]
        assert all(s in got.cells for s in shown), (shown, got.cells)


def printable_lines(text: str) -> str:
    """What the page shows for `text` (the `why` helper per line)."""
    return "\n".join(printable(line) for line in text.split("\n"))


def _row(title: str, author: str, branch: str) -> PRRow:
    facts = PRFacts(title=title, author=author, branch=branch, state="open", head_sha="a" * 40)
    return PRRow("acme/widgets#7", "acme/widgets", 7, "a" * 40, "D", "r=D", facts=facts)

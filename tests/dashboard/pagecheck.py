"""Helpers for dashboard tests: render every page, and read a page back with html.parser."""

from __future__ import annotations

from html.parser import HTMLParser

from capdaemon.dashboard.readmodel import ReadModel
from capdaemon.dashboard.site import all_paths, render


class Tags(HTMLParser):
    """Every start tag with its attributes, the text of <script> elements, and all text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def every_page(model: ReadModel, *, static: bool = False) -> dict[str, str]:
    """path → HTML of every page of the site."""
    return {
        p: render(model, p, static=static).body for p in all_paths(model) if p.endswith(".html")
    }

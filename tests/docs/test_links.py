"""Every relative link in the docs resolves: the file exists, and an anchor names a heading of
the target page as GitHub computes heading anchors."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    {
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "bench" / "README.md",
        ROOT / "systemd" / "README.md",
        *ROOT.glob("docs/**/*.md"),
    }
)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE = re.compile(r"`+[^`]*`+")
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML_ID = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: its text (links and code marks dropped), lower case,
    anything but letters, digits, spaces, '-' and '_' removed, spaces made '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of a page: each heading's (a repeated one gets -1, -2 …), and HTML ids."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set(_HTML_ID.findall(text))
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        base = github_anchor(heading)
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    text = _CODE.sub("", text)
    return _LINK.findall(text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: … are not checked here
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path)).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {dest.name}")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    """No orphan page: each page under docs/ is linked from the README or a page it links."""
    reached, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in reached or page.suffix != ".md" or not page.exists():
            continue
        reached.add(page)
        for target in links(page):
            path = target.partition("#")[0]
            if path and not re.match(r"^[a-z][a-z0-9+.-]*:", path):
                todo.append((page.parent / unquote(path)).resolve())
    orphans = [str(p.relative_to(ROOT)) for p in ROOT.glob("docs/**/*.md") if p not in reached]
    assert orphans == []


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Quick start", "quick-start"),
        (
            "Running agent commands confined (`scope-guard run`)",
            "running-agent-commands-confined-scope-guard-run",
        ),
        ("Dependencies, and why", "dependencies-and-why"),
        ("## `capdaemon scope-guard run`".lstrip("# "), "capdaemon-scope-guard-run"),
        ("1. Create the GitHub App", "1-create-the-github-app"),
        ("What does not work yet", "what-does-not-work-yet"),
        ("A [link](x.md) and `code`", "a-link-and-code"),
    ],
)
def test_anchors_are_computed_as_github_does(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n[x](b.md) [y](#nope) [z](#title)\n", "utf-8")
    found = links(tmp_path / "a.md")
    assert found == ["b.md", "#nope", "#title"]
    assert "title" in anchors(tmp_path / "a.md") and "nope" not in anchors(tmp_path / "a.md")

"""Prose documentation under docs/ is non-critical by default; anything else there is judged as
code, the critical lists still win, and the carve-out can be narrowed away."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.classify.axes import classify_file
from capdaemon.classify.compiled import compile_classifier
from capdaemon.config import ClassifierConfig
from capdaemon.config.types import PROSE_SUFFIXES
from capdaemon.model import FileChange

from .classify_builders import added, modified

CC = compile_classifier(ClassifierConfig())
STRICT = compile_classifier(ClassifierConfig(noncritical_prose_dirs=()))
EDIT = (["# Setup", "", "Run the tool."], ["# Setup", "", "Run the tool twice, then stop."])


def critical(fc: FileChange, cc: object = CC) -> bool:
    return classify_file(fc, cc).critical  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "path", ["docs/setup.md", "docs/howto/deploy.rst", "docs/a/b/notes.txt", "docs/x.adoc"]
)
def test_a_prose_edit_under_docs_is_non_critical(path: str) -> None:
    """A Markdown/rST/AsciiDoc/text rewrite (not a typo) under docs/: reversible, non-critical,
    quadrant A, and the reason says why."""
    v = classify_file(modified(path, *EDIT), CC)
    assert (v.critical, v.quadrant.value) == (False, "A")
    assert any("prose document under docs/" in r for r in v.reasons)


@pytest.mark.parametrize(
    "path",
    [
        "docs/conf.py",  # Sphinx runs it
        "docs/_ext/plugin.py",
        "docs/page.mdx",  # JSX runs
        "docs/build.sh",
        "docs/notebook.ipynb",
        "docs/setup.MD",  # exact suffixes only
        "docs/setup.md.py",
        "Docs/setup.md",  # exact folder only
        "docs/concepts/rules.md",  # doctrine: typo fixes only
        "docs/CODEOWNERS",
        "src/multiagent_protocol/docs/setup.md",  # the bot's source
        "notdocs/setup.md",
    ],
)
def test_anything_else_under_docs_stays_critical(path: str) -> None:
    """Code and data under docs/, the doctrine folder and critical-list files stay critical."""
    assert critical(modified(path, *EDIT)), path


def test_narrowing_the_prose_carve_out_makes_docs_critical_again() -> None:
    """`noncritical_prose_dirs: []` restores the strict reading: docs/setup.md is critical."""
    assert critical(modified("docs/setup.md", *EDIT), STRICT)
    assert not critical(modified("docs/guide/setup.md", *EDIT), STRICT)


NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12)


@given(st.lists(NAME, min_size=1, max_size=3), NAME)
def test_no_non_prose_file_under_docs_is_ever_carved_out(folders: list[str], name: str) -> None:
    """Property: a new file under docs/ (outside docs/guide/) whose name does not end in a
    prose suffix is critical, whatever its folder and name."""
    path = "/".join(["docs", *folders, name])
    if path.endswith(PROSE_SUFFIXES) or path.startswith("docs/guide/") or "/." in path:
        return
    if any(part in (".", "..") for part in path.split("/")):
        return
    assert critical(added(path, ["print('x')"])), path

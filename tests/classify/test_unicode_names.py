"""Non-ASCII file names: judged like ASCII ones (NFC); look-alike folders, hidden marks refused."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.classify.axes import classify_file
from capdaemon.classify.compiled import compile_classifier
from capdaemon.config import ClassifierConfig
from capdaemon.model import Quadrant

from .classify_builders import added, modified

CC = compile_classifier(ClassifierConfig())


def quadrant(path: str, new: bool = False) -> Quadrant:
    """The quadrant of one edited (or added) file with the default config."""
    fc = added(path, ["hello"]) if new else modified(path, ["a"], ["b"])
    return classify_file(fc, CC).quadrant


@pytest.mark.parametrize(
    "path",
    [
        "docs/guide/설치.md",
        "docs/guide/café.md",
        unicodedata.normalize("NFD", "docs/guide/café.md"),  # as macOS writes it
        "examples/데모/실행.py",
        "examples/naïve.py",
    ],
)
def test_non_ascii_names_in_carve_out_folders_are_judged_like_ascii(path: str) -> None:
    """A Korean or accented name under a carve-out folder gets the ASCII name's quadrant (A)."""
    ascii_twin = path.rsplit("/", 1)[0] + "/x.md"
    assert quadrant(ascii_twin) is Quadrant.A
    assert quadrant(path) is Quadrant.A


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("ｅxamples/run.py", "looks like examples/"),  # fullwidth e
        ("\u0435\u0445amples/run.py", "looks like examples/"),  # Cyrillic е, х
        ("docs/ɡuide/x.py", "not proven non-critical"),  # Latin script g is not g
        ("ｄocs/x.md", "looks like docs/"),  # fullwidth d: not the prose folder
        ("examples/evil\u202egnp.py", "control or format characters"),  # bidi override
        ("examples/a\u200bb.py", "control or format characters"),  # zero-width space
    ],
)
def test_look_alike_folders_and_format_marks_are_never_non_critical(path: str, why: str) -> None:
    """Folded look-alike folders and names with hidden marks stay critical, with the reason."""
    v = classify_file(modified(path, ["a"], ["b"]), CC)
    assert v.critical and v.quadrant is Quadrant.B
    assert any(why in r for r in v.reasons), v.reasons


def test_look_alike_names_of_critical_files_are_still_critical() -> None:
    """Fullwidth letters do not hide the bot's own source: the critical lists fold them."""
    v = classify_file(modified("ｓｒｃ/multiagent_protocol/pr_validator.py", ["a"], ["b"]), CC)
    assert v.critical and any("matches" in r for r in v.reasons), v.reasons


_NAME = st.text(
    alphabet=st.characters(
        categories=("L", "M", "N", "P", "S"),
        include_characters=" ",
        exclude_characters="/\\",
    ).filter(str.isprintable),
    min_size=1,
    max_size=12,
)


@settings(max_examples=100, deadline=None)
@given(_NAME)
def test_property_a_printable_name_in_docs_guide_is_judged_by_its_folder(name: str) -> None:
    """Any printable name under docs/guide/ gets what the same edit gets as an ASCII name,
    unless its NFKC form is a critical name (then it is critical, never safer)."""
    path = f"docs/guide/{name}.md"
    got = classify_file(modified(path, ["a"], ["b"]), CC)
    twin = classify_file(modified("docs/guide/x.md", ["a"], ["b"]), CC)
    if got.critical:
        # only a name the critical lists recognise (case, NFKC or look-alike folded) may differ
        assert any(" matches " in r or "schema" in r or "trusts" in r for r in got.reasons), (
            got.reasons
        )
    else:
        assert got.quadrant is twin.quadrant is Quadrant.A

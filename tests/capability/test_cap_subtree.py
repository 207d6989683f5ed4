"""covers_below and may_reach against GlobSet (pathspec), the matcher every scope check uses.

Soundness is what matters (a wrong "yes" would grant a folder a forbidden path lives in):
when covers_below says yes, GlobSet matches every generated path below the folder; when
may_reach says no, GlobSet (case-insensitive, look-alike folded) matches none of them.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.capability.subtree import covers_below, may_reach
from capdaemon.globs import GlobSet

NAMES = ["a", "b", "A", "docs", "Docs", "x.md", ".github", "ｄocs", "a.pem", "gen"]
SEGMENTS = [*NAMES, "*", "**", "*.md", "?", "d*", "[ab]", "*.PEM"]

names = st.sampled_from(NAMES)
folders = st.lists(names, max_size=3).map(tuple)
below = st.lists(names, min_size=1, max_size=3).map(tuple)


@st.composite
def globs(draw: st.DrawFn) -> str:
    segs = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4))
    text = "/".join(segs)
    if draw(st.booleans()):
        text = "/" + text
    if draw(st.booleans()):
        text += "/"
    return text


@settings(max_examples=400, deadline=None)
@given(globs(), folders, st.lists(below, min_size=1, max_size=6))
def test_covers_below_is_sound(glob: str, folder: tuple[str, ...], tails: list) -> None:
    if glob.strip("/") == "":
        return
    if covers_below([glob], folder):
        gs = GlobSet((glob,), case_insensitive=False)
        for tail in tails:
            path = "/".join((*folder, *tail))
            assert gs.match(path), (glob, folder, path)


@settings(max_examples=400, deadline=None)
@given(globs(), folders, st.lists(below, min_size=1, max_size=6))
def test_may_reach_no_is_sound(glob: str, folder: tuple[str, ...], tails: list) -> None:
    if glob.strip("/") == "":
        return
    if not may_reach([glob], folder, folded=True):
        gs = GlobSet((glob,), case_insensitive=True)
        if folder:
            assert not gs.match("/".join(folder)), (glob, folder)
        for tail in tails:
            path = "/".join((*folder, *tail))
            assert not gs.match(path), (glob, folder, path)


def test_examples() -> None:
    """The task file shapes the README shows."""
    assert covers_below(["src/**"], ("src",)) and covers_below(["src/**"], ("src", "pkg"))
    assert not covers_below(["src/**"], ())  # the root holds more than src/
    assert not covers_below(["src/*.py"], ("src",))  # only some names
    assert covers_below(["build/"], ("build",)) and covers_below(["**"], ())
    assert may_reach([".github/**"], (".GitHub",), folded=True)  # case-folded
    assert may_reach([".github/**"], ("．github",), folded=True)  # look-alike folded
    assert not may_reach([".github/**"], ("src",), folded=True)
    assert may_reach(["*.pem"], ("src", "deep"), folded=True)  # any depth
    assert may_reach(["memory/events/*.cron-*"], ("memory",), folded=True)
    assert not may_reach(["memory/events/*.cron-*"], ("memory", "plans"), folded=True)
    assert not may_reach(["/cron_settings.json"], ("src",), folded=True)
    assert not may_reach(["/*.pem"], ("src",), folded=True)  # `*` is matched, not guessed
    assert may_reach(["/*.PEM"], ("KEY.pem",), folded=True)
    assert not covers_below(["**/"], ())  # `**/` leaves top-level files out

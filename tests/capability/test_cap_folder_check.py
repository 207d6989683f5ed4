"""The walk's once-per-folder scope check of files gives `check_path`'s answer, name for name.

`confine` checks a folder's files with only the globs that may reach the folder, matched
as `check_path` matches a printable ASCII path; these tests generate capabilities (stored
regexes, as scope-guard uses them), folders and names (case variants, look-alikes, `.git`,
the state folder, a drive-letter name, control characters) and compare with `_path_ok`,
which is `check_path` plus the never-writable folders.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.capability.model import Capability
from capdaemon.capability.snapshot import build_snapshot, guard_capability, snapshot_from_body
from capdaemon.capability.subtree import may_reach
from capdaemon.confine import _Walker
from capdaemon.globs import GlobSet, RegexGlobSet

NOW = datetime(2026, 5, 2, 9, 0, tzinfo=UTC)
NAMES = ["a", "A", "src", "Src", "docs", "x.md", "key.pem", "KEY.PEM", ".git", ".GIT",
         "c:", "ｓrc", "ѕrc", "state", "b c", "x\tz", "é", "*", "gen"]  # fmt: skip
GLOB_PARTS = ["a", "src", "docs", "*", "**", "*.md", "*.pem", "?", "s*", "[ab]", "state", "gen"]

names = st.sampled_from(NAMES)


@st.composite
def globs(draw: st.DrawFn) -> str:
    text = "/".join(draw(st.lists(st.sampled_from(GLOB_PARTS), min_size=1, max_size=3)))
    if draw(st.booleans()):
        text = "/" + text
    if draw(st.booleans()):
        text += "/"
    return text


def _stored(allowed: list[str], forbidden: list[str]) -> Capability:
    cap = Capability(
        task_id="t-1", level=1, paths=tuple(allowed), forbidden_paths=tuple(forbidden),
        commands=("true",),
    )  # fmt: skip
    body = build_snapshot(cap, NOW)
    snap = snapshot_from_body(json.loads(json.dumps(body)), Path("t-1.json"), "t-1")
    out = guard_capability(snap)
    assert isinstance(out.forbidden, RegexGlobSet) and isinstance(out.allowed, RegexGlobSet)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(globs(), min_size=1, max_size=3),
    st.lists(globs(), max_size=3),
    st.lists(names, min_size=1, max_size=3).map(tuple),
    st.lists(names, min_size=1, max_size=8),
    st.sampled_from([(), ("state",), ("src/state",)]),
)
def test_folder_check_is_check_path(
    allowed: list[str],
    forbidden: list[str],
    folder: tuple[str, ...],
    files: list[str],
    never: tuple[str, ...],
) -> None:
    if any(g.strip("/") == "" for g in allowed + forbidden):
        return
    cap = _stored(allowed, forbidden)
    w = _Walker(cap, "/nonexistent", never)
    reach = (w.forbidden, w.allowed)
    for i in range(1, len(folder) + 1):  # narrowed folder by folder, as the walk does
        reach = (
            tuple(g for g in reach[0] if may_reach((g,), folder[:i], folded=True)),
            tuple(g for g in reach[1] if may_reach((g,), folder[:i], folded=False)),
        )
    rel = "/".join(folder)
    ok = w._file_check(folder, rel, reach)
    for name in files:
        child = f"{rel}/{name}"
        assert ok(name, child) == w._path_ok(child), (allowed, forbidden, never, child)


@settings(max_examples=300, deadline=None)
@given(globs(), st.lists(names, max_size=3).map(tuple), st.lists(names, min_size=1, max_size=3))
def test_may_reach_no_is_sound_case_sensitive(glob: str, folder: tuple, tail: list) -> None:
    """Allowed globs are dropped for a folder when `may_reach(folded=False)` says no."""
    if glob.strip("/") == "" or may_reach([glob], folder, folded=False):
        return
    assert not GlobSet((glob,), case_insensitive=False).match("/".join((*folder, *tail)))


def test_examples() -> None:
    """`*.pem` refused at any depth and any case; `.git` and the state folder never."""
    cap = _stored(["src/**"], ["*.pem", "/config/**"])
    w = _Walker(cap, "/nonexistent", ("src/state",))
    reach = ((*cap.forbidden_paths, "/src/state"), cap.paths)
    ok = w._file_check(("src", "pkg"), "src/pkg", reach)
    assert ok("mod.py", "src/pkg/mod.py")
    assert not ok("KEY.PEM", "src/pkg/KEY.PEM") and not ok(".Git", "src/pkg/.Git")
    top = w._file_check(("src",), "src", reach)
    assert not top("state", "src/state") and top("statement", "src/statement")

"""What a task's globs say about a whole folder: every path below it allowed, or none forbidden.

Landlock grants a right on a folder for everything beneath it, including names created
later, so a folder may be granted whole only when *every* possible path below it is in
scope. Both answers here are proofs on the glob text, never guesses, and err on the side
of "no" (a folder then gets finer rules, or none):

- `covers_below(globs, folder)`: some glob certainly matches every path strictly below
  the folder (`src/**`, `src/`, `src`, `**`, `*/gen/**`…); a glob whose last part has
  wildcards (`src/*.py`, `a/*`) never covers a folder;
- `may_reach(globs, folder, folded=…)`: some glob might match the folder, one of its
  parents, or anything below it. `*` and `?` are matched; `[…]` classes and escapes are
  taken to match any name; with `folded`, names compare case-insensitively and
  look-alike-folded (as forbidden globs match). `*.pem` or `cron.json` (no slash: any
  depth) reach every folder.

Folders are tuples of path segments relative to the repository root (`()` is the root).
Property tests check both against GlobSet (tests/capability/test_cap_subtree.py).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from capdaemon.globs import fold_path

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    Matcher = Callable[[str, str], bool]

_WILD = frozenset("*?[]\\")


@lru_cache(maxsize=256)
def _parts(glob: str) -> tuple[tuple[str, ...], bool, bool]:
    """(segments, dir_only, last_is_literal) in anchored form: an unanchored glob (no slash
    but a trailing one) starts with `**`; empty segments (`a//b`) are dropped."""
    text = glob.strip()
    dir_only = text.endswith("/")
    text = text.rstrip("/")
    anchored = text.startswith("/") or "/" in text
    segs = tuple(s for s in text.lstrip("/").split("/") if s)
    if not anchored:
        segs = ("**", *segs)
    last = segs[-1] if segs else "**"
    return segs, dir_only, not any(c in _WILD for c in last)


def _nfa_step(segs: tuple[str, ...], states: set[int], name: str, match: Matcher) -> set[int]:
    """States (indices into `segs`) after consuming one path segment `name`."""
    out: set[int] = set()
    for i in states:
        if i >= len(segs):
            continue
        s = segs[i]
        if s == "**":
            out.add(i)  # `**` consumes the name and stays
        elif match(s, name):
            out.add(i + 1)
    return _closure(segs, out)


def _closure(segs: tuple[str, ...], states: set[int]) -> set[int]:
    """Add the states reachable by letting each `**` match zero segments."""
    todo = list(states)
    while todo:
        i = todo.pop()
        if i < len(segs) and segs[i] == "**" and i + 1 not in states:
            states.add(i + 1)
            todo.append(i + 1)
    return states


def _certain(seg: str, name: str) -> bool:
    """A glob segment that certainly matches `name`: the same literal, or `*` (any name)."""
    return seg == "*" or (seg == name and not any(c in _WILD for c in seg))


def _prefix_walk(segs: tuple[str, ...], folder: tuple[str, ...], match: Matcher) -> set[int] | None:
    """Walk the glob `segs` down `folder`: None when it matches the folder or one of its
    parents whole, else the states left after the folder (empty: it cannot match below)."""
    states = _closure(segs, {0})
    if len(segs) in states:
        return None
    for name in folder:
        states = _nfa_step(segs, states, name, match)
        if len(segs) in states:
            return None
        if not states:
            break
    return states


def _matches_some_prefix(segs: tuple[str, ...], folder: tuple[str, ...]) -> bool:
    """True when `segs` (all certain) matches the folder or one of its parents exactly."""
    return _prefix_walk(segs, folder, _certain) is None


def covers_below(globs: Iterable[str], folder: tuple[str, ...]) -> bool:
    """True when some glob certainly matches every path strictly below `folder`."""
    folder = tuple(unicodedata.normalize("NFC", s) for s in folder)
    for glob in globs:
        segs, dir_only, literal_last = _parts(glob)
        if not segs or (dir_only and all(s == "**" for s in segs)):
            continue  # `**/` matches only what is below some folder: not a top-level file
        while segs and segs[-1] == "**":  # `x/**`: everything strictly below x
            segs = segs[:-1]
            dir_only = True
        if not segs:
            return True  # `**`, `**/**`: everything
        if (dir_only or literal_last) and _matches_some_prefix(segs, folder):
            return True
    return False


@lru_cache(maxsize=256)
def _segment_regex(seg: str) -> re.Pattern[str] | None:
    """`*` and `?` of one glob part as a regex; None for classes and escapes (`[…]`, `\\`),
    which are then taken to match any name."""
    if "[" in seg or "]" in seg or "\\" in seg:
        return None
    body = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in seg)
    return re.compile(body)


def _maybe(folded: bool) -> Matcher:
    def match(seg: str, name: str) -> bool:
        if folded:  # as GlobSet(case_insensitive=True): casefolded glob, casefolded or
            seg = seg.casefold()  # look-alike-folded name
            names = {name.casefold(), fold_path(name)}
        else:
            names = {unicodedata.normalize("NFC", name)}
        if not any(c in _WILD for c in seg):
            return seg in names or (folded and fold_path(seg) in names)
        rx = _segment_regex(seg)
        return rx is None or any(rx.fullmatch(n) for n in names)

    return match


def may_reach(globs: Iterable[str], folder: tuple[str, ...], *, folded: bool) -> bool:
    """True when some glob might match `folder`, a parent of it, or any path below it."""
    match = _maybe(folded)
    for glob in globs:
        segs, _, _ = _parts(glob)
        left = _prefix_walk(segs, folder, match)
        if left is None or left:
            return True  # matched whole, or glob parts left over could match names below
    return False

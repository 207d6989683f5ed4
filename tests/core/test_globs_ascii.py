"""Path folding and normalising: the printable-ASCII fast paths give the general answers."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from capdaemon.globs import _CONFUSABLES, PathError, fold_path, normalize_path

ASCII = st.text(st.characters(max_codepoint=127), max_size=40)
ANY = st.text(max_size=40)


def reference_fold(path: str) -> str:
    return unicodedata.normalize("NFKC", path).translate(_CONFUSABLES).casefold()


def reference_normalize(path: str) -> str | None:
    """normalize_path as written before the fast path; None where it raises."""
    if path == "" or "\x00" in path or any(unicodedata.category(c) == "Cc" for c in path):
        return None
    p = unicodedata.normalize("NFC", path)
    if p.startswith("/") or (len(p) > 1 and p[1] == ":" and p[0].isalpha()):
        return None
    parts: list[str] = []
    for part in p.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(part)
    return "/".join(parts) or None


@given(st.one_of(ASCII, ANY))
def test_fold_path_is_nfkc_look_alike_casefold(path: str) -> None:
    assert fold_path(path) == reference_fold(path)


@given(st.one_of(ASCII, ANY, st.sampled_from(["a\x7fb", "a\x1fb", "x/\x00", "../a", "a/./b"])))
def test_normalize_path_refuses_and_answers_as_before(path: str) -> None:
    want = reference_normalize(path)
    try:
        got: str | None = normalize_path(path)
    except PathError:
        got = None
    assert got == want

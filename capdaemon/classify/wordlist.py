"""The dictionary the typo carve-out checks words against: pyspellchecker's word list, plus extras.

A typo fix turns a word that is not in the dictionary into one that is. The word list is
pyspellchecker's (English; frequency lists built from public corpora), loaded once per
process; a per-repo list of extra words (`classifier.typo_words`) counts as dictionary words.
A list that cannot be loaded raises DictionaryError, and the carve-out then fails closed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from spellchecker import SpellChecker

DEFAULT_LANGUAGE = "en"
# Prefixes that negate or reverse a word; a typo fix never adds, drops or swaps one.
NEGATION_PREFIXES: tuple[str, ...] = (
    "non", "dis", "un", "in", "im", "ir", "il", "de", "en", "anti", "mis", "counter",
)  # fmt: skip


_ASSIMILATED = frozenset({"in", "im", "ir", "il"})


class DictionaryError(RuntimeError):
    """The word list could not be loaded."""


@dataclass(frozen=True, slots=True)
class Dictionary:
    """A set of known words (case-folded) for one language, plus the repo's extra words."""

    language: str
    words: frozenset[str]
    extra: frozenset[str] = frozenset()

    def knows(self, word: str) -> bool:
        """True when the word (case-folded, curly apostrophes made straight) is known."""
        w = word.casefold().replace("\u2019", "'")
        return w in self.words or w in self.extra

    def with_extra(self, extra: Iterable[str]) -> Dictionary:
        """The same dictionary with more known words."""
        more = frozenset(w.casefold() for w in extra)
        return Dictionary(self.language, self.words, self.extra | more) if more else self


@functools.lru_cache(maxsize=4)
def load(language: str = DEFAULT_LANGUAGE) -> Dictionary:
    """The word list of a language (cached per process); raises DictionaryError."""
    try:
        checker = SpellChecker(language=language)
        words = frozenset(checker.word_frequency.dictionary)
    except Exception as exc:  # a missing or corrupt resource, an unknown language
        raise DictionaryError(
            f"word list {language!r} could not be loaded ({type(exc).__name__}: {exc})"
        ) from None
    if not words:
        raise DictionaryError(f"word list {language!r} is empty")
    return Dictionary(language, words)


def negation_change(a: str, b: str, words: Dictionary) -> bool:
    """True when `a` → `b` adds, drops or swaps a negation prefix: one word is the other (give
    or take one edit) with such a prefix, where the prefixed or unprefixed form is a real
    word (`reversable` → `irreversible`, `unathorized` → `authorized`, `encrypted` →
    `decrypted`; not `evironment` → `environment`, whose "en" is no prefix)."""
    a, b = a.casefold(), b.casefold()
    for x, y in ((a, b), (b, a)):
        for p in NEGATION_PREFIXES:
            if not x.startswith(p) or y.startswith(p) or len(x) <= len(p) + 2:
                continue
            rest = x[len(p) :]
            stems = [y, *(y[len(q) :] for q in NEGATION_PREFIXES if _other(p, q, y))]
            for stem in stems:
                if words.knows(rest) and _within_one_edit(rest, stem):
                    return True  # x is a real word's negation, y that word (or near it)
                if words.knows(p + stem) and _within_one_edit(x, p + stem):
                    return True  # x is near the negation of y, which is a real word
    return False


def _other(p: str, q: str, y: str) -> bool:
    """Whether `y` starts with prefix `q`, a different negation from `p` (in-, im-, ir-, il-
    are one prefix spelled to fit the next letter)."""
    return y.startswith(q) and not (p in _ASSIMILATED and q in _ASSIMILATED)


def _within_one_edit(a: str, b: str) -> bool:
    """Optimal-string-alignment distance of at most one."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        swapped = i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i]
        return a[i + 1 :] == b[i + 1 :] or (swapped and a[i + 2 :] == b[i + 2 :])
    return a[i + 1 :] == b[i:] if len(a) > len(b) else a[i:] == b[i + 1 :]

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


def negation_prefix(word: str) -> str:
    """The negation prefix a word starts with ("" when none)."""
    w = word.casefold()
    return next((p for p in NEGATION_PREFIXES if w.startswith(p) and len(w) > len(p) + 2), "")

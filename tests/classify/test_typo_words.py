"""The typo carve-out against the word list: a misspelling becoming a word is a typo fix;
a word becoming another word, a negation prefix coming or going, a number changing never is."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from capdaemon.classify.carveouts import typo_fix, typo_pair
from capdaemon.classify.hunks import parse_patch
from capdaemon.classify.wordlist import NEGATION_PREFIXES, load, negation_change

from .classify_builders import make_patch

WORDS = load()
# Common words of a rules document, each checked to be in the word list below.
COMMON = [
    "classifier",
    "merge",
    "request",
    "owner",
    "review",
    "change",
    "policy",
    "decision",
    "approve",
    "reject",
    "branch",
    "repository",
    "commit",
    "message",
    "secret",
    "token",
    "function",
    "critical",
    "reversible",
    "deleted",
    "protected",
    "production",
    "automatic",
    "pending",
    "receive",
    "separate",
    "definitely",
    "necessary",
    "occurred",
    "which",
    "their",
    "believe",
    "argument",
    "environment",
    "important",
    "maintenance",
    "permission",
]
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def test_the_common_words_are_in_the_word_list() -> None:
    """The generators below start from real dictionary words."""
    assert [w for w in COMMON if not WORDS.knows(w)] == []


@st.composite
def misspelling(draw: st.DrawFn) -> tuple[str, str]:
    """(misspelled, word): one deletion, insertion, substitution or swap inside a word."""
    word = draw(st.sampled_from(COMMON))
    i = draw(st.integers(1, len(word) - 2))
    kind = draw(st.sampled_from(["delete", "insert", "replace", "swap"]))
    c = draw(st.sampled_from(LETTERS))
    if kind == "delete":
        wrong = word[:i] + word[i + 1 :]
    elif kind == "insert":
        wrong = word[:i] + c + word[i:]
    elif kind == "replace":
        wrong = word[:i] + c + word[i + 1 :]
    else:
        wrong = word[: i - 1] + word[i] + word[i - 1] + word[i + 1 :]
    assume(wrong != word and not WORDS.knows(wrong))
    return wrong, word


@given(pair=misspelling())
@settings(max_examples=150, deadline=None)
def test_generated_misspellings_fixed_to_a_word_are_typo_fixes(pair: tuple[str, str]) -> None:
    """Any one-edit misspelling of a dictionary word, corrected, is a typo fix, except where
    the misspelling is also one edit from the word without a negation prefix its letters
    happen to start with (`dfinitely` is near "finitely" as well as "definitely"): that one
    is refused, naming the prefix, since the fix may add a negation (fail closed)."""
    wrong, word = pair
    d, why = typo_pair(f"The {wrong} is final.", f"The {word} is final.", words=WORDS)
    if negation_change(wrong, word, WORDS):
        assert d < 0 and "negation prefix" in why
    else:
        assert d == 1, why


@given(pair=misspelling())
@settings(max_examples=100, deadline=None)
def test_a_correct_word_misspelled_is_not_a_typo_fix(pair: tuple[str, str]) -> None:
    """The other way round (a word becoming a non-word) is never a typo fix."""
    wrong, word = pair
    d, why = typo_pair(f"The {word} is final.", f"The {wrong} is final.", words=WORDS)
    assert d < 0 and why


def _neighbours(word: str) -> list[str]:
    """Dictionary words one deletion, insertion or substitution away from `word`."""
    out = {word[:i] + word[i + 1 :] for i in range(len(word))}
    for i in range(len(word) + 1):
        for c in LETTERS:
            out.add(word[:i] + c + word[i:])
            out.add(word[:i] + c + word[i + 1 :])
    out.discard(word)
    return sorted(w for w in out if WORDS.knows(w))


WORD_SWAPS = [(w, other) for w in COMMON for other in _neighbours(w)]


def test_there_are_word_swaps_to_try() -> None:
    """The dictionary yields real one-edit word pairs (deferred/referred, branch/branches…)."""
    assert len(WORD_SWAPS) > 20


@given(pair=st.sampled_from(WORD_SWAPS))
@settings(max_examples=80, deadline=None)
def test_generated_word_to_word_swaps_are_not_typo_fixes(pair: tuple[str, str]) -> None:
    """One dictionary word for another is a change of meaning, however small the edit."""
    word, other = pair
    assert typo_pair(f"the {word} here", f"the {other} here", words=WORDS)[0] < 0


NEGATION_PAIRS = [
    ("irreversible", "reversible"),
    ("unauthorized", "authorized"),
    ("encrypted", "decrypted"),
    ("increase", "decrease"),
    ("enable", "disable"),
    ("legal", "illegal"),
    ("possible", "impossible"),
    ("secure", "insecure"),
    ("trusted", "untrusted"),
    ("blocking", "nonblocking"),
]


@pytest.mark.parametrize(("a", "b"), NEGATION_PAIRS)
def test_negation_prefix_swaps_are_never_typo_fixes(a: str, b: str) -> None:
    """Adding, dropping or swapping un-/in-/im-/ir-/il-/dis-/non-/de-/en- is never a typo."""
    for old, new in ((a, b), (b, a)):
        carve = typo_fix(parse_patch(make_patch([f"The step is {old}."], [f"The step is {new}."])))
        assert not carve, (old, new)


NEGATED = [(p + w, w) for w in COMMON for p in NEGATION_PREFIXES if WORDS.knows(p + w)]


def test_there_are_negated_words_to_try() -> None:
    """The dictionary has negated forms of the common words (unprotected, irreversible…)."""
    assert len(NEGATED) >= 5


@given(pair=st.sampled_from(NEGATED), cut=st.integers(1, 3))
@settings(max_examples=60, deadline=None)
def test_a_misspelled_negated_word_corrected_to_the_plain_word_is_not_a_typo_fix(
    pair: tuple[str, str], cut: int
) -> None:
    """`unprotcted` → `protected`: the old form was the negation, misspelled."""
    negated, word = pair
    i = len(negated) - cut - 1
    wrong = negated[:i] + negated[i + 1 :]
    assume(not WORDS.knows(wrong))
    assert typo_pair(f"a {wrong} b", f"a {word} b", words=WORDS)[0] < 0


@given(a=st.integers(0, 10_000), b=st.integers(0, 10_000))
@settings(max_examples=60, deadline=None)
def test_number_changes_are_never_typo_fixes(a: int, b: int) -> None:
    """Any change of a number, however small, is a rule change."""
    assume(a != b)
    d, why = typo_pair(f"Wait {a} days.", f"Wait {b} days.", words=WORDS)
    assert d < 0 and "number" in why


def test_a_misspelling_as_close_to_the_negated_word_is_not_a_typo_fix() -> None:
    """`idependent` is one edit from `dependent` as much as from `independent`: correcting
    it to `independent` decides the meaning, so it is not a typo fix."""
    assert typo_pair("It is idependent.", "It is independent.", words=WORDS)[0] < 0


def test_project_words_count_as_spelled_right() -> None:
    """`classifier.typo_words` lets a project's own terms be the corrected form."""
    patch = parse_patch(make_patch(["Run capdaemn first."], ["Run capdaemon first."]))
    refused = typo_fix(patch)
    assert not refused and "typo_words" in refused.why
    assert typo_fix(patch, extra_words=("capdaemon",))


def test_a_word_list_that_cannot_load_fails_closed() -> None:
    """No dictionary, no typo fix: the reason names the word list that failed."""
    carve = typo_fix(
        parse_patch(make_patch(["The classifer."], ["The classifier."])), language="zz"
    )
    assert not carve and "'zz' could not be loaded" in carve.why and "fail closed" in carve.why

"""Conservative content carve-outs of SPEC 2.4: typo fix and additions-only.

A typo fix turns a misspelling (a word not in the dictionary) into a dictionary word, in a
prose file only (`languages.is_prose`); the comment-only carve-out is proven on whole files
in `commentonly`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from capdaemon.classify.hunks import Hunk
from capdaemon.classify.prose import code_in_prose
from capdaemon.classify.wordlist import Dictionary, DictionaryError, load, negation_change
from capdaemon.languages import is_prose, prose_kinds

MAX_LINE_EDITS = 3
MAX_FILE_EDITS = 10
MAX_TYPO_WORD = 64  # longer "words" are not natural-language spelling; never a typo fix

# Words whose addition, removal or change alters a rule's meaning (compared case-folded).
_ENGLISH_GUARD_TEXT = """
    not no nor never none nothing nobody nowhere neither without
    must mustn't shall shan't should shouldn't may might mightn't can cannot can't could couldn't
    will won't would wouldn't do don't does doesn't did didn't is isn't are aren't was wasn't
    were weren't has hasn't have haven't had hadn't need needn't ought
    required require requires requirement mandatory forbidden forbid forbids prohibited prohibit
    only always except unless optional optionally allowed allow allows disallow disallowed
    deny denied denies permit permitted may_not all any every each either least most
"""
ENGLISH_GUARD_WORDS: frozenset[str] = frozenset(_ENGLISH_GUARD_TEXT.split())
KOREAN_GUARD_MARKERS: tuple[str, ...] = (
    "않", "없", "금지", "불가", "말", "반드시", "필수", "안", "못", "허용", "예외", "만",
    "아니", "해야", "하지", "모든", "항상", "절대", "오직",
)  # fmt: skip

_WORD = re.compile(r"\w+(?:['’]\w+)*")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True, slots=True)
class Carve:
    """Whether a carve-out applies, and why (or why not)."""

    ok: bool
    why: str

    def __bool__(self) -> bool:
        return self.ok


# ----------------------------------------------------------------------------- typo fix
def osa_distance(a: str, b: str, limit: int = MAX_LINE_EDITS) -> int:
    """Optimal-string-alignment edit distance (adjacent swaps count 1), capped at `limit + 1`.

    Banded: only cells within `limit` of the diagonal can hold a distance <= limit, so the
    work is O(len × limit) after the common prefix and suffix are cut, never O(len²).
    """
    if a == b:
        return 0
    if limit < 0:
        return limit + 1
    a, b = _trim_common(a, b)
    n, m = len(a), len(b)
    over = limit + 1
    if abs(n - m) > limit:
        return over
    if not n or not m:
        return max(n, m)
    k = limit
    width = 2 * k + 1
    # row i holds columns j = i - k .. i + k at index d = j - i + k
    prev = [d - k if 0 <= d - k <= m else over for d in range(width)]
    prev2 = [over] * width
    for i in range(1, n + 1):
        cur = _osa_row(a, b, i, k, prev, prev2)
        if min(cur) >= over:
            return over
        prev2, prev = prev, cur
    return prev[m - n + k]


def _trim_common(a: str, b: str) -> tuple[str, str]:
    """`a` and `b` without their common prefix and common suffix."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    return a[start:end_a], b[start:end_b]


def _osa_row(a: str, b: str, i: int, k: int, prev: list[int], prev2: list[int]) -> list[int]:
    """Row `i` of the banded OSA table (band half-width `k`), from the two rows above it."""
    width = 2 * k + 1
    over = k + 1
    m = len(b)
    cur = [over] * width
    for d in range(width):
        j = i + d - k
        if 0 <= j <= m:
            cur[d] = (
                min(i, over) if j == 0 else min(_osa_cell(a, b, i, j, d, cur, prev, prev2), over)
            )
    return cur


def _osa_cell(
    a: str, b: str, i: int, j: int, d: int, cur: list[int], prev: list[int], prev2: list[int]
) -> int:
    """Cell (i, j) of the OSA table (band index `d`), given its left, upper and swap cells."""
    v = prev[d] + (a[i - 1] != b[j - 1])
    if d + 1 < len(prev) and prev[d + 1] + 1 < v:
        v = prev[d + 1] + 1
    if d and cur[d - 1] + 1 < v:
        v = cur[d - 1] + 1
    swap = i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]
    if swap and prev2[d] + 1 < v:
        v = prev2[d] + 1
    return v


def _guard_words(line: str) -> Counter[str]:
    words: Counter[str] = Counter()
    for w in _WORD.findall(line):
        f = w.casefold().replace("’", "'")
        if f in ENGLISH_GUARD_WORDS or f.endswith("n't"):
            words[f] += 1
    if not line.isascii():
        for marker in KOREAN_GUARD_MARKERS:
            c = line.count(marker)
            if c:
                words[marker] += c
    return words


def _skeleton(line: str) -> str:
    return _WORD.sub("\x00", line)


def _word_bound(a: str, b: str) -> int:
    return max(1, max(len(a), len(b)) // 4)


def _word_fix(wa: str, wb: str, words: Dictionary) -> str:
    """Why replacing word `wa` by `wb` is not a spelling fix ("" when it is one)."""
    if words.knows(wa):
        return f"{wa!r} is already a dictionary word: swapping it for {wb!r} is not a typo fix"
    if not words.knows(wb):
        return (
            f"{wb!r} is not in the {words.language} dictionary (a typo fix turns a misspelling "
            "into a dictionary word; add project words to classifier.typo_words)"
        )
    if negation_change(wa, wb, words):
        return f"{wa!r} -> {wb!r} adds, drops or swaps a negation prefix"
    return ""


def typo_pair(
    old: str, new: str, line_limit: int = MAX_LINE_EDITS, *, words: Dictionary | None = None
) -> tuple[int, str]:
    """Edits needed to turn `old` into `new` as a typo fix, or (-1, why-not).

    Every changed word must go from a non-word to a dictionary word (`words`, English by
    default; DictionaryError when it cannot be loaded) within the edit-distance band.
    """
    if old == new:
        return 0, ""
    if _skeleton(old) != _skeleton(new):
        return -1, "punctuation, spacing, heading, list or table structure changed"
    if _DIGIT.findall(old) != _DIGIT.findall(new):
        return -1, "a digit changed (a number change is never a typo fix)"
    if _guard_words(old) != _guard_words(new):
        return -1, "a negation or modal word was added, removed or changed"
    total = 0
    for wa, wb in zip(_WORD.findall(old), _WORD.findall(new), strict=True):
        if wa == wb:
            continue
        if max(len(wa), len(wb)) > MAX_TYPO_WORD:
            return -1, f"a word over {MAX_TYPO_WORD} characters changed"
        word_bound = _word_bound(wa, wb)
        d = osa_distance(wa, wb, min(word_bound, line_limit - total))
        if d > word_bound:
            return -1, "a word was replaced, not corrected"
        why = _word_fix(wa, wb, words if words is not None else load())
        if why:
            return -1, why
        total += d
        if total > line_limit:
            return -1, f"more than {line_limit} character edits on one line"
    return total, ""


def typo_fix(
    hunks: Sequence[Hunk] | None,
    *,
    line_limit: int = MAX_LINE_EDITS,
    file_limit: int = MAX_FILE_EDITS,
    extra_words: Sequence[str] = (),
    language: str = "en",
) -> Carve:
    """True when every hunk only corrects spelling: k lines for k lines, misspelling → word."""
    if hunks is None:
        return Carve(False, "patch unavailable")
    if not hunks:
        return Carve(False, "no textual change to inspect")
    try:
        words = load(language).with_extra(extra_words)
    except DictionaryError as exc:
        return Carve(False, f"{exc}: typo fixes cannot be proven (fail closed)")
    total = 0
    for h in hunks:
        for removed, added in h.blocks():
            if len(removed) != len(added):
                where = (removed or added)[0]
                n = where.new_no or where.old_no
                return Carve(False, f"line {n}: lines added or removed, not a typo fix")
            for r, a in zip(removed, added, strict=True):
                d, why = typo_pair(r.text, a.text, line_limit, words=words)
                if d < 0:
                    return Carve(False, f"line {a.new_no}: {why}")
                total += d
                if total > file_limit:
                    return Carve(False, f"more than {file_limit} character edits in the file")
    return Carve(True, "typo fix only")


def prose_typo_fix(
    path: str,
    hunks: Sequence[Hunk] | None,
    texts: tuple[str | None, str | None] = (None, None),
    *,
    extra_words: Sequence[str] = (),
) -> Carve:
    """`typo_fix` for a file by its path: only a prose file can hold a typo fix (in code,
    SQL or data a corrected word is a changed instruction or value), and only outside its
    code (`prose.code_in_prose`, on the whole base and head `texts` where it has blocks)."""
    if not is_prose(path):
        return Carve(
            False,
            f"{path} is not {prose_kinds()}: a typo fix is carved out in prose only, since in "
            "code, SQL or data a corrected word changes what runs or what is read",
        )
    why = code_in_prose(path, hunks, texts) if hunks else ""
    if why:
        return Carve(False, f"{why}: a typo fix is carved out in prose only")
    return typo_fix(hunks, extra_words=extra_words)


# ----------------------------------------------------------------------------- additions
def additions_only(hunks: Sequence[Hunk] | None) -> Carve:
    """True when no hunk removes or changes a line (and there is at least one added line)."""
    if hunks is None:
        return Carve(False, "patch unavailable")
    if any(h.has_removals for h in hunks):
        where = next(ln.old_no for h in hunks for ln in h.lines if ln.kind == "-")
        return Carve(False, f"line {where} removed or changed")
    if not any(h.added_texts() for h in hunks):
        return Carve(False, "no added lines")
    return Carve(True, "additions only")

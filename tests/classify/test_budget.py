"""Adversarial typo pairs and the classification budget: bounded work, fail closed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.classify import classify
from capdaemon.classify.budget import BUDGET_REASON, Budget
from capdaemon.classify.carveouts import MAX_TYPO_WORD, osa_distance, typo_fix, typo_pair
from capdaemon.classify.hunks import parse_patch

from .classify_builders import NOW, base_config, make_patch, modified, snapshot


def _reference_osa(a: str, b: str) -> int:
    """Plain full-table optimal-string-alignment distance (the textbook recurrence)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _reference_levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


_small = st.text(alphabet="abcx", max_size=12)


@settings(max_examples=300, deadline=None)
@given(a=_small, b=_small, limit=st.integers(min_value=0, max_value=6))
def test_banded_distance_agrees_with_the_reference(a: str, b: str, limit: int) -> None:
    """Within the limit the banded distance is exact; past it, it says limit + 1."""
    ref = _reference_osa(a, b)
    assert osa_distance(a, b, limit) == min(ref, limit + 1)
    # OSA is Levenshtein plus adjacent swaps: never more, and swaps save at most half
    lev = _reference_levenshtein(a, b)
    assert ref <= lev <= 2 * ref


def test_the_quadratic_pair_is_refused_at_4000_and_65536() -> None:
    """`x a…a y` → `y a…a x`: 20 s at N=4,000 before; now refused as a word no typo fixes."""
    for n in (4_000, 65_536):
        old, new = "x" + "a" * n + "y", "y" + "a" * n + "x"
        assert typo_pair(old, new) == (-1, f"a word over {MAX_TYPO_WORD} characters changed")
        # the distance itself is bounded work too (band of the limit), and exact
        assert osa_distance(old, new, 3) == 2
        carve = typo_fix(parse_patch(make_patch(["intro " + old], ["intro " + new])))
        assert not carve and "over 64 characters" in carve.why


def test_real_typos_still_pass() -> None:
    """The bound changes nothing for ordinary words."""
    assert typo_pair("The classifer decides.", "The classifier decides.") == (1, "")
    assert typo_pair("teh rule", "the rule") == (1, "")
    assert typo_pair("a rule", "a mode") == (-1, "a word was replaced, not corrected")


def _doctrine_change(n: int):  # type: ignore[no-untyped-def]
    old, new = "x" + "a" * n + "y", "y" + "a" * n + "x"
    return modified(
        "docs/concepts/four-quadrants.md",
        ["intro " + old],
        ["intro " + new],
        base_content=f"intro {old}\n",
        head_content=f"intro {new}\n",
    )


def test_the_quadratic_pair_in_a_doctrine_file_is_critical() -> None:
    """The docs/concepts/ typo carve-out no longer applies: the file is a rule change."""
    v = classify(snapshot(_doctrine_change(4_000)), base_config(), now=NOW)
    (f,) = v.files
    assert f.critical
    assert any("not a typo fix" in r and "over 64 characters" in r for r in f.reasons)


def test_a_file_over_the_size_budget_is_critical_and_irreversible() -> None:
    """Past the per-file size budget a harmless README edit fails closed, naming the budget."""
    big = modified("README.md", ["x" * 50], ["y" * 50])
    small = modified("README.md", ["a"], ["b"])
    v = classify(snapshot(big, small), base_config(), now=NOW, budget=Budget(file_chars=80))
    f_big, f_small = v.files
    assert (f_big.critical, f_big.irreversible, f_big.quadrant.value) == (True, True, "D")
    assert f_big.reasons[0].startswith(f"critical: {BUDGET_REASON}: ")
    assert "per file" in f_big.reasons[0]
    assert not f_small.critical and v.quadrant.value == "D"
    assert BUDGET_REASON in v.reasoning


def test_a_pr_over_the_size_budget_fails_closed_for_the_rest() -> None:
    """Files after the per-PR size budget is spent are not read, and fail closed."""
    files = [modified(f"docs/{i}.md", ["a"], ["b"]) for i in range(4)]
    size = len(files[0].patch or "")
    v = classify(snapshot(*files), base_config(), now=NOW, budget=Budget(pr_chars=2 * size))
    flags = [BUDGET_REASON in f.reasons[0] for f in v.files]
    assert flags == [False, False, True, True]
    assert "the PR is over" in v.files[2].reasons[0]


class _StepClock:
    """A clock that advances `step` seconds each time it is read (a slow machine, simulated)."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_time_budgets_fail_closed_instead_of_stalling() -> None:
    """A file slower than its share, and every file after the PR's time, are critical."""
    files = [modified(f"docs/{i}.md", ["a"], ["b"]) for i in range(5)]
    slow_files = Budget(file_seconds=0.5, clock=_StepClock(1.0))
    v = classify(snapshot(*files), base_config(), now=NOW, budget=slow_files)
    assert all("the file took over 0.5 s" in f.reasons[0] for f in v.files)
    slow_pr = Budget(pr_seconds=4.5, file_seconds=100, clock=_StepClock(1.0))
    v = classify(snapshot(*files), base_config(), now=NOW, budget=slow_pr)
    flags = [BUDGET_REASON in f.reasons[0] for f in v.files]
    assert flags == [False, False, True, True, True]
    assert "the PR took over 4.5 s" in v.files[2].reasons[1]

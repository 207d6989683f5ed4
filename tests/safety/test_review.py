"""Random human review (SPEC 6.6): a stable sample, and a passive issue for a sampled auto-merge."""

from __future__ import annotations

from capdaemon.decide.review import sampled

from .conftest import SafetyHarness


def test_sample_is_stable_for_the_same_pr_and_head() -> None:
    """The same PR and head always give the same answer; about 10 % are picked."""
    picks = [sampled("acme/widgets", n, f"{n:040x}", 0.10) for n in range(2000)]
    assert picks == [sampled("ACME/widgets", n, f"{n:040X}", 0.10) for n in range(2000)]
    assert 150 < sum(picks) < 250


def test_sampled_auto_merge_gets_a_random_review_issue(safe: SafetyHarness) -> None:
    """With share 1.0 every auto-merge gets one decision:random-review issue, never two."""
    safe.configure(random_review_share=1.0)
    number = safe.open_pr({"examples/old.py": "print('v2')\n"})
    safe.tick()
    safe.step7()
    safe.tick()
    issues = safe.issues("random-review")
    assert len(issues) == 1 and "decision:random-review" in [lb.name for lb in issues[0].labels]
    assert len(safe.actions("random_review", number)) == 1


def test_share_zero_opens_nothing(safe: SafetyHarness) -> None:
    """With share 0 no auto-merge is sampled."""
    safe.configure(random_review_share=0.0)
    safe.open_pr({"examples/old.py": "print('v2')\n"})
    safe.tick()
    safe.step7()
    assert not safe.issues("random-review")

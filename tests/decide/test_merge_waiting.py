"""Which waiting PRs a check completing may let merge (the change detector watches those)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from capdaemon.decide.merge import (
    RequiredCheck,
    merge_readiness,
    waiting_check_feed,
    waits_only_on_checks,
)

from .test_merge import BASE, CI, L1C3, TRIPPED


@pytest.mark.parametrize(
    "change",
    [
        {"checks": (L1C3,)},  # ci has not reported
        {"checks": (L1C3, replace(CI, status="in_progress", conclusion=None))},
        {"checks": (L1C3, replace(CI, conclusion="failure"))},  # a re-run may pass
        {"checks": (L1C3,), "mergeable": None},  # unknown mergeability is re-read on its own
        {"extra_checks": ("lint",)},
    ],
)
def test_a_pr_held_only_by_checks_is_watched(change: dict[str, object]) -> None:
    facts = replace(BASE, **change)  # type: ignore[arg-type]
    assert not merge_readiness(facts).ok and waits_only_on_checks(facts)


@pytest.mark.parametrize(
    "change",
    [
        {},  # ready: nothing to wait for
        {"checks": (L1C3,), "draft": True},
        {"checks": (L1C3,), "labels": ("Do-Not-Merge",)},
        {"checks": (L1C3,), "mergeable": False},  # conflicts: a check does not fix that
        {"checks": (CI,)},  # our own L1.C3 missing: the tick's business, not outside CI's
        {"checks": (L1C3,), "breaker": TRIPPED},
        {"checks": (L1C3,), "capability_reasons": ("out of scope",)},
    ],
)
def test_a_pr_held_by_anything_else_is_not_watched(change: dict[str, object]) -> None:
    assert not waits_only_on_checks(replace(BASE, **change))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "feed"),
    [
        # an unpinned protection context: a commit status may meet it (GitHub's rule)
        ({"checks": (L1C3,)}, "checks"),
        # pinned to an App, or an extra check (App check runs only): a status never meets it
        ({"checks": (L1C3,), "required_checks": (RequiredCheck("ci", 7),)}, "check-runs"),
        ({"checks": (L1C3, CI), "extra_checks": ("lint",)}, "check-runs"),
        # unpinned ci already green, the App-only lint missing: only check runs can move it
        (
            {"checks": (L1C3, CI), "required_checks": ("ci",), "extra_checks": ("lint",)},
            "check-runs",
        ),
        # both missing: the unpinned one needs the statuses read too
        ({"checks": (L1C3,), "required_checks": ("ci",), "extra_checks": ("lint",)}, "checks"),
    ],
)
def test_the_feed_watched_is_the_one_a_missing_check_can_come_from(
    change: dict[str, object], feed: str
) -> None:
    facts = replace(BASE, **change)  # type: ignore[arg-type]
    assert waits_only_on_checks(facts) and waiting_check_feed(facts) == feed

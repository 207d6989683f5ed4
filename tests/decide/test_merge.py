"""Merge readiness (SPEC 4): each condition blocks on its own; the breaker's one exception."""

from __future__ import annotations

from dataclasses import replace

import pytest

from capdaemon.decide.ballot import BallotOutcome, BallotStatus
from capdaemon.decide.breaker import BreakerState, Incident, IncidentKind
from capdaemon.decide.merge import MergeAction, MergeFacts, RequiredCheck, merge_readiness
from capdaemon.decide.tiers import OneTapResult, OneTapState, Requirement, TierDecision
from capdaemon.model import CheckRun, Quadrant

from .factories import at

HEAD = "a" * 40
OLD = "b" * 40
L1C3 = CheckRun("L1.C3", "completed", "success", app_slug="capdaemon", app_id=42,
                completed_at=at(1), id=1)  # fmt: skip
CI = CheckRun("ci", "completed", "success", completed_at=at(1), id=2)
TRIPPED = BreakerState((Incident(at(0), IncidentKind.PROBE_FAILED),), True, at(0))
TIER1 = TierDecision(1, (), "tiered")


def approved(sha: str = HEAD, status: BallotStatus = BallotStatus.APPROVED) -> BallotOutcome:
    """A ballot outcome for sha."""
    return BallotOutcome(status, sha, "by alice")


BASE = MergeFacts(
    head_sha=HEAD,
    quadrant=Quadrant.A,
    tier=TIER1,
    checks=(L1C3, CI),
    required_checks=("ci",),
    mergeable=True,
    l1c3_app_id=42,
)


def test_all_conditions_met_merges() -> None:
    """With everything green the PR merges."""
    r = merge_readiness(BASE)
    assert r.ok and r.reasons == () and r.action is MergeAction.MERGE


BLOCK_CASES = [
    ("no-l1c3", {"checks": (CI,)}, "L1.C3 has not reported"),
    (
        "l1c3-failure",
        {"checks": (replace(L1C3, conclusion="failure"), CI)},
        "L1.C3 concluded failure",
    ),
    ("l1c3-from-other-app", {"checks": (replace(L1C3, app_id=7), CI)}, "L1.C3 has not reported"),
    (
        "l1c3-running",
        {"checks": (replace(L1C3, status="in_progress", conclusion=None), CI)},
        "in_progress",
    ),
    (
        "l1c3-newest-run-counts",
        {"checks": (L1C3, replace(L1C3, conclusion="failure", completed_at=at(5), id=9), CI)},
        "concluded failure",
    ),
    ("required-missing", {"checks": (L1C3,)}, "required check ci has not reported"),
    (
        "required-failed",
        {"checks": (L1C3, replace(CI, conclusion="failure"))},
        "ci concluded failure",
    ),
    (
        "required-neutral",
        {"checks": (L1C3, replace(CI, conclusion="neutral"))},
        "ci concluded neutral",
    ),
    ("extra-check-missing", {"extra_checks": ("lint",)}, "required check lint"),
    ("draft", {"draft": True}, "draft"),
    ("blocking-label", {"labels": ("Do-Not-Merge",)}, "blocking label"),
    ("mergeable-unknown", {"mergeable": None}, "not mergeable (unknown yet)"),
    ("conflicts", {"mergeable": False}, "conflicts"),
    ("breaker-tripped", {"breaker": TRIPPED}, "breaker tripped"),
    ("capability", {"capability_reasons": ("path x outside scope",)}, "capability: path x"),
    ("manual-policy", {"tier": TierDecision(1, (), "manual")}, "merge_policy manual"),
    ("d-no-ballot", {"quadrant": Quadrant.D}, "waiting for an owner ballot"),
    (
        "d-approved-old-head",
        {"quadrant": Quadrant.D, "ballot": approved(OLD)},
        "not this head",
    ),
    (
        "d-deferred",
        {"quadrant": Quadrant.D, "ballot": approved(status=BallotStatus.DEFERRED)},
        "deferred",
    ),
    (
        "d-rejected",
        {"quadrant": Quadrant.D, "ballot": approved(status=BallotStatus.REJECTED)},
        "rejected",
    ),
    (
        "d-pending",
        {"quadrant": Quadrant.D, "ballot": approved(status=BallotStatus.PENDING)},
        "pending",
    ),
    (
        "tier2-one-tap-pending",
        {"tier": TierDecision(2, ("lockfile",)), "one_tap": OneTapResult(OneTapState.PENDING, "w")},
        "one-tap",
    ),
    (
        "tier2-one-tap-expired",
        {"tier": TierDecision(2, ("lockfile",)), "one_tap": OneTapResult(OneTapState.EXPIRED, "x")},
        "tier 2: waiting for an owner ballot",
    ),
    ("tier3-no-ballot", {"tier": TierDecision(3, ("CLAUDE.md",))}, "tier 3: waiting"),
    (
        "tier3-floor-under-auto",
        {"tier": TierDecision(3, ("CLAUDE.md",), "auto")},
        "tier 3: waiting for an owner ballot",
    ),
    (
        "tripped-unverified-revert-c",
        {"breaker": TRIPPED, "quadrant": Quadrant.C, "verified_auto_revert": False},
        "breaker tripped",
    ),
    (
        "tripped-verified-revert-d",
        {
            "breaker": TRIPPED,
            "quadrant": Quadrant.D,
            "verified_auto_revert": True,
            "ballot": approved(),
        },
        "not C or lower",
    ),
    (
        "tripped-verified-revert-b",
        {"breaker": TRIPPED, "quadrant": Quadrant.B, "verified_auto_revert": True},
        "not C or lower",
    ),
    (
        "tripped-approved-d",
        {"breaker": TRIPPED, "quadrant": Quadrant.D, "ballot": approved()},
        "tripped",
    ),
]


@pytest.mark.parametrize(
    ("change", "reason"), [c[1:] for c in BLOCK_CASES], ids=[c[0] for c in BLOCK_CASES]
)
def test_each_condition_blocks(change: dict, reason: str) -> None:
    """One failing condition makes the PR wait, with a readable reason."""
    r = merge_readiness(replace(BASE, **change))
    assert not r.ok and r.action is MergeAction.WAIT
    assert any(reason in x for x in r.reasons), r.reasons


OK_CASES = [
    ("d-approved-head", {"quadrant": Quadrant.D, "ballot": approved()}),
    (
        "d-approved-alternate",
        {"quadrant": Quadrant.D, "ballot": approved(status=BallotStatus.APPROVED_ALTERNATE)},
    ),
    ("b-quadrant", {"quadrant": Quadrant.B}),
    ("c-quadrant", {"quadrant": Quadrant.C}),
    ("auto-policy-skips-one-tap", {"tier": TierDecision(2, ("lockfile",), "auto")}),
    (
        "tier2-one-tap-approved",
        {
            "tier": TierDecision(2, ("lockfile",)),
            "one_tap": OneTapResult(OneTapState.APPROVED, "ok", "alice"),
        },
    ),
    (
        "tier2-expired-then-ballot-approved",
        {
            "tier": TierDecision(2, ("lockfile",)),
            "one_tap": OneTapResult(OneTapState.EXPIRED, "x"),
            "ballot": approved(),
        },
    ),
    ("tier3-ballot-approved", {"tier": TierDecision(3, ("CLAUDE.md",)), "ballot": approved()}),
    (
        "tripped-verified-revert-c",
        {"breaker": TRIPPED, "quadrant": Quadrant.C, "verified_auto_revert": True},
    ),
    (
        "tripped-verified-revert-a",
        {"breaker": TRIPPED, "quadrant": Quadrant.A, "verified_auto_revert": True},
    ),
    (
        "l1c3-any-app-when-unpinned",
        {"l1c3_app_id": None, "checks": (replace(L1C3, app_id=None), CI)},
    ),
]


@pytest.mark.parametrize("change", [c[1] for c in OK_CASES], ids=[c[0] for c in OK_CASES])
def test_mergeable_cases(change: dict) -> None:
    """These combinations may merge."""
    r = merge_readiness(replace(BASE, **change))
    assert r.ok, r.reasons


def test_all_reasons_listed() -> None:
    """Several failing conditions are all reported, not only the first."""
    r = merge_readiness(replace(BASE, draft=True, mergeable=False, labels=("do-not-merge",)))
    assert len(r.reasons) == 3


def test_shadow_mode_would_merge() -> None:
    """Shadow mode computes ok but the action is WOULD_MERGE."""
    r = merge_readiness(replace(BASE, shadow=True))
    assert r.ok and r.shadow and r.action is MergeAction.WOULD_MERGE
    assert "shadow" in r.reasons[0]
    blocked = merge_readiness(replace(BASE, shadow=True, draft=True))
    assert blocked.action is MergeAction.WAIT


def test_requirement_reported() -> None:
    """The effective requirement is part of the result."""
    assert merge_readiness(replace(BASE, quadrant=Quadrant.D)).requirement is Requirement.BALLOT


# ----------------------------------------------------------------------------- pinned checks (R7)
APP_CI = CheckRun("ci/build", "completed", "success", app_slug="ci-app", app_id=7,
                  completed_at=at(1), id=20)  # fmt: skip
EVIL_CI = replace(APP_CI, app_slug="evil", app_id=666, id=21)
STATUS_CI = CheckRun("ci/build", "completed", "success", completed_at=at(2), id=22)  # no App

PIN_CASES = [
    # (id, required_checks, extra_checks, checks, ok)
    ("protection-unpinned-status-ok", ("ci/build",), (), (STATUS_CI,), True),
    ("protection-pinned-right-app", (("ci/build", 7),), (), (APP_CI,), True),
    ("protection-pinned-other-app", (("ci/build", 7),), (), (EVIL_CI,), False),
    ("protection-pinned-status-never", (("ci/build", 7),), (), (STATUS_CI,), False),
    ("protection-any-app-minus-one", (("ci/build", -1),), (), (STATUS_CI,), True),
    ("extra-name-status-never", (), ("ci/build",), (STATUS_CI,), False),
    ("extra-name-any-app-run", (), ("ci/build",), (EVIL_CI,), True),
    ("extra-pinned-right-app", (), (RequiredCheck("ci/build", 7, True),), (APP_CI,), True),
    ("extra-pinned-other-app", (), (RequiredCheck("ci/build", 7, True),), (EVIL_CI,), False),
    # a newer failing run from the pinned App wins over an older success
    (
        "pinned-newest-of-that-app",
        (("ci/build", 7),),
        (),
        (APP_CI, replace(APP_CI, conclusion="failure", completed_at=at(3), id=23)),
        False,
    ),
    # a forged success from another App never hides the pinned App's failure
    (
        "pinned-forged-newer-success-ignored",
        (("ci/build", 7),),
        (),
        (replace(APP_CI, conclusion="failure"), replace(EVIL_CI, completed_at=at(9))),
        False,
    ),
    # the same context required by protection (any source) and extra (apps only): both apply
    ("both-status-only", ("ci/build",), ("ci/build",), (STATUS_CI,), False),
]


@pytest.mark.parametrize(
    ("required", "extra", "checks", "ok"),
    [c[1:] for c in PIN_CASES],
    ids=[c[0] for c in PIN_CASES],
)
def test_pinned_and_extra_checks(required, extra, checks, ok) -> None:
    """A pinned check counts only runs of its App; an unpinned extra check only App runs."""
    facts = replace(BASE, required_checks=required, extra_checks=extra, checks=(L1C3, *checks))
    r = merge_readiness(facts)
    assert r.ok is ok, r.reasons
    if not ok:
        assert any("ci/build" in reason for reason in r.reasons)


def test_required_check_of_config_like_objects() -> None:
    """RequiredCheck.of accepts names, pairs and objects with .context/.app_id."""

    class Spec:
        context, app_id = "lint", 5

    assert RequiredCheck.of(Spec(), apps_only=True) == RequiredCheck("lint", 5, True)
    assert RequiredCheck.of(("lint", None), apps_only=False) == RequiredCheck("lint")
    with pytest.raises(TypeError):
        RequiredCheck.of(42, apps_only=False)

"""Ballot rounds: bound to (head sha, base ref); a rejection capdaemon acted on ends a round."""

from __future__ import annotations

import json

import pytest

from capdaemon.config import BreakerConfig
from capdaemon.decide.ballot import BallotStatus, resolve_ballot
from capdaemon.decide.breaker import BreakerState, Incident, IncidentKind, record_incident
from capdaemon.decide.rounds import (
    REJECTED_BEFORE,
    BallotRound,
    RoundReason,
    after_rejection_tier,
    next_round,
)
from capdaemon.decide.tiers import Requirement, TierDecision

from .factories import at, comment

HEAD, OTHER = "a" * 40, "b" * 40


def _first(base: str = "main") -> BallotRound:
    rnd, why = next_round(None, repo="o/r", pr=7, head_sha=HEAD, base_ref=base, now=at(0))
    assert why is None and rnd.round == 1 and rnd.base_ref == base
    return rnd


def _next(prior: BallotRound, head: str = HEAD, base: str = "main", **kw: bool):
    return next_round(prior, repo="o/r", pr=7, head_sha=head, base_ref=base, now=at(10), **kw)


def test_same_head_and_base_is_the_same_round() -> None:
    """Nothing changed → the very same round (its stale votes kept)."""
    prior = _first().with_stale_votes({"comment:3"})
    assert _next(prior) == (prior, None)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"head": OTHER}, RoundReason.HEAD_CHANGED),
        ({"base": "release"}, RoundReason.BASE_CHANGED),
    ],
)
def test_head_or_base_change_is_a_new_round(change: dict[str, str], reason: RoundReason) -> None:
    """A push or a retarget → round 2 bound to the new (head, base), no stale votes yet."""
    prior = _first().with_stale_votes({"comment:3"})
    rnd, why = _next(prior, **change)
    assert why is reason and rnd.round == 2 and rnd.started_at == at(10)
    assert (rnd.head_sha, rnd.base_ref) == (change.get("head", HEAD), change.get("base", "main"))
    assert rnd.stale_vote_ids == frozenset()


def test_retargeted_away_and_back_is_a_new_round() -> None:
    """A round noted as having left for `release` is not the same round back on main."""
    prior = _first().left_for("release")
    rnd, why = _next(prior, base="main")
    assert why is RoundReason.BASE_CHANGED and rnd.round == 2 and rnd.base_ref == "main"


def test_a_rejected_round_is_over_whatever_the_head() -> None:
    """A rejection capdaemon acted on, the PR closed and reopened → round 2 (same head or a
    new one), and every later round remembers the rejection."""
    prior = _first().rejected(at(5)).seen_reopened()
    for head in (HEAD, OTHER):
        rnd, why = _next(prior, head=head)
        assert why is RoundReason.REOPENED_AFTER_REJECTION if head == HEAD else why
        assert rnd.round == 2 and rnd.rejected_at is None and not rnd.reopened
        assert rnd.after_rejection
        assert _next(rnd, head=head) == (rnd, None)  # one new round, not one per tick
        assert _next(rnd, head=head, base="release")[0].after_rejection


def test_a_rejection_not_yet_closed_holds_the_round() -> None:
    """Rejected, but the PR never seen closed (the close failed): nothing rebinds the round, not
    a push, not a retarget, not a restored issue (the close is retried instead)."""
    prior = _first().rejected(at(5))
    for change in ({"head": OTHER}, {"base": "release"}, {"issue_restored": True}):
        assert _next(prior, **change) == (prior, None)  # type: ignore[arg-type]
    assert _first().seen_reopened() == _first()  # only a rejected round notes a reopen


def test_votes_before_a_rejected_round_never_count_again() -> None:
    """bob's approval (on the issue when round 2 starts) is stale in round 2, even with the
    rejecting comment gone."""
    prior = _first().rejected(at(5)).seen_reopened()
    rnd, _ = _next(prior)
    approval = comment("bob", "/approve A", at(1))
    rnd = rnd.with_stale_votes({f"comment:{approval.id}"})
    facts = rnd.facts(
        owners={"bob", "alice"},
        pr_author="agent-1",
        bot_login="capdaemon[bot]",
        comments=[approval],
    )
    outcome = resolve_ballot(facts, at(11))
    assert outcome.status is BallotStatus.PENDING
    assert "before this round" in outcome.ignored[0].reason


def test_issue_restored_is_a_new_round_and_legacy_base_is_adopted() -> None:
    """An edited-and-restored ballot is a new round; a round recorded before bases were bound
    adopts the base it is seen on (same round)."""
    prior = _first()
    assert _next(prior, issue_restored=True)[1] is RoundReason.ISSUE_RESTORED
    legacy = BallotRound("o/r", 7, HEAD, at(0), 3, 17)
    rnd, why = _next(legacy)
    assert why is None and rnd.round == 3 and rnd.base_ref == "main"


@pytest.mark.parametrize("base", ["main", "release/2.x", ""])
@pytest.mark.parametrize("rejected", [False, True])
@pytest.mark.parametrize("stale", [set(), {"comment:4", "reaction:9"}])
def test_json_round_trip(base: str, rejected: bool, stale: set[str]) -> None:
    """Every round survives bot-state's JSON."""
    rnd = BallotRound("o/r", 7, HEAD, at(0), 2, 17, frozenset(stale), base)
    if rejected:
        rnd = rnd.rejected(at(3)).seen_reopened()
    assert BallotRound.from_json(json.loads(json.dumps(rnd.to_json()))) == rnd


def test_malformed_rejected_at_names_the_field() -> None:
    """A damaged `rejected_at` is refused with the field named."""
    data = {**_first().to_json(), "rejected_at": 5}
    with pytest.raises(ValueError, match=r"ballot_round\.rejected_at"):
        BallotRound.from_json(data)


def test_a_wrong_base_merge_trips_the_breaker_at_once() -> None:
    """One wrong_base incident trips the breaker (threshold 3); one probe failure does not."""
    cfg = BreakerConfig(threshold=3, window_hours=24)
    s, _ = record_incident(BreakerState(), Incident(at(0), IncidentKind.PROBE_FAILED), at(0), cfg)
    assert not s.tripped
    s, actions = record_incident(
        BreakerState(), Incident(at(0), IncidentKind.WRONG_BASE, "into release"), at(0), cfg
    )
    assert s.tripped
    assert any(a.payload.get("action") == "breaker.tripped" for a in actions)


@pytest.mark.parametrize(
    ("tier", "after", "want"),
    [
        (TierDecision(1, (), "auto"), False, Requirement.NONE),
        (TierDecision(1, (), "auto"), True, Requirement.BALLOT),
        (TierDecision(2, ("x",), "tiered"), True, Requirement.BALLOT),
        (TierDecision(1, (), "manual"), True, Requirement.NEVER),
    ],
)
def test_a_pr_rejected_once_needs_a_ballot(tier: TierDecision, after: bool, want: Requirement):
    """After a rejection, whatever the head's quadrant or tier: an owner's approval (manual stays
    manual: a human merges)."""
    got = after_rejection_tier(tier, after)
    assert got.requirement is want
    if after and want is Requirement.BALLOT:
        assert REJECTED_BEFORE in got.reasons

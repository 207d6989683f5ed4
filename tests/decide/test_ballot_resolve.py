"""Ballot resolution: who counts, binding to the head, edits, conflicts, newest answer wins."""

from __future__ import annotations

from datetime import datetime

import pytest

from capdaemon.decide.ballot import BallotFacts, BallotStatus, resolve_ballot
from capdaemon.decide.labels import Label
from capdaemon.decide.rounds import BallotRound

from .factories import at, comment, reaction

OWNERS = frozenset({"alice", "bob", "carol"})
AUTHOR = "carol"  # an owner who wrote the PR
BOT = "capdaemon[bot]"
HEAD = "a" * 40
S = BallotStatus


def facts(comments=(), reactions=(), *, start: datetime | None = None, **kw) -> BallotFacts:
    """Ballot facts with the usual owners, author and bot."""
    return BallotFacts(
        owners=OWNERS,
        pr_author=AUTHOR,
        bot_login=BOT,
        head_sha=HEAD,
        round_started_at=start or at(0),
        comments=tuple(comments),
        reactions=tuple(reactions),
        **kw,
    )


NOW = at(hours=5)

STATUS_CASES = [
    ("no-answer", [], [], S.PENDING),
    ("approve-a-comment", [comment("alice", "/approve A", at(1))], [], S.APPROVED),
    ("thumbs-up", [], [reaction("alice", "+1", at(1))], S.APPROVED),
    ("approve-b", [comment("alice", "/approve B", at(1))], [], S.APPROVED_ALTERNATE),
    ("approve-c-defers", [comment("alice", "/approve C", at(1))], [], S.DEFERRED),
    ("reject", [comment("bob", "/reject", at(1))], [], S.REJECTED),
    ("thumbs-down", [], [reaction("bob", "-1", at(1))], S.REJECTED),
    ("other-reactions-ignored", [], [reaction("alice", "heart", at(1))], S.PENDING),
    ("owner-login-case-insensitive", [comment("Alice", "/approve A", at(1))], [], S.APPROVED),
    ("non-owner-vote", [comment("mallory", "/approve A", at(1))], [], S.PENDING),
    ("non-owner-thumbs-up", [], [reaction("mallory", "+1", at(1))], S.PENDING),
    ("author-owner-approves-own-pr", [comment("carol", "/approve A", at(1))], [], S.PENDING),
    ("author-owner-thumbs-up", [], [reaction("carol", "+1", at(1))], S.PENDING),
    ("author-case-insensitive", [], [reaction("CAROL", "+1", at(1))], S.PENDING),
    ("bot-own-comment", [comment(BOT, "/approve A", at(1))], [], S.PENDING),
    ("bot-own-reaction", [], [reaction(BOT, "+1", at(1))], S.PENDING),
    ("edited-comment", [comment("alice", "/approve A", at(1), edited=at(3))], [], S.PENDING),
    (
        "edited-in-the-same-second",
        [comment("alice", "/approve A", at(1), edited=at(1))],
        [],
        S.PENDING,
    ),
    (
        "no-edit-record",
        [comment("alice", "/approve A", at(1), edit_record=False)],
        [reaction("bob", "heart", at(2))],
        S.PENDING,
    ),
    (
        "no-edit-record-reaction-still-counts",
        [comment("alice", "/approve A", at(1), edit_record=False)],
        [reaction("bob", "+1", at(2))],
        S.APPROVED,
    ),
    ("vote-before-round", [comment("alice", "/approve A", at(-1))], [], S.PENDING),
    ("reaction-before-round", [], [reaction("alice", "+1", at(-1))], S.PENDING),
    (
        "defer-then-approve",
        [comment("alice", "/approve C", at(1)), comment("bob", "/approve A", at(2))],
        [],
        S.APPROVED,
    ),
    (
        "defer-then-reject",
        [comment("alice", "/approve C", at(1)), comment("alice", "/reject", at(2))],
        [],
        S.REJECTED,
    ),
    (
        "approve-then-reject-newest-wins",
        [comment("alice", "/approve A", at(1)), comment("bob", "/reject", at(2))],
        [],
        S.REJECTED,
    ),
    (
        "reject-then-approve-newest-wins",
        [comment("bob", "/reject", at(1)), comment("alice", "/approve A", at(2))],
        [],
        S.APPROVED,
    ),
    (
        "conflicting-reactions",
        [],
        [reaction("alice", "+1", at(1)), reaction("bob", "-1", at(2))],
        S.PENDING,
    ),
    (
        "same-owner-both-reactions",
        [],
        [reaction("alice", "+1", at(1)), reaction("alice", "-1", at(2))],
        S.PENDING,
    ),
    (
        "conflict-settled-by-later-command",
        [comment("alice", "/approve A", at(3))],
        [reaction("alice", "+1", at(1)), reaction("bob", "-1", at(2))],
        S.APPROVED,
    ),
    (
        "conflict-after-command-pending",
        [comment("alice", "/approve C", at(1))],
        [reaction("alice", "+1", at(2)), reaction("bob", "-1", at(3))],
        S.PENDING,
    ),
    (
        "reaction-after-command-wins",
        [comment("alice", "/approve C", at(1))],
        [reaction("bob", "+1", at(2))],
        S.APPROVED,
    ),
    (
        "command-after-reaction-wins",
        [comment("bob", "/reject", at(2))],
        [reaction("alice", "+1", at(1))],
        S.REJECTED,
    ),
    (
        "command-wins-tie-with-reaction",
        [comment("bob", "/reject", at(2))],
        [reaction("alice", "+1", at(2))],
        S.REJECTED,
    ),
    (
        "conflict-counts-only-owners",
        [],
        [reaction("alice", "+1", at(1)), reaction("mallory", "-1", at(2))],
        S.APPROVED,
    ),
    ("command-in-code-block", [comment("alice", "```\n/approve A\n```", at(1))], [], S.PENDING),
    ("command-in-quote", [comment("alice", "> /approve A", at(1))], [], S.PENDING),
    ("unknown-command", [comment("alice", "/lgtm", at(1))], [], S.PENDING),
    ("breaker-reset-on-ballot", [comment("alice", "/breaker reset", at(1))], [], S.PENDING),
    (
        "non-owner-cannot-override-owner",
        [comment("alice", "/approve A", at(1)), comment("mallory", "/reject", at(2))],
        [],
        S.APPROVED,
    ),
]


@pytest.mark.parametrize(
    ("comments", "reactions", "expected"),
    [c[1:] for c in STATUS_CASES],
    ids=[c[0] for c in STATUS_CASES],
)
def test_resolution_table(comments, reactions, expected: BallotStatus) -> None:
    """Each set of comments and reactions resolves to the expected status."""
    assert resolve_ballot(facts(comments, reactions), NOW).status is expected


IGNORED_CASES = [
    ("non-owner", comment("mallory", "/approve A", at(1)), "not an owner"),
    ("author", comment("carol", "/approve A", at(1)), "PR author"),
    ("bot", comment(BOT, "/approve A", at(1)), "bot's own"),
    ("edited", comment("alice", "/approve A", at(1), edited=at(2)), "edited"),
    ("same-second-edit", comment("alice", "/approve A", at(1), edited=at(1)), "edited"),
    (
        "no-edit-record",
        comment("alice", "/approve A", at(1), edit_record=False),
        "an edit cannot be ruled out",
    ),
    ("old-round", comment("alice", "/approve A", at(-5)), "before this round"),
    ("unknown", comment("alice", "/lgtm", at(1)), "unknown command"),
    ("breaker", comment("alice", "/breaker reset", at(1)), "not a ballot command"),
]


@pytest.mark.parametrize(
    ("item", "reason"), [c[1:] for c in IGNORED_CASES], ids=[c[0] for c in IGNORED_CASES]
)
def test_ignored_votes_carry_reasons(item, reason: str) -> None:
    """Every vote that does not count is returned as ignored with a reason (for the audit)."""
    out = resolve_ballot(facts([item]), NOW)
    assert not out.counted
    assert len(out.ignored) == 1 and reason in out.ignored[0].reason
    assert out.ignored[0].to_dict()["counted"] is False


def test_plain_comments_are_not_votes() -> None:
    """Comments without a command are neither counted nor ignored."""
    out = resolve_ballot(facts([comment("mallory", "lgtm!", at(1))]), NOW)
    assert out.counted == () and out.ignored == ()


def test_deciding_vote_and_reason() -> None:
    """The outcome names the deciding owner and action."""
    out = resolve_ballot(facts([], [reaction("bob", "+1", at(1))]), NOW)
    assert out.decided_by == "bob"
    assert "👍 by bob" in out.reason
    assert out.deciding is not None and out.deciding.key.startswith("reaction:")


def test_push_after_approval_does_not_carry_over() -> None:
    """An approval for the old head does not approve the new head: a new round starts."""
    rnd = BallotRound("o/r", 7, HEAD, at(0))
    approve = comment("alice", "/approve A", at(1))
    old = resolve_ballot(rnd.facts(owners=OWNERS, pr_author=AUTHOR, bot_login=BOT,
                                   comments=[approve]), NOW)  # fmt: skip
    assert old.approves(HEAD)
    new_head = "b" * 40
    rnd2 = rnd.for_head(new_head, at(2))
    assert rnd2.round == 2 and rnd2.started_at == at(2)
    out = resolve_ballot(
        rnd2.facts(owners=OWNERS, pr_author=AUTHOR, bot_login=BOT, comments=[approve]), at(3)
    )
    assert out.status is BallotStatus.PENDING
    assert not out.approves(new_head) and not old.approves(new_head)
    assert "before this round" in out.ignored[0].reason


def test_same_head_keeps_round() -> None:
    """Re-binding to the same head keeps the round and its start."""
    rnd = BallotRound("o/r", 7, HEAD, at(0))
    assert rnd.for_head(HEAD, at(9)) is rnd


def test_deferred_outcome_label_and_not_mergeable() -> None:
    """A deferral labels the issue decision:deferred and is not mergeable."""
    out = resolve_ballot(facts([comment("alice", "/approve C", at(1))]), NOW)
    assert out.labels == (Label.DEFERRED.value,)
    assert not out.approves(HEAD)


def test_approved_alternate_is_mergeable_for_head() -> None:
    """Approve-with-alternate (B) approves exactly the bound head."""
    out = resolve_ballot(facts([comment("alice", "/approve B", at(1))]), NOW)
    assert out.approves(HEAD) and not out.approves("c" * 40)


def test_unknown_commands_answered_once_for_owners_only() -> None:
    """Owners' unknown commands are listed for a reply, once per comment id; others are not."""
    mine = comment("alice", "/lgtm", at(1))
    theirs = comment("mallory", "/lgtm", at(1))
    bots = comment(BOT, "/lgtm", at(1))
    out = resolve_ballot(facts([mine, theirs, bots]), NOW)
    assert [u.comment_id for u in out.unknown_commands] == [mine.id]
    assert "`/approve A`" in out.unknown_commands[0].reply
    again = resolve_ballot(facts([mine], answered_comment_ids=frozenset({mine.id})), NOW)
    assert again.unknown_commands == ()


def test_admins_count_when_passed_as_owners() -> None:
    """owners_include_admins is the daemon passing admins into owners."""
    f = BallotFacts(OWNERS | {"dana"}, AUTHOR, BOT, HEAD, at(0),
                    reactions=(reaction("dana", "+1", at(1)),))  # fmt: skip
    assert resolve_ballot(f, NOW).status is BallotStatus.APPROVED


@pytest.mark.parametrize("which", ["now", "round", "comment"])
def test_naive_datetimes_rejected(which: str) -> None:
    """Naive datetimes raise ValueError wherever they come in."""
    naive = datetime(2026, 5, 25, 12, 0)
    now = naive if which == "now" else NOW
    start = naive if which == "round" else at(0)
    comments = [comment("alice", "/approve A", naive)] if which == "comment" else []
    with pytest.raises(ValueError, match="timezone-aware"):
        resolve_ballot(facts(comments, start=start), now)


def test_outcome_to_dict_is_json() -> None:
    """The outcome's dict form is JSON-serialisable."""
    import json

    out = resolve_ballot(facts([comment("alice", "/approve A", at(1))],
                               [reaction("mallory", "-1", at(2))]), NOW)  # fmt: skip
    data = json.loads(json.dumps(out.to_dict()))
    assert data["status"] == "approved" and data["ignored"][0]["reason"] == "not an owner"


# ----------------------------------------------------------------------------- stale votes (R3)
def test_stale_vote_ids_never_count_whatever_their_time() -> None:
    """Votes already on the issue when the round began are ignored even if stamped after the
    round's start (the daemon's clock ran behind GitHub's)."""
    up = reaction("alice", "+1", at(2))
    cmd = comment("bob", "/approve A", at(3))
    stale = frozenset({f"reaction:{up.id}", f"comment:{cmd.id}"})
    out = resolve_ballot(facts([cmd], [up], start=at(1), stale_vote_ids=stale), NOW)
    assert out.status is S.PENDING and not out.counted
    assert {v.reason for v in out.ignored} == {
        f"before this round (the ballot is bound to {HEAD[:12]})"
    }
    fresh = reaction("alice", "+1", at(4))
    out = resolve_ballot(facts([cmd], [up, fresh], start=at(1), stale_vote_ids=stale), NOW)
    assert out.status is S.APPROVED and out.deciding is not None and out.deciding.ref == fresh.id


def test_stale_unknown_command_is_not_answered() -> None:
    """An owner's unknown command from before the round is not answered again."""
    typo = comment("alice", "/aprove A", at(2))
    out = resolve_ballot(facts([typo], start=at(1), stale_vote_ids={f"comment:{typo.id}"}), NOW)
    assert out.unknown_commands == ()


def test_round_keeps_stale_ids_and_resets_them_per_round() -> None:
    """BallotRound carries stale ids into its facts and JSON; a new round starts empty."""
    r = BallotRound("o/r", 1, HEAD, at(0)).with_stale_votes({"comment:5", "reaction:6"})
    assert r.facts(owners=OWNERS, pr_author=AUTHOR, bot_login=BOT).stale_vote_ids == {
        "comment:5",
        "reaction:6",
    }
    assert BallotRound.from_json(r.to_json()) == r
    assert r.for_head("b" * 40, at(5)).stale_vote_ids == frozenset()
    again = r.restart(at(6))
    assert (again.round, again.head_sha, again.stale_vote_ids) == (2, HEAD, frozenset())
    assert "stale_vote_ids" not in again.to_json()
    with pytest.raises(ValueError, match="stale_vote_ids"):
        BallotRound.from_json({**r.to_json(), "stale_vote_ids": ["x:1"]})

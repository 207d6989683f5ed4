"""Ballot rounds: what a ballot issue decides (head sha, base ref), since when, and when a new
round starts (a push, a retargeted base, a PR reopened after a rejection, a restored ballot)."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from capdaemon.decide._common import aware, dt_to_json, reader
from capdaemon.decide.ballot import BallotFacts, CommentLike, ReactionLike
from capdaemon.decide.tiers import Requirement, TierDecision


class RoundReason(enum.StrEnum):
    """Why a new round starts (the audit log's `ballot_round.reason`)."""

    HEAD_CHANGED = "head_changed"
    BASE_CHANGED = "base_changed"
    REOPENED_AFTER_REJECTION = "reopened_after_rejection"
    ISSUE_RESTORED = "issue_restored"


@dataclass(frozen=True)
class BallotRound:
    """Persisted ballot binding: which (head sha, base ref) the ballot issue currently decides,
    since when, and whether a rejection ended it.

    `base_ref` is "" in rounds recorded before the base was bound: such a round adopts the
    base it is next seen on (capdaemon only ever ballots PRs into the supervised base).
    `rejected_at` is recorded when capdaemon acts on a rejection (before it closes the PR):
    the round is over for good, whatever happens to the votes on the issue afterwards.
    `reopened` is set when the PR is seen open again after it was closed: it then starts a
    new round (see `next_round`); until then the close is retried. `after_rejection` stays
    set in every later round: an owner rejected this PR once, so only an owner's approval
    merges it again, whatever the quadrant of a later head.
    """

    repo: str
    pr: int
    head_sha: str
    started_at: datetime
    round: int = 1
    issue: int | None = None
    stale_vote_ids: frozenset[str] = frozenset()
    base_ref: str = ""
    rejected_at: datetime | None = None
    reopened: bool = False
    after_rejection: bool = False

    def __post_init__(self) -> None:
        aware(self.started_at, "started_at")
        if self.rejected_at is not None:
            aware(self.rejected_at, "rejected_at")
        if self.round < 1:
            raise ValueError(f"round must be >= 1, got {self.round}")
        object.__setattr__(self, "stale_vote_ids", frozenset(self.stale_vote_ids))

    def _next(self, now: datetime, **changes: Any) -> BallotRound:
        aware(now, "now")
        return replace(
            self,
            started_at=now,
            round=self.round + 1,
            stale_vote_ids=frozenset(),
            rejected_at=None,
            reopened=False,
            **changes,
        )

    def for_head(self, head_sha: str, now: datetime) -> BallotRound:
        """The same round for the same head; a new round (votes reset) when the head changed.

        The new round starts with no stale votes: record them with `with_stale_votes` once
        the issue has been read after the rebind.
        """
        aware(now, "now")
        if head_sha == self.head_sha:
            return self
        return self._next(now, head_sha=head_sha)

    def restart(self, now: datetime) -> BallotRound:
        """A new round for the same head (e.g. the ballot body was edited by someone else and
        restored: votes cast on the edited text must not count)."""
        return self._next(now)

    def with_stale_votes(self, ids: Iterable[str]) -> BallotRound:
        """This round with more votes that were cast before it (see BallotFacts)."""
        return replace(self, stale_vote_ids=self.stale_vote_ids | frozenset(ids))

    def rejected(self, now: datetime) -> BallotRound:
        """This round, ended by a rejection capdaemon acts on (recorded before the close)."""
        return replace(self, rejected_at=aware(now, "now"), after_rejection=True)

    def seen_reopened(self) -> BallotRound:
        """This round, noting its PR was closed and is open again (only after a rejection)."""
        return replace(self, reopened=True) if self.rejected_at is not None else self

    def left_for(self, base_ref: str) -> BallotRound:
        """This round, noting that its PR now targets `base_ref` (seen outside the supervised
        base): the binding no longer holds, so its return to any base is a new round."""
        return replace(self, base_ref=base_ref)

    def facts(
        self,
        *,
        owners: Iterable[str],
        pr_author: str,
        bot_login: str,
        comments: Iterable[CommentLike] = (),
        reactions: Iterable[ReactionLike] = (),
        answered_comment_ids: Iterable[int] = (),
    ) -> BallotFacts:
        """BallotFacts bound to this round."""
        return BallotFacts(
            owners=frozenset(o.lower() for o in owners),
            pr_author=pr_author,
            bot_login=bot_login,
            head_sha=self.head_sha,
            round_started_at=self.started_at,
            comments=tuple(comments),
            reactions=tuple(reactions),
            answered_comment_ids=frozenset(answered_comment_ids),
            stale_vote_ids=self.stale_vote_ids,
        )

    def to_json(self) -> dict[str, Any]:
        """JSON form for bot-state (optional fields only when set)."""
        out: dict[str, Any] = {
            "repo": self.repo,
            "pr": self.pr,
            "issue": self.issue,
            "head_sha": self.head_sha,
            "round": self.round,
            "started_at": dt_to_json(self.started_at),
        }
        if self.base_ref:
            out["base_ref"] = self.base_ref
        if self.rejected_at is not None:
            out["rejected_at"] = dt_to_json(self.rejected_at)
        if self.reopened:
            out["reopened"] = True
        if self.after_rejection:
            out["after_rejection"] = True
        if self.stale_vote_ids:
            out["stale_vote_ids"] = sorted(self.stale_vote_ids)
        return out

    @classmethod
    def from_json(cls, data: Any) -> BallotRound:
        """Parse the JSON form; a malformed dict raises ValueError naming the field."""
        r = reader(data, "ballot_round")
        return cls(
            repo=r.text("repo"),
            pr=r.integer("pr", minimum=1),
            issue=r.integer("issue", optional=True, minimum=1),
            head_sha=r.text("head_sha"),
            round=r.integer("round", minimum=1),
            started_at=r.when("started_at"),
            stale_vote_ids=frozenset(_stale_ids(data)),
            base_ref=r.text("base_ref", optional=True) or "",
            rejected_at=r.when("rejected_at", optional=True),
            reopened=bool(r.flag("reopened", optional=True)),
            after_rejection=bool(r.flag("after_rejection", optional=True)),
        )


def _stale_ids(data: Any) -> list[str]:
    raw = data.get("stale_vote_ids", []) if isinstance(data, dict) else []
    if not isinstance(raw, list) or not all(
        isinstance(x, str) and re.fullmatch(r"(?:comment|reaction):\d+", x) for x in raw
    ):
        raise ValueError("ballot_round.stale_vote_ids: expected a list of 'comment:N'/'reaction:N'")
    return raw


def next_round(
    prior: BallotRound | None,
    *,
    repo: str,
    pr: int,
    head_sha: str,
    base_ref: str,
    now: datetime,
    issue_restored: bool = False,
) -> tuple[BallotRound, RoundReason | None]:
    """The round a ballot decides now, and why it is a new one (None: the same round, or the
    first). Facts come from bot-state (`prior`) and the PR as listed now.

    A ballot is bound to (head sha, base ref): a push or a retargeted base starts a new round.
    A round whose rejection capdaemon acted on is over: the PR, closed and reopened, starts a
    new round whatever its head (still open: the same, rejected round while the close is
    retried), and no vote cast before it counts again (`BallotFacts.stale_vote_ids`
    takes every vote on the issue when the round starts). A ballot someone else edited and
    capdaemon restored starts a new round too (R5).
    """
    aware(now, "now")
    if prior is None:
        return BallotRound(repo, pr, head_sha, now, base_ref=base_ref), None
    if prior.rejected_at is not None and not prior.reopened:
        return prior, None  # rejected, the PR not closed yet: nothing rebinds it (close retried)
    if prior.head_sha != head_sha:
        return prior._next(now, head_sha=head_sha, base_ref=base_ref), RoundReason.HEAD_CHANGED
    if prior.base_ref and prior.base_ref != base_ref:
        return prior._next(now, base_ref=base_ref), RoundReason.BASE_CHANGED
    if prior.rejected_at is not None:  # and reopened
        return prior._next(now, base_ref=base_ref), RoundReason.REOPENED_AFTER_REJECTION
    if issue_restored:
        return prior._next(now, base_ref=base_ref), RoundReason.ISSUE_RESTORED
    if not prior.base_ref:
        return replace(prior, base_ref=base_ref), None  # a round from before the base was bound
    return prior, None


REJECTED_BEFORE = "an owner rejected this PR before: only an owner's approval merges it"


def after_rejection_tier(tier: TierDecision, after_rejection: bool) -> TierDecision:
    """The tier of a PR an owner rejected once: at least a full ballot, whatever the quadrant
    of its head now (a `manual` policy stays manual)."""
    if not after_rejection or tier.owner_requirement is Requirement.BALLOT:
        return tier
    policy = "manual" if tier.merge_policy == "manual" else "tiered"
    return TierDecision(3, (*tier.reasons, REJECTED_BEFORE), policy, tier.policy_reason)

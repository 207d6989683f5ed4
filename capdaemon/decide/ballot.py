"""Owner votes on ballots (SPEC 3); the commands themselves are read by decide.commands."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from capdaemon.decide._common import aware, dt_to_json
from capdaemon.decide.commands import Command, CommandKind, parse_command, unknown_command_reply
from capdaemon.decide.labels import Label

# ----------------------------------------------------------------------------- resolution


class CommentLike(Protocol):
    """What a ballot needs of a comment (capdaemon.forge.types.Comment fits)."""

    @property
    def id(self) -> int: ...
    @property
    def user(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def edited(self) -> bool | None: ...  # None: no edit record, an edit cannot be ruled out


class ReactionLike(Protocol):
    """What a ballot needs of a reaction (capdaemon.forge.types.Reaction fits; `id` optional)."""

    @property
    def user(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...


class BallotStatus(enum.StrEnum):
    """Where a ballot stands."""

    PENDING = "pending"
    APPROVED = "approved"  # A: approve as proposed
    APPROVED_ALTERNATE = "approved_alternate"  # B: approve with the alternate
    DEFERRED = "deferred"  # C: defer (label decision:deferred, not mergeable)
    REJECTED = "rejected"

    @property
    def mergeable(self) -> bool:
        """True for the two approvals."""
        return self in (BallotStatus.APPROVED, BallotStatus.APPROVED_ALTERNATE)


_COMMAND_CHOICE = {
    CommandKind.APPROVE_A: BallotStatus.APPROVED,
    CommandKind.APPROVE_B: BallotStatus.APPROVED_ALTERNATE,
    CommandKind.APPROVE_C: BallotStatus.DEFERRED,
    CommandKind.REJECT: BallotStatus.REJECTED,
}
_REACTION_CHOICE = {"+1": BallotStatus.APPROVED, "-1": BallotStatus.REJECTED}


@dataclass(frozen=True)
class BallotFacts:
    """Everything a ballot's resolution needs, gathered by the daemon.

    `owners` are logins (compared case-insensitively; pass admins in too when
    `owners_include_admins`). `round_started_at` is when the ballot was (re)bound to
    `head_sha`: votes older than it belong to an earlier head and do not count.
    `answered_comment_ids` are unknown-command comments already answered.
    `stale_vote_ids` are votes (`Vote.key` form: "comment:<id>", "reaction:<id>") that were
    already on the issue when this round began: they never count in it, whatever their
    timestamps say (a clock-free guard against clock skew between the daemon and GitHub).
    """

    owners: frozenset[str]
    pr_author: str
    bot_login: str
    head_sha: str
    round_started_at: datetime
    comments: tuple[CommentLike, ...] = ()
    reactions: tuple[ReactionLike, ...] = ()
    answered_comment_ids: frozenset[int] = frozenset()
    stale_vote_ids: frozenset[str] = frozenset()


def vote_id(source: str, ref: int | None) -> str | None:
    """The `stale_vote_ids` / `Vote.key` form of a comment or reaction id."""
    return None if ref is None else f"{source}:{ref}"


@dataclass(frozen=True)
class Vote:
    """One owner action, counted or ignored (ignored ones carry the reason; all are audited)."""

    user: str
    source: str  # "comment" | "reaction"
    ref: int | None  # comment id or reaction id
    at: datetime
    what: str  # the command line or the reaction content
    choice: BallotStatus | None  # what it would mean if counted
    counted: bool
    reason: str = ""

    @property
    def key(self) -> str:
        """A stable identity for de-duplicating audit entries across ticks."""
        if self.ref is not None:
            return f"{self.source}:{self.ref}"
        return f"{self.source}:{self.user.lower()}:{self.what}:{dt_to_json(self.at)}"

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the audit log (`vote.counted` / `vote.ignored`)."""
        out: dict[str, Any] = {
            "user": self.user,
            "source": self.source,
            "ref": self.ref,
            "at": dt_to_json(self.at),
            "what": self.what,
            "choice": self.choice.value if self.choice else None,
            "counted": self.counted,
        }
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class UnknownCommand:
    """An owner's unknown command comment the bot should answer (once per comment id)."""

    comment_id: int
    user: str
    command: Command

    @property
    def reply(self) -> str:
        """The answer body."""
        return unknown_command_reply(self.command)


@dataclass(frozen=True)
class BallotOutcome:
    """The state of a ballot for one head sha."""

    status: BallotStatus
    head_sha: str
    reason: str
    deciding: Vote | None = None
    counted: tuple[Vote, ...] = ()
    ignored: tuple[Vote, ...] = ()
    unknown_commands: tuple[UnknownCommand, ...] = ()

    @property
    def decided_by(self) -> str | None:
        """The owner whose action decided, if any."""
        return self.deciding.user if self.deciding else None

    def approves(self, head_sha: str) -> bool:
        """True when approved (A or B) for exactly this head sha."""
        return self.status.mergeable and self.head_sha == head_sha

    @property
    def labels(self) -> tuple[str, ...]:
        """Labels the ballot issue should carry besides decision:pending-owner."""
        return (Label.DEFERRED.value,) if self.status is BallotStatus.DEFERRED else ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the audit log and state files."""
        return {
            "status": self.status.value,
            "head_sha": self.head_sha,
            "reason": self.reason,
            "decided_by": self.decided_by,
            "deciding": self.deciding.to_dict() if self.deciding else None,
            "counted": [v.to_dict() for v in self.counted],
            "ignored": [v.to_dict() for v in self.ignored],
            "unknown_commands": [u.comment_id for u in self.unknown_commands],
        }


def _why_ignored(
    facts: BallotFacts, user: str, at: datetime, noun: str, key: str | None = None
) -> str:
    login = user.lower()
    if login == facts.bot_login.lower():
        return f"the bot's own {noun}"
    if login == facts.pr_author.lower():
        return "the PR author never counts"
    if login not in {o.lower() for o in facts.owners}:
        return "not an owner"
    if at < facts.round_started_at or (key is not None and key in facts.stale_vote_ids):
        return f"before this round (the ballot is bound to {facts.head_sha[:12]})"
    return ""


def edit_reason(edited: bool | None) -> str:
    """Why a command comment does not count because of an edit ("" when it may count).

    Only a comment GitHub's edit record shows unedited counts: an edit, however soon after
    posting and by whomever, voids it, and so does a missing edit record (REST's whole-second
    `updated_at` cannot show an edit made within the second the comment was posted).
    """
    if edited is False:
        return ""
    if edited:
        return "edited after posting"
    return "no edit record: an edit cannot be ruled out"


def resolve_ballot(facts: BallotFacts, now: datetime) -> BallotOutcome:
    """Resolve a ballot: owners only, newest owner action wins, conflicting 👍/👎 → pending.

    Never counted: the bot, the PR author (even an owner), non-owners, anything before
    the round started, and command comments edited after posting (or whose edit record
    is missing: see `edit_reason`). A `/breaker reset`
    on a ballot is ignored. Commands win ties with reactions of the same second.
    """
    aware(now, "now")
    aware(facts.round_started_at, "round_started_at")
    votes: list[Vote] = []
    unknown: list[UnknownCommand] = []
    for c in facts.comments:
        vote, asked = _comment_vote(facts, c)
        if vote is not None:
            votes.append(vote)
        if asked is not None:
            unknown.append(asked)
    votes.extend(v for r in facts.reactions if (v := _reaction_vote(facts, r)) is not None)
    counted = sorted(
        (v for v in votes if v.counted), key=lambda v: (v.at, v.source != "comment", v.ref or 0)
    )
    ignored = sorted(
        (v for v in votes if not v.counted), key=lambda v: (v.at, v.source, v.ref or 0)
    )
    status, reason, deciding = _newest_owner_action(counted)
    return BallotOutcome(
        status, facts.head_sha, reason, deciding, tuple(counted), tuple(ignored), tuple(unknown)
    )


def _comment_vote(facts: BallotFacts, c: CommentLike) -> tuple[Vote | None, UnknownCommand | None]:
    """A command comment as a vote (counted or ignored, None for plain text), and the
    unknown command to answer when it is an owner's new unknown command."""
    command = parse_command(c.body or "")
    if command is None:
        return None, None
    created = aware(c.created_at, f"comment {c.id} created_at")
    key = vote_id("comment", c.id)
    reason = _why_ignored(facts, c.user, created, "comment", key) or edit_reason(c.edited)
    asked: UnknownCommand | None = None
    if command.kind is CommandKind.UNKNOWN:
        if _answerable(facts, c, created, key):
            asked = UnknownCommand(c.id, c.user, command)
        reason = reason or command.reason or "unknown command"
    elif command.kind is CommandKind.BREAKER_RESET:
        reason = reason or "not a ballot command (use it on the breaker's incident issue)"
    choice = _COMMAND_CHOICE.get(command.kind)
    vote = Vote(c.user, "comment", c.id, created, command.line, choice, not reason, reason)
    return vote, asked


def _answerable(facts: BallotFacts, c: CommentLike, created: datetime, key: str | None) -> bool:
    """True for an owner's (not the bot's) unknown command of this round not answered yet."""
    login = c.user.lower()
    return (
        login in {o.lower() for o in facts.owners}
        and login != facts.bot_login.lower()
        and created >= facts.round_started_at
        and key not in facts.stale_vote_ids
        and c.id not in facts.answered_comment_ids
    )


def _reaction_vote(facts: BallotFacts, r: ReactionLike) -> Vote | None:
    """A 👍/👎 as a vote (counted or ignored); None for reactions that are not votes."""
    choice = _REACTION_CHOICE.get(r.content)
    if choice is None:
        return None  # 😄, 🎉 … are not votes
    created = aware(r.created_at, "reaction created_at")
    ref = getattr(r, "id", None)
    reason = _why_ignored(facts, r.user, created, "reaction", vote_id("reaction", ref))
    return Vote(r.user, "reaction", ref, created, r.content, choice, not reason, reason)


def _newest_owner_action(counted: list[Vote]) -> tuple[BallotStatus, str, Vote | None]:
    """(status, reason, deciding vote) from the counted votes, oldest first: the newest
    command comment, unless owner reactions came after it (conflicting ones → pending)."""
    commands = [v for v in counted if v.source == "comment"]
    last_command = commands[-1] if commands else None
    later = [
        v
        for v in counted
        if v.source == "reaction" and (last_command is None or v.at > last_command.at)
    ]
    if later and len({v.choice for v in later}) > 1:
        return (
            BallotStatus.PENDING,
            "conflicting 👍 and 👎 from owners and no later command comment",
            None,
        )
    deciding = later[-1] if later else last_command
    if deciding is None or deciding.choice is None:
        return BallotStatus.PENDING, "no owner has answered yet", None
    return deciding.choice, _told(deciding), deciding


def _told(vote: Vote) -> str:
    """How the deciding vote reads in the ballot's reason: what, by whom, when."""
    how = "👍" if vote.what == "+1" else "👎" if vote.what == "-1" else vote.what
    return f"{how} by {vote.user} at {dt_to_json(vote.at)}"

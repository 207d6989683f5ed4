"""The tier overlay of SPEC 4.1 (can only raise) and one-tap approvals."""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from capdaemon.config import DEFAULT_SECRET_GLOBS, TierConfig
from capdaemon.decide._common import aware, dt_to_json, reader
from capdaemon.decide.ballot import ReactionLike
from capdaemon.globs import GlobSet, PathError, normalize_path
from capdaemon.model import FileChange, Quadrant

MERGE_POLICIES = ("auto", "tiered", "manual")
NO_TASK_POLICY = "tiered"  # SPEC 4.1: a PR that names no task is treated as `tiered`


def policy_of(task_policy: str | None) -> str:
    """The merge policy a PR is judged under: its task's (for a PR that links none, the one
    `bind_unlinked` found), or `tiered` when none is known."""
    return task_policy or NO_TASK_POLICY


def strictest(policies: Iterable[str]) -> str | None:
    """The strictest of merge policies (`manual` > `tiered` > `auto`); None for none.
    An unknown policy counts as `manual` (fail closed)."""
    ranked = [p if p in MERGE_POLICIES else "manual" for p in policies]
    return max(ranked, key=MERGE_POLICIES.index) if ranked else None


@dataclass(frozen=True)
class Binding:
    """One active task a PR that links none is bound to: its id, policy and why it binds."""

    task_id: str
    merge_policy: str
    why: str


@dataclass(frozen=True)
class PolicyBinding:
    """The merge policy of a PR that links no task, the tasks it was bound to, and why."""

    policy: str
    tasks: tuple[str, ...]
    reason: str


def bind_unlinked(bindings: Iterable[Binding], store_error: str | None = None) -> PolicyBinding:
    """The policy of a PR naming no (usable) task: at least `tiered` (SPEC 4.1), made
    stricter, never laxer, by the active tasks bound to it (by `agents`/`branches`, or the
    author's own tasks); `manual` when the capability store could not be read (fail closed:
    an owner merges)."""
    if store_error is not None:
        return PolicyBinding(
            "manual",
            (),
            f"no task linked and the capability store could not be read ({store_error}): "
            "judged as manual, an owner merges",
        )
    found = sorted(set(bindings), key=lambda b: b.task_id)
    if not found:
        return PolicyBinding(
            NO_TASK_POLICY, (), "no task linked and no active task bound to its author or branch"
        )
    policy = strictest([NO_TASK_POLICY, *(b.merge_policy for b in found)]) or NO_TASK_POLICY
    why = "; ".join(f"{b.task_id} ({b.merge_policy}, {b.why})" for b in found)
    return PolicyBinding(
        policy,
        tuple(b.task_id for b in found),
        f"no task linked: at least {NO_TASK_POLICY}, stricter where an active task of its "
        f"author or branch is; judged as {policy}: {why}",
    )


class Requirement(enum.StrEnum):
    """What a PR needs before the daemon may merge it, in increasing order."""

    NONE = "none"  # merge per quadrant
    ONE_TAP = "one_tap"  # one owner 👍 on a decision:one-tap issue
    BALLOT = "ballot"  # a full D ballot, approved for the head sha
    NEVER = "never"  # merge_policy manual: the daemon never merges

    @property
    def rank(self) -> int:
        """Position in NONE < ONE_TAP < BALLOT < NEVER."""
        return list(Requirement).index(self)


@dataclass(frozen=True)
class TierDecision:
    """A PR's tier (1 auto, 2 one-tap, 3 approval), why, and the policy it was computed under."""

    tier: int
    reasons: tuple[str, ...]
    merge_policy: str = "tiered"
    policy_reason: str = ""  # why this policy, for a PR that links no task

    @property
    def owner_requirement(self) -> Requirement:
        """What an owner must give, whatever the policy: tier 3 is a floor for every agent
        PR (a full ballot, under `auto` and `manual` too); tier 2's one-tap only under
        `tiered` (`auto` may skip it); tier 1 nothing."""
        if self.tier >= 3:
            return Requirement.BALLOT
        if self.tier == 2 and self.merge_policy == "tiered":
            return Requirement.ONE_TAP
        return Requirement.NONE

    @property
    def requirement(self) -> Requirement:
        """What the daemon needs before it merges: NEVER under `manual` (a human merges,
        after the owner requirement is met), else the owner requirement."""
        if self.merge_policy == "manual":
            return Requirement.NEVER
        return self.owner_requirement

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the audit log."""
        return {
            "tier": self.tier,
            "reasons": list(self.reasons),
            "merge_policy": self.merge_policy,
            "requirement": self.requirement.value,
            "policy_reason": self.policy_reason,
        }


def _paths(files: Sequence[FileChange]) -> list[str]:
    out: list[str] = []
    for f in files:
        for p in (f.path, f.previous_path):
            if p:
                try:
                    out.append(normalize_path(p))
                except PathError:
                    out.append(p)  # the classifier already made such a PR D; match it as is
    return out


@functools.lru_cache(maxsize=64)
def _globs(patterns: tuple[str, ...]) -> GlobSet:
    return GlobSet.of(patterns)


def _first_match(patterns: Sequence[str], paths: Iterable[str]) -> str | None:
    globs = _globs(tuple(patterns))
    return next((p for p in paths if globs.match(p)), None)


def tier_for(
    level: int | None,
    files: Sequence[FileChange],
    cfg: TierConfig,
    merge_policy: str,
    *,
    secret_globs: Sequence[str] = DEFAULT_SECRET_GLOBS,
) -> TierDecision:
    """The tier of a PR from its task level and changed files (SPEC 4.1).

    Tier 3: level ≥ 3, a protected path, a production path, an external-key (secret)
    path. Tier 2: level 2, more than `many_files` files (the seed's default: more than
    one), a dependency manifest or lockfile, ≥ `large_diff_lines` changed lines. Else
    tier 1. `level` None (no task linked) adds nothing. Rename sources count as paths
    too. Tier 3 binds under every policy (see TierDecision.owner_requirement); tier 2
    only under `tiered`.
    """
    if merge_policy not in MERGE_POLICIES:
        raise ValueError(
            f"merge_policy must be one of {', '.join(MERGE_POLICIES)}, got {merge_policy!r}"
        )
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or level < 0):
        raise ValueError(f"level must be an integer >= 0, got {level!r}")
    paths = _paths(files)
    t3 = _tier3_reasons(level, paths, cfg, secret_globs)
    t2 = _tier2_reasons(level, files, paths, cfg)
    if t3:
        return TierDecision(3, tuple(t3 + t2), merge_policy)
    if t2:
        return TierDecision(2, tuple(t2), merge_policy)
    return TierDecision(1, (), merge_policy)


def _tier3_reasons(
    level: int | None, paths: Sequence[str], cfg: TierConfig, secret_globs: Sequence[str]
) -> list[str]:
    """Why a PR is tier 3: its task level, a protected, production or external-key path."""
    out: list[str] = []
    if level is not None and level >= 3:
        out.append(f"task level {level} (≥ 3)")
    for name, globs in (
        ("protected path", cfg.protected_globs),
        ("production path", cfg.production_globs),
        ("external key", secret_globs),
    ):
        hit = _first_match(globs, paths)
        if hit:
            out.append(f"{name} {hit}")
    return out


def _tier2_reasons(
    level: int | None, files: Sequence[FileChange], paths: Sequence[str], cfg: TierConfig
) -> list[str]:
    """Why a PR is tier 2: its task level, many files, a dependency manifest, a large diff."""
    out: list[str] = []
    if level == 2:
        out.append("task level 2")
    if len(files) > cfg.many_files:
        out.append(f"{len(files)} files changed (more than {cfg.many_files})")
    hit = _first_match(cfg.dependency_globs, paths)
    if hit:
        out.append(f"dependency manifest or lockfile {hit}")
    lines = sum(f.additions + f.deletions for f in files)
    if lines >= cfg.large_diff_lines:
        out.append(f"{lines} changed lines (≥ {cfg.large_diff_lines})")
    return out


def quadrant_requirement(quadrant: Quadrant) -> Requirement:
    """D needs a ballot; A, B and C merge by themselves."""
    return Requirement.BALLOT if quadrant is Quadrant.D else Requirement.NONE


def effective_requirement(quadrant: Quadrant, tier: TierDecision) -> Requirement:
    """The higher of the quadrant's and the tier's requirement."""
    return max(quadrant_requirement(quadrant), tier.requirement, key=lambda r: r.rank)


# ----------------------------------------------------------------------------- one-tap


class OneTapState(enum.StrEnum):
    """Where a one-tap request stands."""

    PENDING = "pending"
    APPROVED = "approved"
    EXPIRED = "expired"  # escalate to a full ballot


@dataclass(frozen=True)
class OneTapResult:
    """A one-tap request's state, why, and who approved it."""

    state: OneTapState
    reason: str
    approved_by: str | None = None
    at: datetime | None = None  # when the deciding 👍 or 👎 was given


def one_tap_state(
    opened_at: datetime,
    reactions: Iterable[ReactionLike],
    owners: Iterable[str],
    now: datetime,
    ttl: timedelta,
    *,
    pr_author: str = "",
    bot_login: str = "",
) -> OneTapResult:
    """One owner 👍 within `ttl` of `opened_at` approves; otherwise expire into a full ballot.

    Counted: owners only, never the PR author or the bot, reactions at or after
    `opened_at` (the request is bound to one head: open a new one when the head moves).
    An owner 👎 before approval escalates at once (EXPIRED, a full ballot decides).
    A 👍 after the deadline does not count.
    """
    aware(opened_at, "opened_at")
    aware(now, "now")
    deadline = opened_at + ttl
    owner_set = {o.lower() for o in owners}
    excluded = {pr_author.lower(), bot_login.lower()} - {""}
    votes = sorted(
        (aware(r.created_at, "reaction created_at"), r.content, r.user)
        for r in reactions
        if r.content in ("+1", "-1")
        and r.user.lower() in owner_set
        and r.user.lower() not in excluded
    )
    for at, content, user in votes:
        if at < opened_at or at > deadline:
            continue
        if content == "-1":
            return OneTapResult(
                OneTapState.EXPIRED, f"👎 by {user}: escalated to a full ballot", at=at
            )
        return OneTapResult(OneTapState.APPROVED, f"👍 by {user} at {dt_to_json(at)}", user, at)
    if now >= deadline:
        return OneTapResult(
            OneTapState.EXPIRED, f"no owner 👍 within {ttl}: escalated to a full ballot"
        )
    return OneTapResult(
        OneTapState.PENDING, f"waiting for an owner 👍 until {dt_to_json(deadline)}"
    )


@dataclass(frozen=True)
class OneTapRequest:
    """Persisted one-tap request: the PR, the head it is bound to, its issue and when it opened."""

    repo: str
    pr: int
    head_sha: str
    opened_at: datetime
    issue: int | None = None

    def __post_init__(self) -> None:
        aware(self.opened_at, "opened_at")

    def to_json(self) -> dict[str, Any]:
        """JSON form for bot-state."""
        return {
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "opened_at": dt_to_json(self.opened_at),
            "issue": self.issue,
        }

    @classmethod
    def from_json(cls, data: Any) -> OneTapRequest:
        """Parse the JSON form; a malformed dict raises ValueError naming the field."""
        r = reader(data, "one_tap")
        return cls(
            repo=r.text("repo"),
            pr=r.integer("pr", minimum=1),
            head_sha=r.text("head_sha"),
            opened_at=r.when("opened_at"),
            issue=r.integer("issue", optional=True, minimum=1),
        )

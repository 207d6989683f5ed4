"""Post-merge health probes and the auto-revert decision with its daily cap (SPEC 6.2)."""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from capdaemon.config import PostMergeConfig
from capdaemon.decide._common import aware, dt_to_json, reader
from capdaemon.decide.merge import RequiredCheck
from capdaemon.model import CheckRun

FAILED_CONCLUSIONS = frozenset({"failure", "timed_out", "startup_failure", "error"})
PASSED_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})
# cancelled / stale / action_required: neither (a newer push often cancels runs on main)


@dataclass(frozen=True)
class ProbeWatch:
    """A merge commit being watched on the base branch."""

    repo: str
    pr: int
    merge_sha: str
    parents_count: int
    merged_at: datetime
    base: str = "main"
    revertible: bool = True  # False: not verifiably capdaemon's own merge → incident only

    def __post_init__(self) -> None:
        aware(self.merged_at, "merged_at")
        if self.parents_count < 1:
            raise ValueError(f"parents_count must be >= 1, got {self.parents_count}")

    @property
    def ref(self) -> str:
        """`owner/repo#N`."""
        return f"{self.repo}#{self.pr}"

    def to_json(self) -> dict[str, Any]:
        """JSON form for bot-state."""
        return {
            "repo": self.repo,
            "pr": self.pr,
            "merge_sha": self.merge_sha,
            "parents_count": self.parents_count,
            "merged_at": dt_to_json(self.merged_at),
            "base": self.base,
            "revertible": self.revertible,
        }

    @classmethod
    def from_json(cls, data: Any) -> ProbeWatch:
        """Parse the JSON form; malformed → ValueError naming the field."""
        r = reader(data, "probe_watch")
        return cls(
            repo=r.text("repo"),
            pr=r.integer("pr", minimum=1),
            merge_sha=r.text("merge_sha"),
            parents_count=r.integer("parents_count", minimum=1),
            merged_at=r.when("merged_at"),
            base=r.text("base", optional=True) or "main",
            revertible=data.get("revertible", True) is True,
        )


class ProbeStatus(enum.StrEnum):
    """The outcome of a probe so far."""

    PENDING = "pending"
    HEALTHY = "healthy"
    FAILED = "failed"


@dataclass(frozen=True)
class ProbeResult:
    """A probe's status, the checks that failed or still run, and why."""

    status: ProbeStatus
    reason: str
    failed_checks: tuple[str, ...] = ()
    running_checks: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        """True when the watch can be dropped."""
        return self.status is not ProbeStatus.PENDING


def _latest(checks: Iterable[CheckRun]) -> list[CheckRun]:
    """The newest run per (check name, publishing App): a re-run replaces an older run of the
    same App, but a run of another App (or a bare status) never masks an App's failure.

    A failed commit status (no App) is never replaced: anyone with write access can post a
    green status of the same name over it, so every red status counts.
    """
    best: dict[tuple[str, int], CheckRun] = {}
    sticky: list[CheckRun] = []
    floor = datetime.min.replace(tzinfo=UTC)
    for c in checks:
        if c.app_id is None and c.status == "completed" and c.conclusion in FAILED_CONCLUSIONS:
            sticky.append(c)
        key = (c.completed_at or c.started_at or floor, c.id or 0)
        slot = (c.name, c.app_id if c.app_id is not None else -1)
        old = best.get(slot)
        if old is None or key >= (old.completed_at or old.started_at or floor, old.id or 0):
            best[slot] = c
    return [best[k] for k in sorted(best)] + sticky


def trusted_probe_checks(
    checks: Iterable[CheckRun],
    required: Iterable[RequiredCheck],
    trusted_creators: Collection[str],
) -> tuple[list[CheckRun], list[CheckRun]]:
    """(counted, not counted) for the probe: the sources the merge gate trusts count.

    A check run from a GitHub App counts, unless its name is a required or extra check
    pinned to another App. A commit status (no App) counts only when a trusted login (an
    owner, the bot) posted it: anyone with write access can post one, so a red status from
    anyone else is reported, never counted toward the breaker.
    """
    pins: dict[str, set[int]] = {}
    for req in required:
        if req.app_id is not None:
            pins.setdefault(req.context, set()).add(req.app_id)
    trusted = {c.lower() for c in trusted_creators}
    counted: list[CheckRun] = []
    other: list[CheckRun] = []
    for c in checks:
        if c.app_id is not None:
            ok = c.name not in pins or c.app_id in pins[c.name]
        else:
            ok = bool(c.creator) and str(c.creator).lower() in trusted
        (counted if ok else other).append(c)
    return counted, other


def red(checks: Iterable[CheckRun]) -> list[CheckRun]:
    """The completed checks among `checks` that failed."""
    return [c for c in checks if c.status == "completed" and c.conclusion in FAILED_CONCLUSIONS]


def evaluate_probe(
    watch: ProbeWatch, checks: Sequence[CheckRun], now: datetime, cfg: PostMergeConfig
) -> ProbeResult:
    """Judge the merge commit's checks: any failure → FAILED; healthy once the window is over.

    Within `window_minutes` after the merge: FAILED at the first failed check, else
    PENDING. After it: running checks keep it PENDING up to twice the window, then
    FAILED ("probe timed out"); otherwise HEALTHY (also when no check ran at all, said so).
    """
    aware(now, "now")
    latest = _latest(checks)
    failed = tuple(
        dict.fromkeys(
            c.name for c in latest if c.status == "completed" and c.conclusion in FAILED_CONCLUSIONS
        )
    )
    running = tuple(c.name for c in latest if c.status != "completed")
    if failed:
        return ProbeResult(
            ProbeStatus.FAILED,
            f"failed on {watch.merge_sha[:12]}: {', '.join(failed)}",
            failed,
            running,
        )
    window = timedelta(minutes=cfg.window_minutes)
    elapsed = now - watch.merged_at
    if elapsed < window:
        return ProbeResult(ProbeStatus.PENDING, "inside the probe window", (), running)
    if running:
        if elapsed < 2 * window:
            return ProbeResult(
                ProbeStatus.PENDING, "checks still running after the window", (), running
            )
        return ProbeResult(
            ProbeStatus.FAILED, f"probe timed out: still running {', '.join(running)}", (), running
        )
    if not latest:
        return ProbeResult(ProbeStatus.HEALTHY, "no checks reported on the merge commit")
    return ProbeResult(
        ProbeStatus.HEALTHY, f"{len(latest)} checks passed on {watch.merge_sha[:12]}"
    )


def quiet_until(
    watch: ProbeWatch, checks: Sequence[CheckRun], result: ProbeResult, cfg: PostMergeConfig
) -> datetime | None:
    """When a PENDING probe need not be read again before: the end of its window, once every
    check on the merge commit has completed without a failure (None: read it next tick).

    Nothing can make it HEALTHY sooner, and one read at the window's end still catches a check
    that starts late and fails (SPEC 6.2 judges at the window's end); a run that failed and
    was re-run green in between is judged by its newest run, as every tick would.
    """
    if result.status is not ProbeStatus.PENDING or result.running_checks or not checks:
        return None
    end = watch.merged_at + timedelta(minutes=cfg.window_minutes)
    return end


class RevertAction(enum.StrEnum):
    """What to do about a merge."""

    NONE = "none"
    OPEN_REVERT = "open_revert"
    INCIDENT_ONLY = "incident_only"


@dataclass(frozen=True)
class RevertDecision:
    """Revert or only report, and why."""

    action: RevertAction
    reason: str


REVERT_CAP_WINDOW = timedelta(hours=24)


def reverts_on_day(revert_times: Iterable[datetime], now: datetime) -> int:
    """How many reverts were opened on `now`'s UTC calendar day (reporting only; the cap
    uses `reverts_in_window`)."""
    day = aware(now, "now").astimezone(UTC).date()
    return sum(1 for t in revert_times if aware(t, "revert time").astimezone(UTC).date() == day)


def reverts_in_window(revert_times: Iterable[datetime], now: datetime) -> int:
    """How many reverts count against the daily cap at `now`: those of the last 24 hours.

    A rolling window, not the UTC calendar day (a cap of 3 must not allow 6 reverts around
    midnight). A revert time after `now` (clock skew, a tampered file) counts too.
    """
    floor = aware(now, "now") - REVERT_CAP_WINDOW
    return sum(1 for t in revert_times if aware(t, "revert time") > floor)


def revert_decision(
    watch: ProbeWatch,
    failed: bool,
    *,
    auto_revert_pr: bool,
    reverts_today: int,
    cap: int,
    applies_cleanly: bool,
) -> RevertDecision:
    """Open a revert PR only when enabled, single-parent, under the daily cap and clean."""
    if not failed:
        return RevertDecision(RevertAction.NONE, "probe did not fail")
    if not auto_revert_pr:
        return RevertDecision(RevertAction.INCIDENT_ONLY, "auto_revert_pr is off")
    if not watch.revertible:
        return RevertDecision(
            RevertAction.INCIDENT_ONLY, "not verifiably capdaemon's own merge of the decided head"
        )
    if watch.parents_count > 1:
        return RevertDecision(
            RevertAction.INCIDENT_ONLY, f"merge commit has {watch.parents_count} parents"
        )
    if reverts_today >= cap:
        return RevertDecision(
            RevertAction.INCIDENT_ONLY, f"daily revert cap reached ({reverts_today}/{cap} in 24 h)"
        )
    if not applies_cleanly:
        return RevertDecision(RevertAction.INCIDENT_ONLY, "the revert no longer applies cleanly")
    return RevertDecision(RevertAction.OPEN_REVERT, f"revert {watch.merge_sha[:12]} of {watch.ref}")

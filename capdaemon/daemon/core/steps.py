"""The tick's steps: each a function of one `Tick`, in the order `STEPS` (a full tick) and
`TARGETED_STEPS` (a change detector's tick) list them, walked by `run_steps`; and
`TickReader`, what the safety net reads through the tick now running."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from capdaemon.capability.model import CapabilitySnapshot
from capdaemon.config import RepoConfig
from capdaemon.daemon.ballots import votes as ballots
from capdaemon.daemon.core.context import Tick, TickContext, TickDeps
from capdaemon.daemon.core.handover import serve_changed
from capdaemon.daemon.core.steptimes import StepTimes
from capdaemon.daemon.issues import closeout
from capdaemon.daemon.issues import ensure as issues
from capdaemon.daemon.merging import merge as merging
from capdaemon.daemon.merging import modeswitch
from capdaemon.daemon.polling import poll
from capdaemon.decide.merge import RequiredCheck
from capdaemon.forge.types import IssueActivity
from capdaemon.report import Report


@dataclass(frozen=True)
class TickReader:
    """What the safety net reads through one tick (safety.common.TickReads), over that tick's
    context and its caches."""

    deps: TickDeps
    ctx: TickContext

    def load_cap(self, task_id: str) -> CapabilitySnapshot:
        """A task's capability snapshot, verified once per tick."""
        return self.ctx.load_cap(task_id)

    def owners(self, repo: str, users: Iterable[str]) -> set[str]:
        """The owners among `users` under the repo's policy this tick."""
        return issues.decision_owners(self.deps, self.ctx, repo, users)

    def required_checks(self, rc: RepoConfig) -> tuple[RequiredCheck, ...]:
        """The repo's required checks, read once per tick."""
        return merging.required_checks_for(self.deps, self.ctx, rc)

    def issue_activity(self, report: Report | None = None) -> dict[int, IssueActivity]:
        """The decision repo's issue list, read once per tick."""
        return issues.issue_activity(self.deps, self.ctx, report)


Step = Callable[[Tick], None]


def _integrity_gate(t: Tick) -> None:
    """The audit logs' integrity: a corrupt log is an incident, then no tick."""
    t.deps.safety.integrity.gate(t.now, t.report)


def _decision_access(t: Tick) -> None:
    """Who can write to the decision repo: checked once per daemon and config."""
    if "access" not in t.deps.once:
        t.deps.once.add("access")
        t.host.check_decision_access(t.now, t.report)


def _read_taps(t: Tick) -> None:
    """Telegram taps since the last tick (a daemon run by cron reads them here)."""
    t.deps.safety.channels.read_taps(t.host, t.now, t.report)


def _sync_desk(t: Tick) -> None:
    """The one-taps mirrored into Telegram (after step 3 counted the votes)."""
    t.deps.safety.channels.sync_desk(t.host, t.now, t.report)


def _merge(t: Tick) -> None:
    """Step 4, then Telegram says "merged" at once. The first full tick after a switch from
    shadow to enforce mode merges nothing: it reports the switch instead (modeswitch)."""
    if modeswitch.holds_merges(t):
        return
    merging.step_merge(t)
    t.deps.safety.channels.after_merge(t.host, t.report)


def _burn_in(t: Tick) -> None:
    """Step 6: advance L4 burn-in clocks (rejections are read from the "rejection" records)."""
    t.deps.safety.burn_in.step(t.ctx.seen, t.now, t.report)


def _probes_and_breaker(t: Tick) -> None:
    """Step 7: post-merge probes, auto-revert, branch protection drift and the breaker."""
    t.deps.safety.step_probes_and_breaker(t.now, t.reads, t.report)


# A full tick (steps 0-7; step 8, the metrics, runs after them even when one fails).
STEPS: tuple[Step, ...] = (
    _integrity_gate,
    _decision_access,
    _read_taps,
    merging.step_reconcile,  # step 0
    issues.find_tampered,
    issues.restore_reviews,
    poll.poll_and_classify,  # steps 1-2
    ballots.step_ballots,  # step 3
    _sync_desk,
    _merge,  # step 4
    closeout.step_close_settled,  # decision issues of PRs that left, closed with the outcome
    issues.step_passive_reviews,  # step 5
    issues.step_escalations,
    _burn_in,  # step 6
    _probes_and_breaker,  # step 7
)
# A targeted tick: steps 1-4 for the repos a change detector flagged (`Tick.only`); the same
# steps as a full tick's, fewer of them.
TARGETED_STEPS: tuple[Step, ...] = (
    _integrity_gate,
    poll.poll_and_classify,
    ballots.step_ballots,
    _merge,
    closeout.step_close_settled,
)


def run_steps(t: Tick, steps: Iterable[Step], times: StepTimes) -> None:
    """Run `steps` in order; a stop request is honoured between any two of them, and in a
    full tick what a change detector saw meanwhile is served there (serve_changed). `times`:
    where each step's wall time and wire figures go (a step that raises is timed too)."""
    for i, step in enumerate(steps):
        if i:
            t.check_stop()
            if t.ctx.polled:  # before steps 1-2, their own list reads come after a change
                serve_changed(t)
                t.check_stop()
        times.start(step.__name__.lstrip("_"))
        try:
            step(t)
        finally:
            times.stop()

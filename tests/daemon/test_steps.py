"""The tick's steps share one shape (a function of one Tick), and one PR is one TickPR."""

from __future__ import annotations

import inspect

import pytest

from capdaemon.daemon.core.context import Tick
from capdaemon.daemon.core.steps import STEPS, TARGETED_STEPS, TickReader, run_steps
from capdaemon.daemon.core.steptimes import StepTimes
from capdaemon.daemon.core.tickdata import _Stopped
from capdaemon.daemon.merging import merge as merging
from capdaemon.daemon.polling import poll
from capdaemon.daemon.polling.tickpr import TickPR

from .conftest import Harness

DOCS = {"docs/guide/intro.md": "# Intro\n\nHello.\n"}


def test_every_step_takes_one_tick_and_the_targeted_tick_runs_the_same_steps() -> None:
    """Each step is called with the Tick alone; the targeted tick is the full tick's steps,
    fewer of them, in the same order."""
    for step in STEPS:
        params = list(inspect.signature(step).parameters.values())
        assert len(params) == 1, step
    order = [STEPS.index(step) for step in TARGETED_STEPS]  # ValueError: not a full-tick step
    assert order == sorted(order)
    assert len(TARGETED_STEPS) < len(STEPS)


def _tick(daemon: Harness) -> Tick:
    ticker = daemon.ticker or daemon.start()
    now = daemon.sb.now()
    ctx = ticker.new_context(now)
    return Tick(ticker.deps, ctx, now, ticker, TickReader(ticker.deps, ctx))


@pytest.mark.slow
def test_a_stop_requested_during_a_step_ends_the_tick_before_the_next_step(
    daemon: Harness,
) -> None:
    """A stop request (SIGTERM) raised while one step runs is honoured before the next step
    starts, whichever two steps they are: the later step does nothing (and is not timed)."""
    t = _tick(daemon)
    times = StepTimes(t.deps.forge, t.ctx.merge_waits)
    ran: list[str] = []

    def first(t: Tick) -> None:
        ran.append("first")
        t.deps.stop.set()

    def second(t: Tick) -> None:
        ran.append("second")

    with pytest.raises(_Stopped):
        run_steps(t, (first, second), times)
    assert ran == ["first"]
    assert list(times.summary()) == ["first"]


@pytest.mark.slow
def test_one_pr_is_one_object_from_the_list_to_the_merge(daemon: Harness) -> None:
    """Steps 1-2 describe a new PR by one TickPR: its record is the stored one, its verdict
    is this tick's, and its snapshot is not held once it is published; step 4 merges that
    same object's PR."""
    n = daemon.open_pr(DOCS)
    t = _tick(daemon)
    poll.poll_and_classify(t)
    (item,) = t.ctx.seen
    assert isinstance(item, TickPR) and item.pr.number == n
    assert item.rec is t.deps.prs.records[item.pr.ref]
    assert item.verdict is not None and item.quadrant.value == item.rec.quadrant
    assert item.snapshot is None and item.checks is None  # published: reads dropped
    merging.step_merge(t)
    assert t.report.merged == [item.pr.ref]
    assert daemon.pull(n).merged


def test_each_step_is_timed_with_what_it_sent(daemon: Harness) -> None:
    """The per-step figures a tick logs, each from the forge's own counters: a step that lists
    the repo counts its requests (and the conditional one answered 304 the second time); a step
    that opens an issue counts one write; a step whose read GitHub answers 502 once counts the
    retry and the seconds waited before it; a step that sends nothing counts 0."""
    ticker = daemon.ticker or daemon.start()
    forge = ticker.forge
    forge.recent_changes(daemon.sb.repo, "issues", 1)  # the App's token, minted first
    forge.transport.backoff_base = forge.transport.backoff_max = 0.05
    times = StepTimes(forge, ticker.new_context(daemon.sb.now()).merge_waits)
    for _ in range(2):
        times.start("list")
        forge.recent_changes(daemon.sb.repo, "pulls", 1)
        times.stop()
    times.start("write")
    forge.ensure_issue(daemon.sb.repo, {"kind": "note", "key": "timed"}, "Timed", "text")
    times.stop()
    daemon.sb.faults("GET", r"/pulls\?.*sort=updated", status=502, count=1)
    times.start("retry")
    forge.recent_changes(daemon.sb.repo, "pulls", 1)
    times.stop()
    times.start("idle")
    times.stop()
    got = times.summary()
    assert got["list"]["sent"] == 2 and got["list"]["not_modified"] == 1
    assert got["list"]["writes"] == 0 and got["list"]["waited"] == 0
    assert got["write"]["writes"] == 1 and got["write"]["sent"] >= 1
    assert got["retry"]["sent"] == 2 and got["retry"]["writes"] == 0
    assert times.steps["retry"]["waited"] > 0 and got["retry"]["mergeability_waited"] == 0
    assert got["list"]["seconds"] >= 0 and got["idle"] == dict.fromkeys(got["idle"], 0)

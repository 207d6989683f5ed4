"""An owner's vote merges in the tick that reads it (one-tap 👍, ballot `/approve`), and the
votes that must not count still do not, in that same tick."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from .conftest import SESSION, SafetyHarness

pytestmark = pytest.mark.slow

EXAMPLE = {"examples/old.py": "print('v2')\n"}
WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}


def _task_pr(safe: SafetyHarness, task: str, files: dict[str, str]) -> int:
    return safe.open_pr(files, title="task work", trailers=f"{SESSION}\nTask-Id: {task}")


def _one_tap(safe: SafetyHarness, number: int, login: str, state: str = "open") -> Any:
    """The PR's one-tap issue (the one open for its current head), as `login` sees it."""
    ref = f"{safe.sb.repo}#{number}"
    found = [i for i in safe.issues("one-tap", state=state) if f"{ref}@" in i.body]
    assert len(found) == 1, found
    return safe.gh(login).get_repo(safe.sb.bot_repo).get_issue(found[0].number)


def _tick_once(safe: SafetyHarness) -> dict[str, Any]:
    """`capdaemon tick --once` as cron runs it (a child process); its JSON summary."""
    dirs = ["--config", str(safe.config_dir), "--state", str(safe.state_dir)]
    proc = subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "tick", "--once", *dirs, "--log-format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary: dict[str, Any] = json.loads(proc.stdout)
    return summary


def test_owner_thumbs_up_on_a_one_tap_merges_in_the_same_tick(safe: SafetyHarness) -> None:
    """The tick that reads bob's 👍 records the one-tap, republishes L1.C3 green and merges."""
    safe.configure()
    safe.task("t-2", level=2)
    number = _task_pr(safe, "t-2", EXAMPLE)
    safe.tick()
    assert safe.check(number).conclusion == "failure"
    _one_tap(safe, number, "bob").create_reaction("+1")
    safe.advance(seconds=20)
    report = safe.tick()
    assert report.merged == [f"{safe.sb.repo}#{number}"]
    assert safe.pull(number).merged
    assert safe.check(number).conclusion == "success"
    actions = [r["action"] for r in safe.actions(pr=number)]
    assert actions.index("one_tap") < actions.index("merge")  # recorded before the merge
    assert safe.actions("one_tap", number)[0]["by"] == "bob"


def test_cron_tick_once_counts_and_merges_a_thumbs_up_and_an_approve(
    safe: SafetyHarness,
) -> None:
    """Under cron each vote takes one `tick --once`: a one-tap 👍 and a ballot `/approve A`
    are counted and merged by the first run after them."""
    safe.sb.set_clock(None)  # the child process runs on the real clock: so does GitHub
    safe.configure()
    safe.task("t-2", level=2)
    tap = _task_pr(safe, "t-2", EXAMPLE)
    ballot = safe.open_pr(WORKFLOW, title="workflow")
    first = _tick_once(safe)
    assert first["merged"] == []
    _one_tap(safe, tap, "bob").create_reaction("+1")
    safe.ballot(ballot, "alice").create_comment("/approve A")
    second = _tick_once(safe)
    assert sorted(second["merged"]) == sorted(f"{safe.sb.repo}#{n}" for n in (tap, ballot))
    assert safe.pull(tap).merged and safe.pull(ballot).merged


def test_votes_that_must_not_count_do_not_merge_in_that_tick(safe: SafetyHarness) -> None:
    """A non-owner's 👍 and the PR author's own 👍 on a one-tap: the tick that reads them
    merges nothing, and L1.C3 stays red."""
    safe.configure()
    safe.task("t-2", level=2)
    number = _task_pr(safe, "t-2", EXAMPLE)
    safe.tick()
    _one_tap(safe, number, "mallory").create_reaction("+1")
    _one_tap(safe, number, "agent-1").create_reaction("+1")
    report = safe.tick()
    assert report.merged == [] and not safe.pull(number).merged
    assert safe.check(number).conclusion == "failure"
    assert safe.actions("one_tap", number) == []


def test_a_thumbs_up_followed_by_a_push_does_not_merge_the_new_head(safe: SafetyHarness) -> None:
    """bob taps 👍 for head 1, then the agent pushes head 2 before the next tick: that tick
    opens a new one-tap for head 2 and merges nothing (the 👍 was for another head)."""
    safe.configure()
    safe.task("t-2", level=2)
    number = _task_pr(safe, "t-2", EXAMPLE)
    safe.tick()
    old = _one_tap(safe, number, "bob")
    old.create_reaction("+1")
    safe.advance(seconds=5)
    new_head = safe.push(number, {"examples/old.py": "print('v3')\n"})
    report = safe.tick()
    assert report.merged == [] and not safe.pull(number).merged
    assert safe.pull(number).head.sha == new_head
    assert safe.check(number).conclusion == "failure"
    fresh = _one_tap(safe, number, "bob")
    assert fresh.number != old.number and new_head in fresh.body
    assert all(r["status"] != "approved" for r in safe.actions("one_tap", number))


def test_a_stale_approve_does_not_merge_the_pushed_head(safe: SafetyHarness) -> None:
    """alice's `/approve A` was for head 1; the agent pushes head 2 before the tick reads it:
    the vote is stale for the new round, nothing merges in that tick (nor the next)."""
    safe.configure()
    number = safe.open_pr(WORKFLOW, title="workflow")
    safe.tick()
    safe.advance(minutes=1)
    safe.ballot(number, "alice").create_comment("/approve A")
    safe.advance(seconds=5)
    safe.push(number, {".github/workflows/ci.yml": "name: ci\non: [merge_group]\njobs: {}\n"})
    report = safe.tick()
    assert report.merged == [] and not safe.pull(number).merged
    safe.tick()
    assert not safe.pull(number).merged
    assert safe.check(number).conclusion == "failure"
    assert all(r["status"] != "approved" for r in safe.actions("ballot", number))

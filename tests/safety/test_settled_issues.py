"""Every decision issue of a PR that left is closed once with the outcome, whatever decided it:
a 👍 one-tap with or without Telegram, a PR closed under a pending one-tap, a crash between the
merge and the close (reconciled once), and shadow mode closing nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import SESSION, SafetyHarness

EXAMPLE = {"examples/old.py": "print('v2')\n"}


def _one_tap(h: SafetyHarness, number: int) -> object:
    ref = f"{h.sb.repo}#{number}"
    (found,) = [i for i in h.issues("one-tap") if ref in i.body]
    return found


def _thumbs_up(h: SafetyHarness, issue: object, login: str = "bob") -> None:
    number = issue.number  # type: ignore[attr-defined]
    h.gh(login).get_repo(h.sb.bot_repo).get_issue(number).create_reaction("+1")


def _closed_once(h: SafetyHarness, issue: object, words: str) -> None:
    fresh = h.gh(h.sb.owner).get_repo(h.sb.bot_repo).get_issue(issue.number)  # type: ignore[attr-defined]
    assert fresh.state == "closed"
    said = [c.body for c in fresh.get_comments() if words in c.body]
    assert len(said) == 1, [c.body for c in fresh.get_comments()]


def test_a_thumbs_up_one_tap_closes_with_the_merge_when_telegram_is_not_configured(
    safe: SafetyHarness,
) -> None:
    """No Telegram at all: the 👍-approved one-tap issue closes in the tick that merges, with
    the merge commit in its comment, audited once; later ticks write nothing more to it."""
    safe.configure()
    safe.task("t-2", level=2)
    n = safe.open_pr(EXAMPLE, title="task work", trailers=f"{SESSION}\nTask-Id: t-2")
    safe.tick()
    issue = _one_tap(safe, n)
    _thumbs_up(safe, issue)
    safe.tick()
    safe.tick()
    assert safe.pull(n).merged
    _closed_once(safe, issue, "The PR was merged (merge commit")
    closes = [r for r in safe.actions("issue_closed", n) if r.get("kind") == "one-tap"]
    assert len(closes) == 1
    safe.sb.reset_counters()
    safe.tick()
    assert not safe.writes()
    _closed_once(safe, issue, "The PR was merged (merge commit")


def test_a_pr_closed_under_a_pending_one_tap_closes_its_issue(safe: SafetyHarness) -> None:
    """The agent closes its PR while the one-tap waits: the issue closes, saying so."""
    safe.configure()
    safe.task("t-2", level=2)
    n = safe.open_pr(EXAMPLE, title="task work", trailers=f"{SESSION}\nTask-Id: t-2")
    safe.tick()
    issue = _one_tap(safe, n)
    safe.gh("agent-1").get_repo(safe.sb.repo).get_pull(n).edit(state="closed")
    safe.tick()
    _closed_once(safe, issue, "closed without merging")


def test_shadow_mode_closes_no_decision_issue(safe: SafetyHarness) -> None:
    """In shadow mode a PR merged by a human keeps its one-tap issue open (nothing is closed)."""
    safe.configure(mode="shadow")
    safe.task("t-2", level=2)
    n = safe.open_pr(EXAMPLE, title="task work", trailers=f"{SESSION}\nTask-Id: t-2")
    safe.tick()
    issue = _one_tap(safe, n)
    safe.gh(safe.sb.owner).get_repo(safe.sb.repo).get_pull(n).merge()
    safe.tick()
    fresh = safe.gh(safe.sb.owner).get_repo(safe.sb.bot_repo).get_issue(issue.number)  # type: ignore[attr-defined]
    assert fresh.state == "open"


@pytest.mark.slow
def test_a_crash_between_the_merge_and_the_close_is_reconciled_once(safe: SafetyHarness) -> None:
    """A D PR approved by its ballot; the process dies right after GitHub merged it (before
    the outcome record and the ballot's close). The next tick records the merge and closes the
    ballot once, with the outcome; a third tick writes nothing."""
    safe.configure()
    n = safe.open_pr({".github/workflows/ci.yml": "name: crash\n"})
    safe.tick()
    safe.ballot(n, "alice").create_comment("/approve A")
    safe.stop()
    cfg = ["--config", str(safe.config_dir), "--state", str(safe.state_dir)]
    proc = subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "tick", "--once", *cfg, "--log-format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CAPDAEMON_CRASH_AFTER": "act:merge"},
    )
    assert proc.returncode == 137, proc.stderr[-2000:]
    assert safe.pull(n).merged
    ballot = safe.issue_for(n, "ballot")
    assert ballot.state == "open"  # the crash came before the close
    safe.tick()
    _closed_once(safe, ballot, "The PR was merged")
    closes = [r for r in safe.actions("issue_closed", n) if r.get("kind") == "ballot"]
    assert len(closes) == 1
    safe.sb.reset_counters()
    safe.tick()
    assert not safe.writes()

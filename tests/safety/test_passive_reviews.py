"""Passive B/C review issues record automatic approvals only, and wait for their PR to land."""

from __future__ import annotations

from .conftest import SESSION, SafetyHarness

ROUTER = {"src/multiagent_protocol/router.py": "def route(msg, handlers):\n    return None\n"}


def test_b_pr_waiting_for_a_tier3_ballot_gets_no_auto_approved_issue(safe: SafetyHarness) -> None:
    """A B change under a level-3 task waits for a ballot: no `auto-approved` issue is opened,
    before or after the owner approves it (an owner approved it, not capdaemon)."""
    safe.configure()
    safe.task("t-9", level=3)
    n = safe.open_pr(ROUTER, trailers=f"{SESSION}\nTask-Id: t-9")
    safe.tick()
    assert safe.classifications(n)[-1]["quadrant"] == "B"
    assert safe.issue_for(n, "ballot")
    assert not safe.issues("review")
    safe.ballot(n, "alice").create_comment("/approve A")
    safe.tick()
    safe.tick()
    assert safe.pull(n).merged
    assert not safe.issues("review")
    assert not [r for r in safe.actions("issue_opened", n) if r["kind"] == "review"]


def test_passive_issue_is_not_auto_closed_while_its_pr_is_open(safe: SafetyHarness) -> None:
    """A B PR held by a `do-not-merge` label: its passive issue stays open past 7 days while
    the PR is open; it closes 7 days on only once the PR is no longer open."""
    safe.configure()
    n = safe.open_pr(ROUTER)
    safe.gh(safe.sb.owner).get_repo(safe.sb.repo).get_issue(n).add_to_labels("do-not-merge")
    safe.tick()
    assert safe.issue_for(n, "review").state == "open"
    assert not safe.pull(n).merged
    safe.advance(days=8)
    safe.tick()
    assert safe.issue_for(n, "review").state == "open"
    safe.gh(safe.sb.owner).get_repo(safe.sb.repo).get_issue(n).remove_from_labels("do-not-merge")
    safe.tick()
    safe.tick()
    assert safe.pull(n).merged
    assert safe.issue_for(n, "review").state == "closed"

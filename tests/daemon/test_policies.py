"""Passive reviews, shadow mode, the merge race, the hard wall and escalations, real ticks."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from capdaemon.capability.model import Violation, ViolationKind
from capdaemon.demo.steps import dispatch_tasks
from capdaemon.stores.escalations import list_escalations, write_escalation

from .conftest import T0, Harness

pytestmark = pytest.mark.slow

ROUTER = {
    "src/multiagent_protocol/router.py": "def route(msg, handlers):\n    return handlers(msg)\n"
}


def test_passive_review_closes_after_seven_days(daemon: Harness) -> None:
    """A B review issue with no owner comment is closed with a comment once 7 days have passed."""
    n = daemon.open_pr(ROUTER)
    daemon.tick()
    issue = daemon.issue_for(n, "review")
    daemon.tick(T0 + timedelta(days=6, hours=23))
    assert daemon.issue_for(n, "review").state == "open"
    daemon.tick(T0 + timedelta(days=7, minutes=1))
    issue = daemon.issue_for(n, "review")
    assert issue.state == "closed"
    assert any("no owner commented within 7 days" in c.body for c in issue.get_comments())
    assert daemon.actions("issue_closed", n)[0]["kind"] == "review"


def test_owner_comment_keeps_a_passive_review_open(daemon: Harness) -> None:
    """An owner's comment on the review issue stops the auto-close (audited once)."""
    n = daemon.open_pr({"examples/old.py": None})
    daemon.tick()
    issue = daemon.issue_for(n, "review")
    daemon.gh("bob").get_repo("acme/capdaemon-bot").get_issue(issue.number).create_comment(
        "Looking at this."
    )
    daemon.tick(T0 + timedelta(days=8))
    daemon.tick(T0 + timedelta(days=9))
    assert daemon.issue_for(n, "review").state == "open"
    assert len(daemon.actions("passive_kept_open", n)) == 1


def test_shadow_mode_never_merges_or_closes(daemon: Harness) -> None:
    """mode: shadow publishes checks and issues, audits would_merge; merges/closes nothing."""
    daemon.configure(mode="shadow")
    a = daemon.open_pr({"README.md": "# widgets!\n"})
    d = daemon.open_pr({".github/workflows/ci.yml": "name: x\n"})
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(d, "alice").create_comment("/reject")
    report = daemon.tick()
    daemon.tick()
    assert daemon.pull(a).state == "open" and not daemon.pull(a).merged
    assert daemon.pull(d).state == "open"
    assert daemon.check(a).conclusion == "success"
    assert [r["status"] for r in daemon.actions("merge", a)] == ["would_merge"]
    assert [r["status"] for r in daemon.actions("close", d)] == ["would_close"]
    assert report.merged == [] and report.closed == []


def test_push_between_decision_and_merge_is_not_merged(daemon: Harness) -> None:
    """The merge sends the decided sha: a push landing meanwhile → HeadMoved, reclassified."""
    n = daemon.open_pr({"README.md": "# widgets\n\nTypo fixed.\n"})
    daemon.sb.faults("PUT", rf"/repos/acme/widgets/pulls/{n}/merge$", kind="delay", delay=1.5)
    result: dict[str, object] = {}
    worker = threading.Thread(target=lambda: result.setdefault("r", daemon.tick()))
    worker.start()
    deadline = time.monotonic() + 20
    while daemon.sb.pending_faults() and time.monotonic() < deadline:
        time.sleep(0.02)  # the merge request has reached the server and is being held
    new_head = daemon.push(n, {"README.md": "# widgets\n\nTypo fixed, and more.\n"})
    worker.join(30)
    assert not daemon.pull(n).merged
    failed = daemon.actions("merge", n)[-1]
    assert failed["status"] == "failed" and failed["reason"] == "head_moved"
    report = daemon.tick()
    assert report.classified == [f"acme/widgets#{n}"]
    assert daemon.pull(n).merged
    assert daemon.actions("merge", n)[-2]["head_sha"] == new_head


def test_hard_wall_fails_a_pr_without_a_capability(daemon: Harness) -> None:
    """require_capability: a PR with no task fails L1.C3 (P0) and gets a scope-violation issue."""
    daemon.configure(repo={"require_capability": True})
    n = daemon.open_pr({"README.md": "# widgets?\n"})
    daemon.tick()
    assert not daemon.pull(n).merged
    check = daemon.check(n)
    assert check.conclusion == "failure" and "no task linked" in check.output.summary
    assert "decision:scope-violation" in [
        lb.name for lb in daemon.issue_for(n, "scope-violation").labels
    ]
    assert daemon.actions("scope_violation", n)


def test_scope_violation_blocks_and_in_scope_merges(daemon: Harness) -> None:
    """Task-Id links the capability: a path outside it blocks (issue, audit); in scope merges."""
    daemon.configure(repo={"require_capability": True})
    dispatch_tasks(daemon.state_dir, T0)  # task-2364 allows scripts/finish-task.sh only
    trailers = "Agent-Session: claude-code/claude-opus-4/sess-00000002\nTask-Id: task-2364"
    bad = daemon.open_pr(
        {"scripts/finish-task.sh": "#!/bin/sh\nexit 1\n", "cron_settings.json": "{}\n"},
        trailers=trailers,
    )
    good = daemon.open_pr({"scripts/finish-task.sh": "#!/bin/sh\nexit 2\n"}, trailers=trailers)
    daemon.tick()
    assert not daemon.pull(bad).merged and daemon.pull(good).merged
    (violation,) = daemon.actions("scope_violation", bad)
    assert violation["task_id"] == "task-2364"
    assert [v["subject"] for v in violation["violations"]] == ["cron_settings.json"]
    assert "cron_settings.json" in daemon.issue_for(bad, "scope-violation").body.replace("\\", "")


def test_expired_capability_fails_the_check(daemon: Harness) -> None:
    """A capability past its TTL fails L1.C3 on the next tick (the fingerprint includes expiry)."""
    daemon.configure(repo={"require_capability": True, "blocking_labels": ["hold"]})
    dispatch_tasks(daemon.state_dir, T0)
    trailers = "Task-Id: task-101"
    n = daemon.open_pr({"README.md": "# widgets.\n"}, trailers=trailers)
    daemon.gh("agent-1").get_repo("acme/widgets").get_issue(n).add_to_labels("hold")
    daemon.tick()
    assert daemon.check(n).conclusion == "success"
    daemon.tick(T0 + timedelta(hours=49))
    assert daemon.check(n).conclusion == "failure"
    assert "expired" in daemon.check(n).output.summary


def test_escalation_records_become_owner_issues_once(daemon: Harness) -> None:
    """A finish-task escalation record opens one owner issue and is marked notified."""
    v = Violation(ViolationKind.NOT_ALLOWED, "cron_settings.json", "not in allowed_resources.paths")
    write_escalation(daemon.state_dir, "task-2364", [v], T0, layer="finish-task")
    daemon.tick()
    daemon.tick()
    issues = daemon.issues("escalation")
    assert len(issues) == 1 and "cron_settings.json" in issues[0].body.replace("\\", "")
    (record,) = list_escalations(daemon.state_dir)
    assert record.notified and record.notified["issue_url"].endswith(f"#{issues[0].number}")
    assert len(daemon.actions("escalation_notified")) == 1


def test_pr_closed_outside_the_ballot_closes_its_ballot(daemon: Harness) -> None:
    """A D PR its author closes leaves the open list: its ballot closes with a comment, once."""
    n = daemon.open_pr({".github/workflows/ci.yml": "name: gone\n"})
    daemon.tick()
    daemon.gh("agent-1").get_repo("acme/widgets").get_pull(n).edit(state="closed")
    daemon.tick()
    daemon.tick()
    ballot = daemon.issue_for(n, "ballot")
    assert ballot.state == "closed"
    assert [c.body for c in ballot.get_comments()][-1].startswith("Closing this ballot")
    assert [r["state"] for r in daemon.actions("pr_left", n)] == ["closed"]
    assert not daemon.pull(n).merged

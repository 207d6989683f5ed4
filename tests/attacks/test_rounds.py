"""Ballot rounds under attack: a rejection that comes back, a base retargeted (SPEC 3)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.daemon.conftest import Harness

pytestmark = pytest.mark.slow


def _d_pr(daemon: Harness) -> int:
    """A quadrant-D PR (a CI workflow change) by agent-1."""
    return daemon.open_pr(
        {".github/workflows/agent.yml": "name: agent\non: [pull_request]\n"}, title="add a workflow"
    )


def _ballot_comments(daemon: Harness, number: int) -> list[str]:
    return [c.body for c in daemon.ballot(number, "alice").get_comments()]


def test_reopened_after_rejection_is_a_new_round_even_with_the_reject_deleted(
    daemon: Harness,
) -> None:
    """bob `/approve A`, then alice `/reject`: closed. The agent deletes alice's comment and
    reopens the PR (GitHub's REST API) → a new round, bob's approval no longer counts, no merge;
    only a vote in the new round decides."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.advance(minutes=1)
    reject = daemon.ballot(n, "alice").create_comment("/reject")
    daemon.tick()
    assert daemon.pull(n).state == "closed"
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["rejected"]

    # the agent (a writer of the decision repo) deletes the rejection and reopens its PR
    agent = daemon.gh("agent-1")
    daemon.ballot(n, "agent-1").get_comment(reject.id).delete()
    assert all(c.id != reject.id for c in daemon.ballot(n, "alice").get_comments())
    agent.get_repo(daemon.sb.repo).get_pull(n).edit(state="open")
    daemon.advance(minutes=1)
    report = daemon.tick()
    daemon.tick()

    pull = daemon.pull(n)
    assert pull.state == "open" and not pull.merged
    assert report.merged == [] and daemon.actions("merge", n) == []
    (new_round,) = daemon.actions("ballot_round", n)
    assert new_round["reason"] == "reopened_after_rejection" and new_round["round"] == 2
    assert new_round["stale_votes"] >= 1  # bob's approval is on the issue: it belongs to round 1
    assert report.ballots[f"{daemon.sb.repo}#{n}"] == "pending"
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["rejected"]
    assert daemon.check(n).conclusion == "failure"
    assert daemon.issue_for(n, "ballot").state == "open"
    assert any("reopened after an owner's rejection" in b for b in _ballot_comments(daemon, n))

    # an owner's answer in the new round decides as usual
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.tick()
    assert daemon.pull(n).merged
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["rejected", "approved"]
    assert daemon.actions("ballot", n)[-1]["round"] == 2


def test_reopened_after_rejection_stays_pending_without_any_deletion(daemon: Harness) -> None:
    """alice `/reject` closes the PR; the agent reopens it: a new round, pending (not rejected
    again, not approved), and the PR is not closed a second time on the old vote."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/reject")
    daemon.tick()
    assert daemon.pull(n).state == "closed"
    daemon.gh("agent-1").get_repo(daemon.sb.repo).get_pull(n).edit(state="open")
    daemon.advance(minutes=1)
    report = daemon.tick()
    assert daemon.pull(n).state == "open" and not daemon.pull(n).merged
    assert report.ballots[f"{daemon.sb.repo}#{n}"] == "pending"
    assert [r["status"] for r in daemon.actions("close", n)] == ["attempted", "done"]
    assert [r["reason"] for r in daemon.actions("ballot_round", n)] == ["reopened_after_rejection"]


def test_a_rejection_whose_close_failed_still_closes_after_the_reject_is_deleted(
    daemon: Harness,
) -> None:
    """bob `/approve A`, alice `/reject`, and closing the PR fails (502). Before the next tick
    the agent deletes alice's comment → the recorded rejection stands: the close is retried,
    nothing merges, and the votes are not counted again."""
    sb = daemon.sb
    gh = {
        "base_url": sb.base_url,
        "app_id": sb.app_id,
        "private_key_file": str(sb.app_key_path),
        "installation_id": sb.installation_id,
        "per_tick_wait_seconds": 0,
    }
    daemon.configure(github=gh)
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.advance(minutes=1)
    reject = daemon.ballot(n, "alice").create_comment("/reject")
    sb.faults("PATCH", rf"^/repos/{sb.repo}/pulls/{n}$", status=502, count=4)
    report = daemon.tick()
    sb.clear_faults()
    assert daemon.pull(n).state == "open" and report.errors
    daemon.ballot(n, "agent-1").get_comment(reject.id).delete()
    daemon.advance(minutes=1)
    daemon.tick()
    pull = daemon.pull(n)
    assert pull.state == "closed" and not pull.merged
    assert daemon.actions("merge", n) == []
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["rejected"]
    assert [r["status"] for r in daemon.actions("close", n)][-1] == "done"


def test_a_rejected_pr_reopened_with_a_harmless_head_still_needs_an_owner(
    daemon: Harness,
) -> None:
    """alice rejects the D PR; the agent drops the workflow, pushes a README edit (quadrant A on
    its own) and reopens → no auto-merge: a PR an owner rejected needs an owner's approval."""
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/reject")
    daemon.tick()
    assert daemon.pull(n).state == "closed"
    daemon.push(n, {".github/workflows/agent.yml": None, "README.md": "# widgets, better\n"})
    daemon.gh("agent-1").get_repo(daemon.sb.repo).get_pull(n).edit(state="open")
    daemon.advance(minutes=1)
    report = daemon.tick()
    assert not daemon.pull(n).merged and report.merged == []
    assert daemon.check(n).conclusion == "failure"
    assert daemon.issue_for(n, "ballot").state == "open"
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.tick()
    assert daemon.pull(n).merged


def _dirs(daemon: Harness) -> list[str]:
    return ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]


def _release(daemon: Harness) -> None:
    """A `release` branch (unprotected) next to main."""
    daemon.sb.commit_files(
        daemon.sb.repo, "release", {"RELEASE": "1\n"}, "release branch", parent_branch="main"
    )


def _retarget(daemon: Harness, number: int, base: str) -> None:
    """The PR's author moves it to another base (PATCH pulls/{n} {"base": ...})."""
    daemon.gh("agent-1").get_repo(daemon.sb.repo).get_pull(number).edit(base=base)


def _on_branch(daemon: Harness, branch: str, path: str) -> bool:
    repo = daemon.gh(daemon.sb.owner).get_repo(daemon.sb.repo)
    return any(f.path == path for f in repo.get_git_tree(branch, recursive=True).tree)


def test_retarget_between_ticks_is_a_new_round(daemon: Harness) -> None:
    """An approved D PR waits for a required check; the agent retargets it to `release`, then
    back to main once the check is green → the approval is void, a new round, no merge; an
    owner's answer in the new round merges it."""
    _release(daemon)
    daemon.sb.set_protection(
        daemon.sb.repo, "main", {"required_status_checks": {"strict": False, "contexts": ["ci/t"]}}
    )
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.tick()
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["approved"]
    assert not daemon.pull(n).merged  # waits for ci/t

    _retarget(daemon, n, "release")
    daemon.advance(minutes=1)
    daemon.tick()
    assert not daemon.pull(n).merged

    _retarget(daemon, n, "main")
    repo = daemon.gh(daemon.sb.owner).get_repo(daemon.sb.repo)
    repo.get_commit(daemon.pull(n).head.sha).create_status(state="success", context="ci/t")
    daemon.advance(minutes=1)
    report = daemon.tick()
    assert not daemon.pull(n).merged and report.merged == []
    assert daemon.actions("merge", n) == []
    (moved,) = daemon.actions("base_changed", n)
    assert (moved["from"], moved["to"]) == ("main", "release")
    assert daemon.actions("approval_voided", n)
    (new_round,) = daemon.actions("ballot_round", n)
    assert new_round["reason"] == "base_changed" and new_round["round"] == 2
    assert report.ballots[f"{daemon.sb.repo}#{n}"] == "pending"
    assert any("base changed from release to main" in b for b in _ballot_comments(daemon, n))

    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.tick()
    assert daemon.pull(n).merged and daemon.pull(n).base.ref == "main"


def test_retarget_after_the_decision_before_the_merge_is_refused(daemon: Harness) -> None:
    """The agent retargets the approved PR to `release` after the tick decided on the page of
    open PRs (which said `main`) and before the merge call → the base is read again with the
    merge's head check: no merge anywhere, the failed attempt names the base, and the approval
    is void."""
    _release(daemon)
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    # the gather phase, the republish after the approval and the merge gate take the PR and
    # its checks from the page of open PRs; the one read of the PR alone is the merge's own
    # (GraphQL), right before the merge call: the retarget lands just before it
    daemon.sb.faults(
        "POST",
        "graphql#CapdaemonPullBeforeMerge$",
        kind="call",
        action=lambda: _retarget(daemon, n, "release"),
    )
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert daemon.pull(n).base.ref == "release", "the race did not happen where planned"
    assert not daemon.pull(n).merged and report.merged == []
    assert not _on_branch(daemon, "release", ".github/workflows/agent.yml")
    attempts = daemon.actions("merge", n)
    assert [(r["status"], r.get("reason")) for r in attempts] == [
        ("attempted", None),
        ("failed", "base_moved"),
    ]
    assert attempts[0]["base_ref"] == "main"
    assert daemon.actions("base_changed", n) and daemon.actions("approval_voided", n)
    daemon.tick()
    assert not daemon.pull(n).merged


def test_retarget_during_the_merge_call_trips_the_breaker_and_reverts(daemon: Harness) -> None:
    """The retarget lands between the base re-read and the merge call itself, so GitHub merges
    into `release` → capdaemon sees the merge commit is not on main: incident, breaker tripped
    at once (no further merges), a revert PR on `release` (auto-revert is on)."""
    daemon.configure(post_merge={"auto_revert_pr": True})
    _release(daemon)
    n = _d_pr(daemon)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/approve A")
    daemon.sb.faults(
        "PUT", rf"/pulls/{n}/merge$", kind="call", action=lambda: _retarget(daemon, n, "release")
    )
    daemon.tick()
    daemon.sb.clear_faults()
    pull = daemon.pull(n)
    assert pull.merged and pull.base.ref == "release"
    assert not _on_branch(daemon, "main", ".github/workflows/agent.yml")
    (wrong,) = daemon.actions("merge_wrong_base")
    assert (wrong["approved_base"], wrong["merged_into"]) == ("main", "release")
    assert daemon.actions("breaker.tripped")
    (incident,) = [r for r in daemon.actions("breaker.incident") if r["ref"].endswith(f"#{n}")]
    assert incident["incident_kind"] == "wrong_base"
    (revert,) = [r for r in daemon.actions("revert") if r["status"] == "done"]
    revert_pr = daemon.pull(revert["revert_pr"])
    assert revert_pr.base.ref == "release" and revert_pr.state == "open"

    # the breaker holds every merge until an owner resets it
    other = daemon.open_pr({"README.md": "# widgets, better\n"})
    daemon.tick()
    assert not daemon.pull(other).merged


def test_a_wrong_base_merge_found_after_a_crash_still_trips_the_breaker(daemon: Harness) -> None:
    """The retarget lands during the merge call and the daemon is killed before recording the
    outcome → the next tick reconciles the merge and finds it on `release`: incident, breaker."""
    _release(daemon)
    a = daemon.open_pr({"README.md": "# widgets, retargeted\n"})
    daemon.configure()
    daemon.sb.faults(
        "PUT", rf"/pulls/{a}/merge$", kind="call", action=lambda: _retarget(daemon, a, "release")
    )
    proc = subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "tick", "--once", *_dirs(daemon)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CAPDAEMON_CRASH_AFTER": "act:merge"},
    )
    daemon.sb.clear_faults()
    assert proc.returncode == 137, proc.stderr
    assert daemon.pull(a).merged and daemon.pull(a).base.ref == "release"
    report = daemon.tick()
    assert report.reconciled == [f"{daemon.sb.repo}#{a}:merge"]
    (wrong,) = daemon.actions("merge_wrong_base", a)
    assert (wrong["approved_base"], wrong["merged_into"]) == ("main", "release")
    assert daemon.actions("breaker.tripped")

"""The bot's own verified revert PR lands on a `require_capability: true` repo (no task needed)."""

from __future__ import annotations

from .conftest import SESSION, SafetyHarness

EXAMPLE = {"examples/old.py": "print('v2')\n"}


def _merged_with_task(safe: SafetyHarness) -> int:
    safe.task("task-9", level=1, policy="auto")
    n = safe.open_pr(EXAMPLE, trailers=f"{SESSION}\nTask-Id: task-9")
    safe.tick()
    assert safe.pull(n).merged, safe.actions(pr=n)
    return n


def test_bot_revert_lands_on_a_require_capability_repo(safe: SafetyHarness) -> None:
    """A failed probe's revert PR carries no task; it is still C, passes L1.C3 and merges, with
    no scope-violation issue."""
    safe.configure(repo={"require_capability": True}, post_merge={"auto_revert_pr": True})
    n = _merged_with_task(safe)
    safe.ci(safe.merge_sha(n), "failure")
    safe.step7()
    revert_no = [r for r in safe.actions("revert") if r["status"] == "done"][-1]["revert_pr"]
    safe.tick()
    assert safe.classifications(revert_no)[-1]["quadrant"] == "C"
    assert safe.check(revert_no).conclusion == "success"
    assert not safe.issues("scope-violation")
    assert safe.pull(revert_no).merged


def test_agent_pr_copying_a_bot_revert_still_needs_a_task(safe: SafetyHarness) -> None:
    """An agent's own PR labelled `decision:auto-revert` gets no exemption: no task → blocked."""
    safe.configure(repo={"require_capability": True})
    n = safe.open_pr({"examples/old.py": "print('v0')\n"}, title="Revert something")
    owner_repo = safe.gh("agent-1").get_repo(safe.sb.repo)
    owner_repo.get_issue(n).add_to_labels("decision:auto-revert")
    safe.tick()
    assert not safe.pull(n).merged
    assert safe.check(n).conclusion == "failure"
    assert len(safe.issues("scope-violation")) == 1

"""Reads for steady ticks: issue activity from the issue list, split checks, concurrent reads."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import github

from capdaemon.forge.client import Forge
from capdaemon.forge.types import IssueActivity, IssueList
from ghsandbox import Sandbox


def _as(sandbox: Sandbox, login: str) -> github.Github:
    return github.Github(
        base_url=sandbox.base_url,
        auth=github.Auth.Token(sandbox.tokens[login]),
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=None,
    )


def test_issue_activity_shows_comments_and_the_reaction_rollup(
    forge: Forge, sandbox: Sandbox
) -> None:
    """Counts, update time and the 👍/👎 rollup come from one list request; a 304 when unchanged."""
    issue = forge.ensure_issue(sandbox.bot_repo, {"kind": "ballot", "pr": "x#1"}, "t", "b")
    before = _open_issues(forge, sandbox.bot_repo)[issue.number]
    assert before.comments == 0 and dict(before.reactions or ())["+1"] == 0
    gh_issue = _as(sandbox, "alice").get_repo(sandbox.bot_repo).get_issue(issue.number)
    gh_issue.create_reaction("+1")
    after = _open_issues(forge, sandbox.bot_repo)[issue.number]
    assert dict(after.reactions or ())["+1"] == 1
    assert dict(after.reactions or ())["total_count"] == 1
    gh_issue.create_comment("/approve A")
    assert _open_issues(forge, sandbox.bot_repo)[issue.number].comments == 1
    sandbox.reset_counters()
    _open_issues(forge, sandbox.bot_repo)
    total = sandbox.counters()["total"]
    assert total["requests"] == 1 and total["counted"] == 0 and total["not_modified"] == 1


def test_check_runs_and_statuses_add_up_to_commit_checks(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """check_runs + commit_statuses == commit_checks; a snapshot reuses runs read at its head."""
    n = open_pr({"docs/a.md": "a\n"})
    head = _as(sandbox, "alice").get_repo(sandbox.repo).get_pull(n).head.sha
    _as(sandbox, "alice").get_repo(sandbox.repo).get_commit(head).create_status(
        state="success", context="ci"
    )
    runs, statuses = forge.check_runs(sandbox.repo, head), forge.commit_statuses(sandbox.repo, head)
    assert [c.name for c in statuses] == ["ci"]
    assert runs + statuses == forge.commit_checks(sandbox.repo, head)
    sandbox.reset_counters()
    snap = forge.snapshot(sandbox.repo, n, known_runs=(head, runs))
    assert snap.check_runs == tuple(runs)
    ends = sandbox.counters()["endpoints"]
    assert "GET /repos/{owner}/{repo}/commits/{ref}/check-runs" not in {
        k for k, v in ends.items() if v["requests"]
    }


def test_concurrent_reads_are_correct_and_share_the_etag_cache(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """Reads from 8 threads give the sequential answers; the second round is all 304s."""
    numbers = [open_pr({f"docs/p{i}.md": f"{i}\n"}, branch=f"b{i}") for i in range(12)]
    pulls = [forge.pull_status(sandbox.repo, n) for n in numbers]

    def read(i: int) -> tuple[int, str, int]:
        p = pulls[i]
        s = forge.snapshot(sandbox.repo, p.number)
        return s.number, s.head_sha, len(forge.check_runs(sandbox.repo, p.head_sha))

    with ThreadPoolExecutor(8) as pool:
        first = list(pool.map(read, range(len(numbers))))
    assert first == [(p.number, p.head_sha, 0) for p in pulls]
    sandbox.reset_counters()
    with ThreadPoolExecutor(8) as pool:
        again = list(pool.map(read, range(len(numbers))))
    assert again == first
    total = sandbox.counters()["total"]
    assert total["counted"] == 0 and total["errors"] == 0
    assert forge.rate_budget()["requests"] >= total["requests"]


def test_protection_is_read_once_a_tick_and_not_at_all_for_an_unprotected_branch(
    forge: Forge, sandbox: Sandbox
) -> None:
    """An unprotected branch costs one branch read a tick (no rules, no 404); a ruleset-only
    branch is seen as protected, its required check found; a new tick reads afresh."""
    forge.new_tick()
    sandbox.reset_counters()
    assert forge.effective_protection(sandbox.repo, "main") is None
    assert forge.effective_protection(sandbox.repo, "main") is None
    ends = sandbox.counters()["endpoints"]
    reads = {k: v["requests"] for k, v in ends.items() if v["requests"] and "/repos/" in k}
    assert reads == {"GET /repos/{owner}/{repo}/branches/{branch}": 1}
    ruleset = {
        "name": "checks",
        "target": "branch",
        "enforcement": "active",
        "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
        "rules": [
            {
                "type": "required_status_checks",
                "parameters": {
                    "strict_required_status_checks_policy": False,
                    "required_status_checks": [{"context": "L1.C3", "integration_id": 7}],
                },
            }
        ],
    }
    _as(sandbox, sandbox.owner).requester.requestJsonAndCheck(
        "POST", f"/repos/{sandbox.repo}/rulesets", input=ruleset
    )
    assert forge.effective_protection(sandbox.repo, "main") is None  # same tick: remembered
    forge.new_tick()
    found = forge.effective_protection(sandbox.repo, "main")
    assert found is not None
    assert found["required_status_checks"]["checks"] == [{"context": "L1.C3", "app_id": 7}]


def _open_issues(forge: Forge, repo: str) -> dict[int, IssueActivity]:
    """Every open issue's activity, as the tick lists them below a page of open issues."""
    return forge.issue_listing(repo, (IssueList(),)).open

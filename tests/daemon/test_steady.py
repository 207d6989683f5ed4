"""Steady-state ticks: what a tick skips reading when nothing changed, and what it still sees."""

from __future__ import annotations

from typing import Any

import pytest

from capdaemon.classify.rules import BUILTIN_RULES
from capdaemon.classify.ruletable import RULE_TABLE
from capdaemon.daemon.core.tick import CHECK_READING_RULES

from .conftest import SESSION, Harness

pytestmark = pytest.mark.slow

WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}
DOCS = {"docs/guide.md": "# Guide\n\nMore words.\n"}
PER_PR = (
    "GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
    "GET /repos/{owner}/{repo}/commits/{ref}/status",
    "GET /repos/{owner}/{repo}/issues/{number}/comments",
    "GET /repos/{owner}/{repo}/issues/{number}/reactions",
    "GET /repos/{owner}/{repo}/pulls/{number}",
    "POST /graphql CapdaemonComments",
    "POST /graphql CapdaemonReactions",
)
COMMENTS = "POST /graphql CapdaemonComments"  # ballot comments, with their edit record
BATCH = "POST /graphql CapdaemonOpenPulls"  # a page of open PRs with their heads' checks
CHECK_RUNS = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"


def _requests(daemon: Harness) -> dict[str, int]:
    """GET requests per endpoint since the last reset_counters."""
    return {k: v["requests"] for k, v in daemon.sb.counters()["endpoints"].items() if v["requests"]}


def _settle(daemon: Harness) -> None:
    """Tick until a tick classifies and writes nothing (the first ticks publish and answer)."""
    for _ in range(3):
        daemon.sb.reset_counters()
        report = daemon.tick()
        if not report.classified and not daemon.writes():
            return
    raise AssertionError("the daemon did not settle in 3 ticks")


def _app_github(daemon: Harness, installation_id: int) -> Any:
    import github

    token = daemon.sb.installation_token(installation_id)
    return github.Github(
        base_url=daemon.sb.base_url,
        auth=github.Auth.Token(token),
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=None,
    )


def test_steady_tick_reads_nothing_per_pr_for_pending_ballots(daemon: Harness) -> None:
    """(a) D PRs with a pending ballot: no check runs, statuses, comments or reactions read;
    the ballots cost one issue-list page and no request is counted against the rate limit."""
    numbers = [daemon.open_pr({f".github/workflows/w{i}.yml": f"name: w{i}\n"}) for i in range(3)]
    _settle(daemon)
    daemon.sb.reset_counters()
    report = daemon.tick()
    assert report.errors == []
    assert {report.ballots[f"acme/widgets#{n}"] for n in numbers} == {"pending"}
    seen = _requests(daemon)
    assert not [k for k in PER_PR if k in seen], seen
    assert seen.get("GET /repos/{owner}/{repo}/issues") == 1
    assert daemon.sb.counters()["total"]["counted"] == 0
    assert daemon.writes() == {}


def test_new_check_on_an_a_pr_is_picked_up_and_merges_it(daemon: Harness) -> None:
    """(b) An A PR waiting for an extra check keeps reading check runs; the check arrives
    (a check run from another App) and the next tick merges."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    n = daemon.open_pr(DOCS)
    _settle(daemon)
    assert not daemon.pull(n).merged
    head = daemon.pull(n).head.sha
    app = _app_github(daemon, daemon.sb.evil_installation_id)
    app.get_repo(daemon.sb.repo).create_check_run(
        name="ci", head_sha=head, status="completed", conclusion="success"
    )
    report = daemon.tick()
    assert report.merged == [f"acme/widgets#{n}"]
    assert daemon.pull(n).merged


def test_new_status_on_an_a_pr_is_picked_up_and_merges_it(daemon: Harness) -> None:
    """(b') Statuses are read for merging only, but still every tick for a PR that may merge.

    The status satisfies an unpinned context of branch protection (GitHub's own rule); an
    `extra_checks` entry never accepts a status (R7: any writer can post one)."""
    daemon.sb.set_protection(
        daemon.sb.repo, "main", {"required_status_checks": {"strict": False, "contexts": ["ci"]}}
    )
    n = daemon.open_pr(DOCS)
    _settle(daemon)
    head = daemon.pull(n).head.sha
    repo = daemon.gh("alice").get_repo(daemon.sb.repo)
    repo.get_commit(head).create_status(state="success", context="ci")
    assert daemon.tick().merged == [f"acme/widgets#{n}"]


@pytest.mark.parametrize("vote", ["reaction", "comment"])
def test_owner_vote_on_a_quiet_ballot_is_seen_next_tick(daemon: Harness, vote: str) -> None:
    """(c) After ticks that skipped the ballot's reads, an owner's 👍 (or `/approve A`) shows
    in the issue list's rollup (or comment count): the next tick reads, approves and merges."""
    n = daemon.open_pr(WORKFLOW)
    _settle(daemon)
    daemon.sb.reset_counters()
    daemon.tick()
    assert "GET /repos/{owner}/{repo}/issues/{number}/reactions" not in _requests(daemon)
    daemon.advance(minutes=1)
    ballot = daemon.ballot(n, "alice")
    if vote == "reaction":
        ballot.create_reaction("+1")
    else:
        ballot.create_comment("/approve A")
    report = daemon.tick()
    assert report.ballots[f"acme/widgets#{n}"] == "approved"
    assert daemon.pull(n).merged


def test_non_owner_reaction_then_owner_reaction_is_still_counted(daemon: Harness) -> None:
    """A non-owner's 👍 changes the rollup (read, ignored); an owner's later 👍 changes it
    again: both reads happen, the second approves."""
    n = _pending_d(daemon)
    daemon.ballot(n, "mallory").create_reaction("+1")
    daemon.tick()
    assert not daemon.pull(n).merged
    assert [r["user"] for r in daemon.actions("vote_ignored", n)] == ["mallory"]
    daemon.ballot(n, "bob").create_reaction("+1")
    daemon.tick()
    assert daemon.pull(n).merged


def _pending_d(daemon: Harness) -> int:
    n = daemon.open_pr(WORKFLOW)
    _settle(daemon)
    daemon.advance(minutes=1)
    return n


def test_quiet_ballot_is_read_in_full_after_the_reread_interval(daemon: Harness) -> None:
    """Even with an unchanged rollup a pending ballot is read again after BALLOT_REREAD."""
    _pending_d(daemon)
    daemon.sb.reset_counters()
    daemon.tick()
    assert COMMENTS not in _requests(daemon)
    daemon.advance(minutes=31)
    daemon.sb.reset_counters()
    daemon.tick()
    assert _requests(daemon).get(COMMENTS) == 1


def test_approved_ballot_waiting_for_checks_keeps_reading(daemon: Harness) -> None:
    """An approved D PR waiting for an extra check reads its check runs and its ballot every
    tick (an edit withdrawing the approval must be seen before a merge)."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    n = _pending_d(daemon)
    daemon.ballot(n, "alice").create_comment("/approve A")
    daemon.tick()
    assert not daemon.pull(n).merged  # waits for ci
    daemon.sb.reset_counters()
    daemon.tick()
    seen = _requests(daemon)
    assert seen.get(BATCH) == 1 and CHECK_RUNS not in seen  # its checks come with the PR page
    assert seen.get(COMMENTS) == 1


def test_judgment_d_is_not_firm_a_newer_judgment_lifts_it(daemon: Harness) -> None:
    """A D that rests on the canonical classifier-judgment keeps its check runs read: a newer
    judgment saying A reclassifies the docs PR to A, and it merges."""
    n = daemon.open_pr(DOCS)
    head = daemon.pull(n).head.sha
    repo = _app_github(daemon, daemon.sb.installation_id).get_repo(daemon.sb.repo)
    repo.create_check_run(
        name="classifier-judgment",
        head_sha=head,
        status="completed",
        conclusion="neutral",
        output={"title": "judgment", "summary": "Quadrant: D"},
    )
    _settle(daemon)
    ticker = daemon.ticker
    assert ticker is not None
    rec = ticker.prs.get("acme/widgets", n)
    assert rec is not None and rec.quadrant == "D" and rec.firm_d is False
    daemon.sb.reset_counters()
    daemon.tick()
    assert _requests(daemon).get(BATCH) == 1  # the page of open PRs carries its check runs
    daemon.advance(minutes=1)
    repo.create_check_run(
        name="classifier-judgment",
        head_sha=head,
        status="completed",
        conclusion="neutral",
        output={"title": "judgment", "summary": "Quadrant: A"},
    )
    report = daemon.tick()
    assert report.classified == [f"acme/widgets#{n}"]
    assert daemon.pull(n).merged


def test_draft_and_blocked_prs_skip_reads_but_a_blocking_label_does_not(daemon: Harness) -> None:
    """A draft A PR reads nothing per PR in a steady tick; an A PR with `do-not-merge` still
    reads its check runs (a human could merge it on L1.C3)."""
    daemon.configure(repo={"extra_checks": ["ci"]})  # nothing merges
    sb = daemon.sb
    sb.commit_files(
        sb.repo,
        "agent-1/draft",
        DOCS,
        f"Draft\n\n{SESSION}\n",
        author="agent-1",
        parent_branch="main",
    )
    sb.open_pr(sb.repo, "agent-1/draft", "main", "Draft", "body", "agent-1", draft=True)
    _settle(daemon)
    daemon.sb.reset_counters()
    daemon.tick()
    assert not [k for k in PER_PR if k in _requests(daemon)]
    labelled = daemon.open_pr({"docs/other.md": "# Other\n"}, user="agent-2")
    daemon.gh("agent-2").get_repo("acme/widgets").get_issue(labelled).add_to_labels("do-not-merge")
    _settle(daemon)
    daemon.sb.reset_counters()
    daemon.tick()
    seen = _requests(daemon)
    assert seen.get(BATCH) == 1 and not [k for k in PER_PR if k in seen], seen


def test_check_reading_rules_list_is_complete() -> None:
    """The steady-state skip's CHECK_READING_RULES is the rule table's "reads check runs"
    column (a D voted by any other built-in rule is firm: no check run can lift it); the
    table's column itself is tested against the rules' behaviour in tests/classify."""
    assert frozenset(r.name for r in RULE_TABLE if r.reads_checks) == CHECK_READING_RULES
    assert {r.name for r in BUILTIN_RULES} >= CHECK_READING_RULES


@pytest.mark.parametrize("github_answers_304", [True, False])
def test_a_spent_budget_does_not_stop_free_polling(
    daemon: Harness, github_answers_304: bool
) -> None:
    """The primary budget is spent: a steady tick still polls (GraphQL has its own budget, and
    every REST read it makes is conditional). Where GitHub answers such a read 304, the tick
    completes and sees the ballots; where it refuses it, the tick stops cleanly at the first
    refusal (one request), as rate-limited."""
    daemon.sb.set_fidelity(exhausted_conditional_304=int(github_answers_304))
    n = daemon.open_pr(WORKFLOW)
    _settle(daemon)
    daemon.sb.set_rate_limit(1)  # far less than already used: nothing left this hour
    daemon.sb.reset_counters()
    report = daemon.tick()
    refused = daemon.sb.counters()["total"]["errors"]
    if github_answers_304:
        assert report.errors == [] and refused == 0
        assert report.ballots[f"acme/widgets#{n}"] == "pending"
        assert daemon.sb.counters()["total"]["counted"] == 0
    else:
        assert any("rate limit" in e for e in report.errors) and refused == 1

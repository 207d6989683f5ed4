"""A cold start over a backlog larger than the hourly write budget, through the sandbox: the most
valuable work first (D ballots before passive B/C issues), progress every tick, approved
ballots still merging, polling never stopping, waiting PRs costing no read until published."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from capdaemon.filenames import BUDGET_FILE
from capdaemon.forge.markers import parse_marker

from .conftest import SESSION, Harness

pytestmark = pytest.mark.slow

CHECK_WRITE = "POST /repos/{owner}/{repo}/check-runs"
ISSUE_WRITE = "POST /repos/{owner}/{repo}/issues"
# what reading a PR's snapshot asks for beyond the PR list (per PR)
PR_READS = ("GET /repos/{owner}/{repo}/compare/{basehead}", "GET /repos/{owner}/{repo}/git/trees/")


def _budgeted(daemon: Harness, mode: str = "enforce", **github: Any) -> None:
    daemon.configure(mode=mode)
    path = daemon.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["github"].update(github)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _workflow(i: int) -> dict[str, str]:
    """A new CI workflow: quadrant D (a ballot)."""
    return {f".github/workflows/ci{i}.yml": "name: ci\non: [pull_request]\njobs: {}\n"}


def _docs(i: int) -> dict[str, str]:
    """A notes page outside docs/ (where prose is not carved out): quadrant B here (a passive
    review issue, then a merge)."""
    return {f"notes/p{i}.md": f"# {i}\n"}


def _draft(daemon: Harness, i: int) -> int:
    """A docs PR opened as a draft: classified and published like any B PR, never merged (a
    merge moves the base, and GitHub then computes every PR's mergeability again, lazily)."""
    branch = f"agent-1/draft-{i}"
    sb = daemon.sb
    sb.commit_files(sb.repo, branch, _docs(i), f"Docs\n\n{SESSION}\n", parent_branch="main")
    return sb.open_pr(sb.repo, branch, "main", "Docs", "body", "agent-1", draft=True)


def _metrics(daemon: Harness) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((daemon.state_dir / "tick_metrics.json").read_text())
    return data


def _opened(daemon: Harness, kind: str) -> dict[int, int]:
    """PR number → the number of its decision issue of `kind` (issue numbers say the order)."""
    out = {}
    for issue in daemon.issues(kind):
        ref = str((parse_marker(issue.body) or {}).get("pr", ""))
        out[int(ref.rpartition("#")[2])] = issue.number
    return out


def _endpoint(daemon: Harness, prefixes: tuple[str, ...], key: str = "requests") -> int:
    """Requests (or counted ones) since the counters were reset to endpoints starting so."""
    endpoints = daemon.sb.counters()["endpoints"]
    return sum(v[key] for k, v in endpoints.items() if k.startswith(prefixes))


def _exact(daemon: Harness, endpoint: str) -> int:
    """Requests since the counters were reset to exactly this endpoint."""
    return int(daemon.sb.counters()["endpoints"].get(endpoint, {}).get("requests", 0))


def test_cold_start_opens_every_ballot_before_any_passive_issue(daemon: Harness) -> None:
    """Twelve B PRs opened before three D PRs, 20 writes an hour (15 for new PRs): the first
    tick opens all three ballots (2 writes each) and then three passive reviews; every later
    tick (an hour apart) publishes more; the tick summary and tick_metrics.json say what waits.
    Taken oldest first (before), the first tick opened five passive reviews and no ballot."""
    _budgeted(daemon, writes_per_hour=20)
    docs = [daemon.open_pr(_docs(i)) for i in range(12)]
    ds = [daemon.open_pr(_workflow(i)) for i in range(3)]
    report = daemon.tick()
    ballots, reviews = _opened(daemon, "ballot"), _opened(daemon, "review")
    assert sorted(ballots) == ds, "every D ballot opens in the first tick"
    assert sorted(reviews) == docs[:3]  # then the oldest B PRs, as far as the writes go
    assert max(ballots.values()) < min(reviews.values()), "a passive issue before a ballot"
    assert report.backlog_left == 9 and report.backlog_unread == 0
    assert report.backlog_waiting == {"A": 0, "B": 9, "C": 0, "D": 0}
    metrics = _metrics(daemon)
    assert metrics["backlog_left"] == 9 and metrics["backlog_waiting"]["B"] == 9
    assert metrics["budget"]["new_pr_writes"] == 15
    waiting = json.loads((daemon.state_dir / BUDGET_FILE).read_text())["waiting"]
    assert sorted(waiting) == sorted(f"acme/widgets#{n}" for n in docs[3:])
    assert {w["quadrant"] for w in waiting.values()} == {"B"}
    for n in docs[3:]:  # nothing is written for a waiting PR: no check run, no issue
        assert not [r for r in daemon.pull(n).get_commits().reversed[0].get_check_runs()]
    backlog = [report.backlog_left]
    while report.backlog_left:
        daemon.advance(minutes=61)  # the hour's writes are spent: the next hour's budget
        report = daemon.tick()
        assert report.classified, "no progress in a tick"
        assert report.backlog_left < backlog[-1]
        backlog.append(report.backlog_left)
    assert backlog == [9, 4, 0]
    assert sorted(_opened(daemon, "review")) == docs


def test_approved_ballot_merges_while_the_backlog_waits_and_polling_goes_on(
    daemon: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    """The D PR is the newest of seven; its ballot opens in the first tick anyway. The owner
    approves it; the next tick has no write budget left for new PRs, yet the approved PR merges,
    a push to a known PR is classified and published again, and the PR list is still read
    (GraphQL) — while nothing at all is written or read for the waiting PRs (draft docs PRs
    here, so that no other merge moves the base in between).
    Taken oldest first (before), the D PR had no ballot after the first tick."""
    _budgeted(daemon, writes_per_hour=20)
    docs = [_draft(daemon, i) for i in range(6)]
    d = daemon.open_pr(_workflow(0))
    first = daemon.tick()
    assert f"acme/widgets#{d}" in first.classified
    assert first.backlog_waiting == {"A": 0, "B": 2, "C": 0, "D": 0}
    daemon.ballot(d, "alice").create_comment("/approve A")
    pushed = docs[0]  # published in the first tick: known
    daemon.push(pushed, {"notes/p0.md": "# 0, again\n"})
    daemon.advance(minutes=2)
    daemon.sb.reset_counters()
    capsys.readouterr()
    second = daemon.tick()
    snapshots = [ln for ln in capsys.readouterr().out.splitlines() if "forge.snapshot" in ln]
    assert second.ballots.get(f"acme/widgets#{d}") == "approved"
    assert f"acme/widgets#{d}" in second.merged, "the approved ballot waited for the backlog"
    assert _metrics(daemon)["budget"]["new_pr_writes"] < 3  # less than a B PR takes
    assert second.backlog_left == 2 and second.backlog_waiting["B"] == 2
    assert f"acme/widgets#{pushed}" in second.classified  # known PRs never wait
    assert _endpoint(daemon, ("POST /graphql CapdaemonOpenPulls",)) == 1  # never blind
    assert _exact(daemon, ISSUE_WRITE) == 0  # no issue opened
    assert _exact(daemon, CHECK_WRITE) == 1  # the pushed head's L1.C3 (the approved one: updated)
    for n in docs[-2:]:  # waiting: not read, nothing recorded
        assert not [ln for ln in snapshots if f"pr=acme/widgets#{n} " in ln]
        assert not daemon.actions(pr=n) and not daemon.classifications(n)
    assert [ln for ln in snapshots if f"pr=acme/widgets#{pushed} " in ln]


def test_a_waiting_pr_is_read_again_for_free_when_published(daemon: Harness) -> None:
    """Eight B PRs, 20 writes an hour, shadow mode (the base branch does not move): five are
    published in the first tick and three wait, classified. The tick that publishes them reads
    their files again without one counted request (ETags, sha-keyed reads), and classifies
    them once (one audit entry each). Read first when published (before), each cost 2 counted
    reads more (its compare and its tree)."""
    _budgeted(daemon, mode="shadow", writes_per_hour=20)
    prs = [daemon.open_pr(_docs(i)) for i in range(8)]
    first = daemon.tick()
    assert first.backlog_left == 3
    daemon.advance(minutes=61)
    daemon.sb.reset_counters()
    second = daemon.tick()
    assert sorted(second.classified) == sorted(f"acme/widgets#{n}" for n in prs[5:])
    assert _endpoint(daemon, PR_READS, "counted") == 0  # read again for free
    for n in prs:
        assert len(daemon.classifications(n)) == 1


def test_unread_and_waiting_are_counted_apart(daemon: Harness) -> None:
    """A read budget of 3 new PRs a tick (20 requests an hour) and 8 writes an hour for five
    new PRs: three are read and classified, two of them published (3 writes each), one waits
    classified, two stay unread — and the newest (a D PR) is among them: its quadrant is not
    known before it is read."""
    _budgeted(daemon, writes_per_hour=8, requests_per_hour=20)
    for i in range(4):
        daemon.open_pr(_docs(i))
    d = daemon.open_pr(_workflow(0))
    report = daemon.tick()
    assert len(report.classified) == 2
    assert report.backlog_unread == 2
    assert report.backlog_waiting == {"A": 0, "B": 1, "C": 0, "D": 0}
    assert report.backlog_left == 3
    assert _metrics(daemon)["backlog_unread"] == 2
    assert not daemon.classifications(d)

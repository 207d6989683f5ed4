"""The decision repo's issue listings under a kept `since`: what a tick still sees (votes on
old ballots, owner comments, edits, closes, stripped labels), across `tick --once` processes
too, and what a steady tick costs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from capdaemon.stores.issuewatch import read_watch, watch_path
from capdaemon.timefmt import parse_utc

from .conftest import T0, Harness

pytestmark = pytest.mark.slow

WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}
ROUTER = {"src/multiagent_protocol/router.py": "def route(msg, hs):\n    return hs[msg]\n"}
LIST = "GET /repos/{owner}/{repo}/issues"
ONE_ISSUE = "GET /repos/{owner}/{repo}/issues/{number}"


def _pad(daemon: Harness, n: int, title: str = "older") -> None:
    """`n` unrelated open issues in the decision repo (an owner's), at the sandbox's time."""
    for i in range(n):
        daemon.sb.backend.create_issue(daemon.sb.bot_repo, f"{title} {i}", "padding", "alice")


def _since(daemon: Harness) -> str:
    watch = read_watch(daemon.state_dir)
    assert watch is not None and watch.repo == daemon.sb.bot_repo
    return watch.since


def _age_past(daemon: Harness, *issues: Any) -> None:
    """A minute later, sixty more issues and a tick: the changes list's `since` moves past
    `issues` (their update times are older), so only a label listing or a new update shows
    them now."""
    daemon.advance(minutes=1)
    _pad(daemon, 60, "newer")
    daemon.tick()
    daemon.tick()
    since = parse_utc(_since(daemon))
    for issue in issues:
        issue.update()
        assert issue.updated_at < since


def _list_reads(daemon: Harness) -> dict[str, int]:
    ends = daemon.sb.counters()["endpoints"]
    return dict(ends.get(LIST) or {"requests": 0, "counted": 0, "not_modified": 0})


def test_a_vote_on_an_old_ballot_past_the_first_page_is_counted(daemon: Harness) -> None:
    """120 older issues, then a D PR's ballot (on the open list's second page); once the
    changes list starts after the ballot's last update, an owner's 👍 (which moves no update
    time) is still seen — through the open ballots' listing — and the PR merges."""
    _pad(daemon, 120)
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    ballot = daemon.ballot(n, "alice")
    _age_past(daemon, ballot)
    assert not daemon.pull(n).merged
    daemon.advance(minutes=1)
    ballot.create_reaction("+1")
    daemon.tick()
    assert daemon.pull(n).merged


def test_owner_comment_on_an_old_passive_issue_keeps_it_open(daemon: Harness) -> None:
    """A merged B PR's passive review issue, older than the changes list's `since`: an
    owner's comment still stops the auto-close after 7 days."""
    _pad(daemon, 120)
    n = daemon.open_pr(ROUTER)
    daemon.tick()
    assert daemon.pull(n).merged
    review = daemon.issue_for(n, "review")
    _age_past(daemon, review)
    daemon.gh("bob").get_repo(daemon.sb.bot_repo).get_issue(review.number).create_comment(
        "Looking at this."
    )
    daemon.tick(T0 + timedelta(days=8))
    assert daemon.issue_for(n, "review").state == "open"
    assert len(daemon.actions("passive_kept_open", n)) == 1


def test_edits_and_closes_of_old_issues_are_seen(daemon: Harness) -> None:
    """Issues older than the changes list's `since`: an agent's edit of a passive review is
    restored, a ballot closed by an agent is reopened, a passive review closed by hand stays
    closed (as before: nobody votes on it)."""
    _pad(daemon, 120)
    b = daemon.open_pr(ROUTER)
    d = daemon.open_pr(WORKFLOW)
    c = daemon.open_pr({"examples/old.py": None})
    daemon.tick()
    review, ballot = daemon.issue_for(b, "review"), daemon.issue_for(d, "ballot")
    closed_review = daemon.issue_for(c, "review")
    original = review.body
    _age_past(daemon, review, ballot, closed_review)
    agent = daemon.gh("agent-2").get_repo(daemon.sb.bot_repo)
    agent.get_issue(review.number).edit(body="nothing to see", title="nothing to see")
    agent.get_issue(ballot.number).edit(state="closed")
    daemon.gh("alice").get_repo(daemon.sb.bot_repo).get_issue(closed_review.number).edit(
        state="closed"
    )
    daemon.tick()
    assert daemon.issue_for(b, "review").body == original
    assert daemon.issue_for(d, "ballot").state == "open"
    assert daemon.issue_for(c, "review").state == "closed"
    assert [r["what"] for r in daemon.actions("issue_restored", b)] == ["edited"]
    assert [r["what"] for r in daemon.actions("issue_restored", d)] == ["closed"]
    assert daemon.actions("issue_restored", c) == []


def test_a_stripped_ballot_label_neither_merges_nor_hides_a_vote(daemon: Harness) -> None:
    """An agent strips `decision:pending-owner` from an old ballot and adds approval-looking
    labels: the ballot leaves the label listing, the PR stays blocked; the changes list keeps
    showing the ballot (its `since` is held before it), so an owner's 👍 still merges it."""
    _pad(daemon, 120)
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    ballot = daemon.ballot(n, "agent-1")
    _age_past(daemon, ballot)
    daemon.advance(minutes=1)
    ballot.remove_from_labels("decision:pending-owner")
    ballot.add_to_labels("decision:deferred", "approved")
    for _ in range(3):  # held: sixty more issues and ticks do not move `since` past it
        daemon.tick()
        daemon.advance(minutes=1)
        _pad(daemon, 60, "later")
    assert not daemon.pull(n).merged and daemon.check(n).conclusion == "failure"
    ballot.update()
    assert parse_utc(_since(daemon)) <= ballot.updated_at
    daemon.ballot(n, "alice").create_reaction("+1")
    daemon.tick()
    assert daemon.pull(n).merged


def test_steady_tick_reads_the_changes_list_and_the_ballots_only(daemon: Harness) -> None:
    """250 open issues in the decision repo (three pages of the open list): a steady tick
    reads one page of changes and one of open ballots, both free 304s."""
    _pad(daemon, 250)
    daemon.open_pr(WORKFLOW)
    daemon.open_pr(ROUTER)
    daemon.tick()
    daemon.advance(minutes=1)
    _pad(daemon, 60, "newer")
    for _ in range(3):
        daemon.tick()
    daemon.sb.reset_counters()
    daemon.tick()
    reads = _list_reads(daemon)
    assert reads["requests"] == 2 and reads["not_modified"] == 2 and reads["counted"] == 0


def _tick_once(daemon: Harness) -> subprocess.CompletedProcess[str]:
    args = ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]
    proc = subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "tick", "--once", *args, "--log-format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_cron_processes_keep_the_since_and_see_an_old_vote(daemon: Harness) -> None:
    """`tick --once` processes (on the real clock, so the sandbox follows it): the `since` is
    kept in an owner-only file between them, a steady process reads the same two pages as
    free 304s, and a 👍 on the old ballot is seen by the next process."""
    daemon.configure()
    real = daemon.sb.set_clock
    real(datetime.now(UTC))
    _pad(daemon, 120)
    n = daemon.open_pr(WORKFLOW)
    _tick_once(daemon)
    real(datetime.now(UTC) + timedelta(seconds=2))
    _pad(daemon, 60, "newer")
    for _ in range(3):
        real(datetime.now(UTC) + timedelta(seconds=2))
        _tick_once(daemon)
    assert watch_path(daemon.state_dir).stat().st_mode & 0o077 == 0
    since = _since(daemon)
    ballot = daemon.ballot(n, "alice")
    assert ballot.updated_at < parse_utc(since)
    daemon.sb.reset_counters()
    real(datetime.now(UTC) + timedelta(seconds=2))
    _tick_once(daemon)
    reads = _list_reads(daemon)
    assert reads["requests"] == 2 and reads["not_modified"] == 2, reads
    assert _since(daemon) == since
    real(datetime.now(UTC) + timedelta(seconds=2))
    ballot.create_reaction("+1")
    real(datetime.now(UTC) + timedelta(seconds=4))
    _tick_once(daemon)
    assert daemon.pull(n).merged


def test_a_corrupt_watch_file_lists_everything_and_is_kept(daemon: Harness) -> None:
    """A corrupt issue_watch.json: the tick lists every open issue (so a vote is still seen),
    says so in its errors, and never overwrites the file."""
    _pad(daemon, 120)
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    path = watch_path(daemon.state_dir)
    path.write_text(json.dumps({"version": 1, "repo": daemon.sb.bot_repo, "since": "soon"}))
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_reaction("+1")
    report = daemon.tick()
    assert any("issue_watch.json" in e and "since" in e for e in report.errors), report.errors
    assert daemon.pull(n).merged
    assert json.loads(path.read_text())["since"] == "soon"


def _judged_bases(daemon: Harness, n: int) -> list[str]:
    path = daemon.state_dir / "classifier_audit.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r["base_sha"] for r in rows if r.get("pr") == f"{daemon.sb.repo}#{n}"]


def _judge_again(daemon: Harness, n: int, label: str) -> None:
    """The base moves and the PR gets a label: the next tick judges it again at the new base."""
    daemon.sb.commit_files(daemon.sb.repo, "main", {f"docs/{label}.md": "x\n"}, "base moves")
    daemon.gh("alice").get_repo(daemon.sb.repo).get_issue(n).add_to_labels(label)


def test_a_review_judged_again_unchanged_is_not_read_and_an_edit_is_still_restored(
    daemon: Harness,
) -> None:
    """A B PR waits (a blocking label) while it is judged again at new bases: its passive
    review, unchanged, costs no request. An agent's edit of that review meanwhile is still
    restored by the next full tick, and judging the PR again does not undo the restore."""
    n = daemon.open_pr(ROUTER)
    daemon.gh("alice").get_repo(daemon.sb.repo).get_issue(n).add_to_labels("do-not-merge")
    daemon.tick()
    review = daemon.issue_for(n, "review")
    original = review.body
    _judge_again(daemon, n, "triage")
    daemon.sb.reset_counters()
    daemon.tick()
    ends = daemon.sb.counters()["endpoints"]
    assert _judged_bases(daemon, n)[-1] == daemon.sb.branch_sha(daemon.sb.repo, "main")
    assert len(_judged_bases(daemon, n)) == 2
    assert not ends.get(ONE_ISSUE, {}).get("requests"), ends.get(ONE_ISSUE)
    assert not ends.get("PATCH" + ONE_ISSUE[3:], {}).get("requests")
    agent = daemon.gh("agent-2").get_repo(daemon.sb.bot_repo)
    agent.get_issue(review.number).edit(body="nothing to see")
    _judge_again(daemon, n, "later")
    daemon.tick()
    assert daemon.issue_for(n, "review").body == original
    assert [r["what"] for r in daemon.actions("issue_restored", n)] == ["edited"]
    assert len(_judged_bases(daemon, n)) == 3
    _judge_again(daemon, n, "again")
    daemon.tick()
    assert daemon.issue_for(n, "review").body == original

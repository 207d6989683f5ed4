"""Failures injected mid-tick (sandbox faults): nothing unsafe, nothing lost (SPEC 10)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import pytest

from capdaemon.commands._common import load_config_and_rules
from capdaemon.daemon.service.runner import github_credentials, open_ticker
from capdaemon.forge.client import Forge
from capdaemon.state import StateError
from tests.attacks.conftest import quadrant
from tests.daemon.conftest import Harness

pytestmark = pytest.mark.slow

BOT = r"^/repos/acme/capdaemon-bot"


def no_wait(h: Harness, **kw: Any) -> Harness:
    """Config with a zero per-tick wait budget: a fault is not retried (fast, deterministic)."""
    sb = h.sb
    gh = {
        "base_url": sb.base_url,
        "app_id": sb.app_id,
        "private_key_file": str(sb.app_key_path),
        "installation_id": sb.installation_id,
        "per_tick_wait_seconds": 0,
    }
    return h.configure(github=gh, **kw)


def merges_on_main(h: Harness) -> int:
    """Commits on main made by merging a PR (squash commits name the PR)."""
    repo = h.gh(h.sb.owner).get_repo(h.sb.repo)
    return sum(1 for c in repo.get_commits(sha="main") if "(#" in c.commit.message.split("\n")[0])


def l1c3_runs(h: Harness, number: int) -> int:
    """How many L1.C3 check runs exist on the PR's head (all of them, not only the latest)."""
    sha = h.pull(number).head.sha
    commit = h.gh(h.sb.owner).get_repo(h.sb.repo).get_commit(sha)
    return sum(1 for r in commit.get_check_runs(filter="all") if r.name == "L1.C3")


def statuses(h: Harness, action: str, number: int) -> list[str]:
    return [str(r.get("status")) for r in h.actions(action, number)]


def test_failed_second_page_of_files_is_d_and_never_merged(daemon: Harness) -> None:
    """502 on page 2 of a 301-file PR's files → classified D (incomplete), L1.C3 fails, no merge."""
    no_wait(daemon)
    n = daemon.open_pr({f"docs/page{i:03}.md": f"page {i}\n" for i in range(301)})
    files = rf"/pulls/{n}/files$"
    daemon.sb.faults("GET", files, kind="delay", delay=0.0, count=1)  # page 1 answers
    daemon.sb.faults("GET", files, status=502, count=4)  # page 2 fails
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert quadrant(daemon, n) == "D"
    assert "incomplete" in str(daemon.classifications(n)[-1]).lower()
    assert not daemon.pull(n).merged and report.merged == []
    assert daemon.check(n).conclusion == "failure"
    assert daemon.actions("merge", n) == []


def test_pr_read_before_merge_fails_no_merge(daemon: Harness) -> None:
    """502 on the one read right before a merge (the PR, whose mergeability GitHub was still
    computing when the page of open PRs was read) → no merge this tick; merged next tick."""
    no_wait(daemon)
    n = daemon.open_pr({"README.md": "# widgets, better\n"})
    daemon.tick()
    assert daemon.pull(n).merged  # the same PR shape merges when nothing fails

    m = daemon.open_pr({"README.md": "# widgets, better still\n"})
    # the snapshot, publish_check's lookup and the merge gate take the PR and its checks from
    # the page of open PRs; the one REST read is the merge gate's, as GitHub had not computed
    # the new PR's mergeability for the page — and it fails
    daemon.sb.faults("GET", rf"/pulls/{m}$", status=502, count=4)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert not daemon.pull(m).merged and report.merged == []
    assert any(f"#{m}" in e and "502" in e for e in report.errors), report.errors
    assert daemon.actions("merge", m) == []
    daemon.tick()
    assert daemon.pull(m).merged
    assert statuses(daemon, "merge", m) == ["attempted", "done"]


def test_partial_ballot_comments_never_miss_a_later_reject(daemon: Harness) -> None:
    """502 on page 2 of a ballot's comments (/approve on page 1, /reject on page 2) → no decision;
    next tick: rejected and closed, never merged."""
    no_wait(daemon)
    n = daemon.open_pr({".github/workflows/x.yml": "name: x\n"})
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/approve A")
    noise = daemon.ballot(n, "mallory")
    for i in range(100):
        noise.create_comment(f"noise {i}")
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/reject")
    comments = r"^/graphql#CapdaemonComments$"  # ballot comments: GraphQL, 100 a page
    daemon.sb.faults("POST", comments, kind="delay", delay=0.0, count=1)
    daemon.sb.faults("POST", comments, status=502, count=4)
    report = daemon.tick()
    daemon.sb.clear_faults()
    pull = daemon.pull(n)
    assert pull.state == "open" and not pull.merged
    assert daemon.actions("ballot", n) == [] and daemon.actions("merge", n) == []
    assert report.ballots.get(f"{daemon.sb.repo}#{n}") is None
    daemon.tick()
    pull = daemon.pull(n)
    assert pull.state == "closed" and not pull.merged
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["rejected"]
    assert statuses(daemon, "close", n) == ["attempted", "done"]


def test_merge_put_lost_reply_is_reconciled_not_merged_twice(daemon: Harness) -> None:
    """502 on the merge PUT although GitHub merged → audit attempted, unknown; next tick reconciles
    via pull_status (done), no second merge."""
    no_wait(daemon)
    n = daemon.open_pr({"README.md": "# widgets, merged once\n"})
    daemon.sb.faults("PUT", rf"/pulls/{n}/merge$", status=502, count=4)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert report.merged == [] and not daemon.pull(n).merged
    assert statuses(daemon, "merge", n) == ["attempted", "unknown"]
    assert daemon.ticker is not None
    assert daemon.ticker.prs.get(daemon.sb.repo, n).pending.op == "merge"  # type: ignore[union-attr]
    # what GitHub did behind the lost reply: the merge went through at that sha
    sha = daemon.pull(n).head.sha
    daemon.gh("alice").get_repo(daemon.sb.repo).get_pull(n).merge(sha=sha, merge_method="squash")
    before = merges_on_main(daemon)
    report = daemon.tick()
    assert report.reconciled == [f"{daemon.sb.repo}#{n}:merge"]
    assert statuses(daemon, "merge", n) == ["attempted", "unknown", "done"]
    assert daemon.actions("merge", n)[-1]["reconciled"] is True
    daemon.tick()
    assert merges_on_main(daemon) == before  # no second merge


def test_merge_put_failed_without_merging_is_retried_once(daemon: Harness) -> None:
    """502 on the merge PUT, GitHub did not merge → next tick: not_done, then one merge."""
    no_wait(daemon)
    n = daemon.open_pr({"README.md": "# widgets, merged later\n"})
    daemon.sb.faults("PUT", rf"/pulls/{n}/merge$", status=502, count=4)
    daemon.tick()
    daemon.sb.clear_faults()
    assert not daemon.pull(n).merged
    daemon.tick()
    assert daemon.pull(n).merged
    assert statuses(daemon, "merge", n) == ["attempted", "unknown", "not_done", "attempted", "done"]


def test_l1c3_publish_failure_no_merge_and_no_duplicate_check(daemon: Harness) -> None:
    """502 on the L1.C3 POST → no check, no merge this tick; next tick one check run, merged."""
    no_wait(daemon)
    n = daemon.open_pr({"README.md": "# widgets, checked\n"})
    daemon.sb.faults("POST", r"/check-runs$", status=502, count=4)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert not daemon.pull(n).merged and report.merged == []
    assert l1c3_runs(daemon, n) == 0
    assert daemon.actions("merge", n) == []
    daemon.tick()
    assert daemon.pull(n).merged
    assert l1c3_runs(daemon, n) == 1
    assert statuses(daemon, "merge", n) == ["attempted", "done"]


def test_ballot_issue_created_but_reply_lost_no_duplicate(daemon: Harness) -> None:
    """The ballot POST is applied but its reply times out → no check, no merge; next tick finds
    the issue by marker: one ballot issue, L1.C3 failing (pending)."""
    no_wait(daemon)
    config, rules = load_config_and_rules(argparse.Namespace(config=str(daemon.config_dir)))
    token, key = github_credentials(config.github, {}, daemon.config_dir)
    forge = Forge.from_config(config.github, token=token, key_pem=key, write_interval=0, timeout=1)
    daemon.ticker = daemon._stack.enter_context(
        open_ticker(config, daemon.state_dir, rules=rules, forge=forge)
    )
    n = daemon.open_pr({".github/workflows/y.yml": "name: y\n"})
    # the sandbox answers after 1.5 s (the issue is created then); the client gave up at 1 s
    daemon.sb.faults("POST", rf"{BOT}/issues$", kind="delay", delay=1.5, count=1)
    report = daemon.tick()
    assert any("capdaemon-bot/issues" in e for e in report.errors), report.errors
    time.sleep(1.0)
    assert len(daemon.issues("ballot")) == 1  # GitHub did create it
    assert not daemon.pull(n).merged
    daemon.tick()
    daemon.tick()
    assert len(daemon.issues("ballot")) == 1  # found by its marker, never opened twice
    assert daemon.check(n).conclusion == "failure"
    assert len(daemon.actions("issue_opened", n)) == 1
    assert not daemon.pull(n).merged


def test_secondary_rate_limit_mid_tick_stops_cleanly(daemon: Harness) -> None:
    """A secondary limit (Retry-After 600 s > budget) on the PR read of step 4 → tick ends
    cleanly (classified, published, not merged), state readable; next tick merges once."""
    no_wait(daemon)
    n = daemon.open_pr({"README.md": "# widgets, limited\n"})
    daemon.sb.faults("GET", rf"/pulls/{n}$", kind="secondary", retry_after=600)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert any("rate limited" in e for e in report.errors), report.errors
    assert not report.interrupted and report.merged == [] and not daemon.pull(n).merged
    assert daemon.check(n).conclusion == "success"
    assert daemon.actions("merge", n) == []
    daemon.stop()  # a restart reads the state the stopped tick left
    report = daemon.tick()
    assert report.merged == [f"{daemon.sb.repo}#{n}"]
    assert statuses(daemon, "merge", n) == ["attempted", "done"]


def test_corrupt_prs_json_refuses_start_and_torn_journal_is_repaired(daemon: Harness) -> None:
    """Corrupt prs.json → StateError naming the file, file untouched; a torn journal tail is
    dropped (earlier lines kept), never a reset."""
    n = daemon.open_pr({"README.md": "# widgets, state\n"})
    daemon.configure(mode="shadow")
    daemon.tick()
    daemon.stop()
    prs = daemon.state_dir / "prs.json"
    good = prs.read_bytes()
    prs.write_bytes(good[: len(good) // 2])
    with pytest.raises(StateError, match=r"prs\.json"):
        daemon.start()
    assert prs.read_bytes() == good[: len(good) // 2]
    prs.write_bytes(good)
    journal = daemon.state_dir / "prs.journal"
    ref = f"{daemon.sb.repo}#{n}"

    rec = json.loads(good)["prs"][ref]
    rec["title"] = "from the journal"
    line = json.dumps({"ref": ref, "record": rec}) + "\n"
    journal.write_text(line + line[:40], encoding="utf-8")
    ticker = daemon.start()
    assert ticker.prs.records[ref].title == "from the journal"
    assert not journal.exists() and json.loads(prs.read_bytes())["prs"][ref]["title"] == (
        "from the journal"
    )
    daemon.stop()
    journal.write_text("{not json\n" + line, encoding="utf-8")  # a torn line in the middle
    with pytest.raises(StateError, match=r"prs\.journal:1: not JSON"):
        daemon.start()
    assert journal.read_text(encoding="utf-8") == "{not json\n" + line  # never overwritten


def test_unreadable_ballot_never_merges_on_a_stale_approval(daemon: Harness) -> None:
    """Decision repo reads fail (403) after an approval (merge held by a label) → no merge; once
    readable, bob's later /reject wins and the PR is closed."""
    no_wait(daemon)
    n = daemon.open_pr({".github/workflows/z.yml": "name: z\n"})
    daemon.gh("alice").get_repo(daemon.sb.repo).get_issue(n).add_to_labels("do-not-merge")
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/approve A")
    daemon.tick()
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["approved"]
    assert not daemon.pull(n).merged  # held by the blocking label
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_comment("/reject")
    daemon.gh("alice").get_repo(daemon.sb.repo).get_issue(n).remove_from_labels("do-not-merge")
    daemon.sb.faults("GET", rf"{BOT}/issues/\d+/(comments|reactions)$", status=403, count=50)
    daemon.sb.faults("POST", r"^/graphql#Capdaemon(Comments|Reactions)$", status=403, count=50)
    daemon.sb.faults("GET", rf"{BOT}/issues$", status=404, count=50)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert not daemon.pull(n).merged and report.merged == []
    assert daemon.actions("merge", n) == []
    daemon.tick()
    pull = daemon.pull(n)
    assert pull.state == "closed" and not pull.merged
    assert [r["status"] for r in daemon.actions("ballot", n)] == ["approved", "rejected"]


def test_decision_repo_unreachable_d_pr_gets_no_ballot_and_no_merge(daemon: Harness) -> None:
    """Decision repo 404 for every request → a D PR has no ballot, no passing check, no merge."""
    no_wait(daemon)
    n = daemon.open_pr({".github/workflows/w.yml": "name: w\n"})
    daemon.sb.faults("*", BOT, status=404, count=500)
    report = daemon.tick()
    daemon.sb.clear_faults()
    assert not daemon.pull(n).merged and report.merged == []
    assert daemon.actions("merge", n) == [] and daemon.actions("ballot", n) == []
    runs = l1c3_runs(daemon, n)
    assert runs == 0 or daemon.check(n).conclusion == "failure"

"""The security review's findings, end to end: the repo policy in the merge gate and ballots
(F1), restored decision issues (R5), reopened ballots (F2), clock-free ballot rounds (R3),
pinned checks (R7) and the decision-repo access warning (R5)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capdaemon.forge.markers import parse_marker

from .conftest import Harness

pytestmark = pytest.mark.slow

WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}
DOCS = {"docs/guide/intro.md": "# Intro\n\nHello.\n"}
ROUTER = {"src/multiagent_protocol/router.py": "def route(msg, hs):\n    return hs[msg]\n"}


def _policy(daemon: Harness, text: str) -> None:
    daemon.sb.commit_files(daemon.sb.repo, "main", {".capdaemon.yml": text}, "policy", "alice")


def _app_github(daemon: Harness, installation_id: int) -> Any:
    import github

    return github.Github(
        base_url=daemon.sb.base_url,
        auth=github.Auth.Token(daemon.sb.installation_token(installation_id)),
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=None,
    )


def _app_check(daemon: Harness, installation_id: int, number: int, name: str) -> None:
    repo = _app_github(daemon, installation_id).get_repo(daemon.sb.repo)
    repo.create_check_run(
        name=name, head_sha=daemon.pull(number).head.sha, status="completed", conclusion="success"
    )


# ----------------------------------------------------------------------------- F1
def test_repo_policy_blocking_label_and_extra_check_gate_merges(daemon: Harness) -> None:
    """The base branch's .capdaemon.yml adds a blocking label and an extra check: both hold
    the merge (they were ignored before F1)."""
    _policy(daemon, "blocking_labels: [hold]\nextra_checks: [e2e]\n")
    held = daemon.open_pr({"README.md": "# widgets (held)\n"}, title="held")
    waits = daemon.open_pr({"README.md": "# widgets (waits)\n"}, title="waits")
    daemon.gh("alice").get_repo(daemon.sb.repo).get_issue(held).add_to_labels("hold")
    daemon.tick()
    assert not daemon.pull(held).merged and not daemon.pull(waits).merged
    _app_check(daemon, daemon.sb.evil_installation_id, waits, "e2e")  # any App's run counts
    daemon.tick()
    assert daemon.pull(waits).merged and not daemon.pull(held).merged


def test_repo_policy_owner_counts_on_ballots(daemon: Harness) -> None:
    """An owner added by the base branch's policy decides ballots of that repo."""
    _policy(daemon, "owners: [mallory]\n")
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "mallory").create_comment("/approve A")
    daemon.tick()
    assert daemon.pull(n).merged


def test_unparseable_repo_policy_merges_nothing_and_is_a_repo_error(daemon: Harness) -> None:
    """A policy that does not parse: no merge for that repo (even an approved D), a repo error
    in the report every tick, audited once per policy text."""
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    daemon.advance(minutes=1)
    _policy(daemon, "owners: [not a login]\n")
    daemon.ballot(n, "alice").create_comment("/approve A")
    first = daemon.tick()
    second = daemon.tick()
    assert not daemon.pull(n).merged
    for report in (first, second):
        assert any(".capdaemon.yml" in e for e in report.errors), report.errors
    (err,) = daemon.actions("repo_policy_error")
    assert err["repo"] == "acme/widgets" and "owners" in err["error"]


# ----------------------------------------------------------------------------- R5
def test_edited_ballot_is_restored_and_votes_on_the_edited_text_do_not_count(
    daemon: Harness,
) -> None:
    """An agent rewrites the ballot; an owner 👍s the rewritten text before the next tick. The
    tick restores the body, comments once, starts a new round for the same head: the 👍 does
    not count. A vote after the restore does."""
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    daemon.advance(minutes=1)
    issue = daemon.ballot(n, "agent-1")
    marker = parse_marker(issue.body)
    issue.edit(body=f"README typo only.\n\n<!-- capdaemon: {json.dumps(marker)} -->")
    daemon.advance(seconds=10)
    daemon.ballot(n, "alice").create_reaction("+1")
    daemon.advance(seconds=10)
    daemon.tick()
    assert not daemon.pull(n).merged
    ballot = daemon.issue_for(n, "ballot")
    assert ".github/workflows/ci.yml" in ballot.body.replace("\\", "")
    comments = [c.body for c in ballot.get_comments()]
    assert sum("edited by someone other than capdaemon" in c for c in comments) == 1
    (restored,) = daemon.actions("issue_restored", n)
    assert (restored["kind"], restored["what"], restored["round"]) == ("ballot", "edited", 2)
    (rnd,) = daemon.actions("ballot_round", n)
    assert rnd["reason"] == "issue_restored" and rnd["stale_votes"] >= 1
    ignored = [v for v in daemon.actions("vote_ignored", n) if v["user"] == "alice"]
    assert ignored and ignored[0]["reason"].startswith("before this round")
    daemon.tick()  # steady: nothing restored again
    assert len(daemon.actions("issue_restored", n)) == 1
    daemon.advance(minutes=1)
    daemon.ballot(n, "bob").create_reaction("+1")
    daemon.tick()
    assert daemon.pull(n).merged


def test_edited_passive_review_of_a_merged_pr_is_restored(daemon: Harness) -> None:
    """A B review issue (its PR merged) edited by an agent is restored from the stored text."""
    n = daemon.open_pr(ROUTER)
    daemon.tick()
    assert daemon.pull(n).merged
    review = daemon.issue_for(n, "review")
    original = review.body
    agent_view = daemon.gh("agent-2").get_repo(daemon.sb.bot_repo).get_issue(review.number)
    agent_view.edit(body="nothing to see", title="nothing to see")
    daemon.tick()
    review = daemon.issue_for(n, "review")
    assert review.body == original and "nothing" not in review.title
    assert [r["what"] for r in daemon.actions("issue_restored", n)] == ["edited"]
    daemon.tick()
    assert len(daemon.actions("issue_restored", n)) == 1


def test_ballot_closed_by_an_agent_is_reopened(daemon: Harness) -> None:
    """A ballot closed by someone else while its PR is still D is reopened (with a comment)."""
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    daemon.ballot(n, "agent-1").edit(state="closed")
    daemon.tick()
    assert daemon.issue_for(n, "ballot").state == "open"
    assert [r["what"] for r in daemon.actions("issue_restored", n)] == ["closed"]


def test_steady_tick_reads_no_more_for_restore_checks(daemon: Harness) -> None:
    """The restore check rides on the issue list a steady tick reads anyway: one list, no
    issue reads, no writes (a D ballot and a merged PR's B review are both watched)."""
    daemon.open_pr(WORKFLOW)
    daemon.open_pr(ROUTER)
    for _ in range(3):
        daemon.tick()
    daemon.sb.reset_counters()
    daemon.tick()
    seen = {k: v["requests"] for k, v in daemon.sb.counters()["endpoints"].items() if v["requests"]}
    assert daemon.writes() == {}
    assert seen.get("GET /repos/{owner}/{repo}/issues") == 1
    assert "GET /repos/{owner}/{repo}/issues/{number}" not in seen


# ----------------------------------------------------------------------------- F2
def test_ballot_closed_as_not_needed_is_reopened_when_d_again(daemon: Harness) -> None:
    """D → (push) A: the ballot closes "no ballot needed" → (push) D again: reopened, new round."""
    n = daemon.open_pr({".github/workflows/extra.yml": "name: extra\n"})
    daemon.tick()
    daemon.gh("alice").get_repo(daemon.sb.repo).get_issue(n).add_to_labels("do-not-merge")
    daemon.advance(minutes=1)
    daemon.push(n, {".github/workflows/extra.yml": None, "README.md": "# widgets!?\n"})
    daemon.tick()
    assert daemon.issue_for(n, "ballot").state == "closed"
    daemon.advance(minutes=1)
    daemon.push(n, {".github/workflows/extra.yml": "name: again\n"})
    daemon.tick()
    ballot = daemon.issue_for(n, "ballot")
    assert ballot.state == "open"
    assert daemon.actions("issue_reopened", n)
    assert not daemon.pull(n).merged


# ----------------------------------------------------------------------------- R3
def test_new_round_ignores_votes_already_on_the_issue_by_id(daemon: Harness) -> None:
    """The rebind reads the issue: every comment and reaction already there is stale for the
    new round, even when the daemon's clock is far behind GitHub's."""
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(n, "alice").create_comment("/approve A")  # for head 1, not yet seen
    daemon.advance(seconds=5)
    daemon.push(n, {".github/workflows/ci.yml": "name: evil\n"})
    daemon.advance(seconds=5)
    from datetime import timedelta

    daemon.tick(daemon.sb.now() - timedelta(minutes=5))
    assert not daemon.pull(n).merged
    (rnd,) = daemon.actions("ballot_round", n)
    assert rnd["round"] == 2 and rnd["stale_votes"] >= 1
    ticker = daemon.ticker
    assert ticker is not None
    rec = ticker.prs.get("acme/widgets", n)
    assert rec is not None and rec.ballot_round and rec.ballot_round.stale_vote_ids
    daemon.tick()
    assert not daemon.pull(n).merged


# ----------------------------------------------------------------------------- R7
def test_pinned_extra_check_accepts_only_its_app(daemon: Harness) -> None:
    """extra_checks: [{context: ci/build, app_id: <capdaemon App>}]: evil-app's run and a
    status do not satisfy it; the pinned App's run does."""
    daemon.configure(repo={"extra_checks": [{"context": "ci/build", "app_id": daemon.sb.app_id}]})
    n = daemon.open_pr({"README.md": "# widgets, pinned ci\n"})
    sha = daemon.pull(n).head.sha
    daemon.gh("alice").get_repo(daemon.sb.repo).get_commit(sha).create_status(
        state="success", context="ci/build"
    )
    _app_check(daemon, daemon.sb.evil_installation_id, n, "ci/build")
    daemon.tick()
    assert not daemon.pull(n).merged
    _app_check(daemon, daemon.sb.installation_id, n, "ci/build")
    daemon.tick()
    assert daemon.pull(n).merged


def test_protection_pinned_required_check_ignores_other_sources(daemon: Harness) -> None:
    """A required check pinned by branch protection: a status of that name does not count for
    the daemon (nor for GitHub)."""
    daemon.sb.set_protection(
        daemon.sb.repo,
        "main",
        {
            "required_status_checks": {
                "strict": False,
                "checks": [{"context": "ci/build", "app_id": daemon.sb.app_id}],
            }
        },
    )
    n = daemon.open_pr({"README.md": "# widgets, protected ci\n"})
    sha = daemon.pull(n).head.sha
    daemon.gh("agent-1").get_repo(daemon.sb.repo).get_commit(sha).create_status(
        state="success", context="ci/build"
    )
    daemon.tick()
    assert not daemon.pull(n).merged
    assert not [m for m in daemon.actions("merge", n) if m["status"] == "attempted"]


# ----------------------------------------------------------------------------- R5 access
def test_start_up_warns_about_agents_with_write_on_the_decision_repo(daemon: Harness) -> None:
    """The agents are write collaborators on the bot repo in the standard sandbox: the first
    tick of a daemon audits (→ digest attention) and logs them; owners and the bot never."""
    daemon.open_pr({"README.md": "# widgets, by agent-1\n"})
    daemon.open_pr({"README.md": "# widgets, by agent-2\n"}, user="agent-2")
    daemon.tick()
    daemon.stop()  # a restart: the check runs at start-up, knowing the PR authors now
    daemon.tick()
    found = daemon.actions("access.decision_repo_writers")
    assert found
    assert found[-1]["writers"] == ["agent-1 (write)", "agent-2 (write)"]
    assert found[-1]["repo"] == daemon.sb.bot_repo


# ----------------------------------------------------------------------------- pure helpers
def test_auto_revert_floor_and_filter() -> None:
    """The floor is the newest labeled auto-revert event; events at or before it are dropped,
    newer ones, unlabeled events and other labels kept."""
    from datetime import UTC, datetime, timedelta

    from capdaemon.daemon.core.tick import auto_revert_floor, without_stale_auto_revert
    from capdaemon.model import LabelEvent, PRSnapshot

    t0 = datetime(2026, 5, 25, 12, 0, 0, 500000, tzinfo=UTC)
    ar = "Decision:Auto-Revert"
    old = LabelEvent(ar, "labeled", "alice", t0)
    gone = LabelEvent(ar, "unlabeled", "alice", t0 + timedelta(seconds=1))
    other = LabelEvent("hold", "labeled", "bob", t0 + timedelta(hours=1))
    snap = PRSnapshot("o/r", 1, "main", "b" * 40, "h" * 40, "agent-1",
                      label_events=(old, gone, other))  # fmt: skip
    assert auto_revert_floor(snap.label_events) == t0  # microseconds kept: no rounding hole
    assert auto_revert_floor([other, gone]) is None
    filtered = without_stale_auto_revert(snap, t0)
    assert filtered.label_events == (gone, other)
    assert without_stale_auto_revert(snap, None) is snap
    fresh = LabelEvent(ar, "labeled", "alice", t0 + timedelta(microseconds=1))
    later = PRSnapshot("o/r", 1, "main", "b" * 40, "h" * 40, "agent-1", label_events=(old, fresh))
    assert without_stale_auto_revert(later, t0).label_events == (fresh,)


def test_required_checks_keep_their_app_pins() -> None:
    """Protection's checks[] keep app_id (-1/null: any source); legacy contexts are unpinned."""
    from capdaemon.daemon.core.tick import required_checks
    from capdaemon.decide.merge import RequiredCheck

    prot = {
        "required_status_checks": {
            "contexts": ["L1.C3", "ci/build", "lint"],
            "checks": [
                {"context": "L1.C3", "app_id": 1001},
                {"context": "ci/build", "app_id": -1},
                {"context": "e2e", "app_id": None},
            ],
        }
    }
    assert required_checks(prot) == (
        RequiredCheck("L1.C3", 1001),
        RequiredCheck("ci/build"),
        RequiredCheck("e2e"),
        RequiredCheck("lint"),
    )
    assert required_checks({}) == ()


# ----------------------------------------------------------------------------- perf: safety.json
def test_first_tick_writes_safety_json_once_per_chunk_not_per_pr(
    daemon: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Classifying many PRs saves safety.json once per chunk of steps 1-2 (it was re-written
    once per classified PR: quadratic on a first tick); never from inside one PR's handling."""
    import traceback

    from capdaemon.stores import safety_state

    writes: list[str] = []
    real = safety_state.atomic_write_json

    def counting(path: Any, obj: Any, **kw: Any) -> None:
        if str(path).endswith("safety.json"):
            names = [f.name for f in traceback.extract_stack()]
            step = "poll_and_classify" in names
            writes.append("per-pr" if "process_pr" in names else "chunk" if step else "other")
        real(path, obj, **kw)

    monkeypatch.setattr(safety_state, "atomic_write_json", counting)
    for i in range(6):
        daemon.open_pr({f"examples/many_{i}.py": f"print({i})\n"}, title=f"many {i}")
    daemon.tick()
    assert writes.count("per-pr") == 0
    assert writes.count("chunk") == 1


def test_tier_lost_in_a_crash_is_recorded_again_without_a_second_audit(daemon: Harness) -> None:
    """safety.json without the head's tier (a crash before the deferred save): the PR is not
    settled; the next tick records the tier again and audits no second classification."""
    n = daemon.open_pr(WORKFLOW)
    daemon.tick()
    daemon.tick()
    daemon.stop()
    path = daemon.state_dir / "safety.json"
    data = json.loads(path.read_text())
    ref = f"acme/widgets#{n}"
    del data["tiers"][ref]
    path.write_text(json.dumps(data))
    report = daemon.tick()
    assert report.classified == []  # not audited twice
    assert len(daemon.classifications(n)) == 1
    assert json.loads(path.read_text())["tiers"][ref]["head_sha"] == daemon.pull(n).head.sha

"""Idempotent writes against the sandbox: a second identical call makes no POST/PATCH/PUT/DELETE."""

from __future__ import annotations

from collections.abc import Callable

import github
import pytest
from github import Auth

from capdaemon.forge.client import Forge
from capdaemon.forge.errors import BaseMoved, ForgeError, HeadMoved, RevertConflict
from capdaemon.forge.markers import parse_marker
from capdaemon.forge.types import IssueList
from ghsandbox import Sandbox

Writes = Callable[[], dict[str, int]]


def test_publish_check_twice_writes_once(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int], writes: Writes
) -> None:
    """Re-publishing the same L1.C3 conclusion and summary is a no-op; a new one updates the run."""
    n = open_pr({"README.md": "# a\n"})
    head = forge.snapshot(sandbox.repo, n).head_sha
    mk = {"kind": "check", "pr": f"{sandbox.repo}#{n}"}
    assert forge.publish_check(
        sandbox.repo, head, success=False, title="D", summary="pending", marker=mk
    )
    sandbox.reset_counters()
    assert not forge.publish_check(
        sandbox.repo, head, success=False, title="D", summary="pending", marker=mk
    )
    assert writes() == {}
    assert forge.publish_check(sandbox.repo, head, success=True, title="A", summary="ok", marker=mk)
    assert writes() == {"PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}": 1}
    runs = [r for r in forge.commit_checks(sandbox.repo, head) if r.name == "L1.C3"]
    assert [(r.conclusion, r.app_slug) for r in runs] == [("success", "capdaemon")]


def test_token_mode_publishes_a_commit_status_once(
    sandbox: Sandbox, make_forge: Callable[..., Forge], open_pr: Callable[..., int], writes: Writes
) -> None:
    """With a token, L1.C3 is a commit status; the same state and description twice is one POST."""
    f = make_forge(token=sandbox.tokens[sandbox.owner])
    n = open_pr({"README.md": "# b\n"})
    head = f.snapshot(sandbox.repo, n).head_sha
    assert f.publish_check(
        sandbox.repo, head, success=True, title="Quadrant A", summary="s", marker={"kind": "c"}
    )
    sandbox.reset_counters()
    assert not f.publish_check(
        sandbox.repo, head, success=True, title="Quadrant A", summary="s", marker={"kind": "c"}
    )
    assert writes() == {}
    (st,) = [r for r in f.commit_checks(sandbox.repo, head) if r.name == "L1.C3"]
    assert st.conclusion == "success" and st.app_slug is None


def test_ensure_issue_twice_and_after_restart(
    sandbox: Sandbox, forge: Forge, make_forge: Callable[..., Forge], writes: Writes
) -> None:
    """ensure_issue creates once, is a no-op when unchanged; a new Forge finds it by its marker."""
    mk = {"kind": "ballot", "pr": f"{sandbox.repo}#5", "head": "abc"}
    first = forge.ensure_issue(
        sandbox.bot_repo, mk, "Ballot for #5", "Vote please", ["decision:pending-owner"]
    )
    assert parse_marker(first.body) == mk and first.labels == ("decision:pending-owner",)
    sandbox.reset_counters()
    again = forge.ensure_issue(
        sandbox.bot_repo, mk, "Ballot for #5", "Vote please", ["decision:pending-owner"]
    )
    assert again.number == first.number and writes() == {}
    restarted = make_forge(app=True)
    mk2 = {**mk, "head": "def"}  # same kind+pr, a new round: same issue, body updated
    third = restarted.ensure_issue(
        sandbox.bot_repo, mk2, "Ballot for #5", "Round 2", ["decision:pending-owner"]
    )
    assert third.number == first.number and parse_marker(third.body) == mk2
    assert writes() == {"PATCH /repos/{owner}/{repo}/issues/{number}": 1}
    found = restarted.marked_issues(sandbox.bot_repo, kind="ballot")
    assert [i.number for i in found] == [first.number]


def test_marker_from_someone_else_is_not_ours(
    sandbox: Sandbox, forge: Forge, make_forge: Callable[..., Forge]
) -> None:
    """An issue by another user carrying a copied marker is not adopted: capdaemon opens its own."""
    mallory = make_forge(token=sandbox.tokens[sandbox.outsider])
    mk = {"kind": "ballot", "pr": "acme/widgets#9"}
    fake = mallory.ensure_issue(sandbox.bot_repo, mk, "fake", "approved!", [])
    mine = forge.ensure_issue(sandbox.bot_repo, mk, "Ballot", "vote", [])
    assert mine.number != fake.number and mine.author == "capdaemon[bot]"


def test_comment_once_and_labels_are_idempotent(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int], writes: Writes
) -> None:
    """comment_once posts once per marker; labels: add/remove twice writes once."""
    n = open_pr({"README.md": "# c\n"})
    mk = {"kind": "round", "pr": f"{sandbox.repo}#{n}", "head": "abc"}
    assert forge.comment_once(sandbox.repo, n, mk, "New round")
    assert forge.add_labels(sandbox.repo, n, ["brand-new-label"])
    assert forge.remove_label(sandbox.repo, n, "brand-new-label")
    sandbox.reset_counters()
    assert not forge.comment_once(sandbox.repo, n, mk, "New round")
    assert not forge.remove_label(sandbox.repo, n, "brand-new-label")
    assert forge.add_labels(sandbox.repo, n, ["brand-new-label"])
    assert not forge.add_labels(sandbox.repo, n, ["brand-new-label"])
    assert writes() == {"POST /repos/{owner}/{repo}/issues/{number}/labels": 1}


def _requests(sandbox: Sandbox, name: str) -> int:
    return int(sandbox.counters()["endpoints"].get(name, {}).get("requests", 0))


COMMENTS = "GET /repos/{owner}/{repo}/issues/{number}/comments"
ISSUE = "GET /repos/{owner}/{repo}/issues/{number}"


def test_a_ballot_closed_after_its_outcome_reads_comments_and_state_once_a_tick(
    sandbox: Sandbox, forge: Forge
) -> None:
    """The outcome comment, then the closing comment and the close, in one tick (what a D
    ballot's merge does): our comments are read once and the issue's state comes from the
    read that found it; a marker posted earlier in the tick is not posted again; the next
    tick reads the comments afresh and still posts nothing twice."""
    marker = {"kind": "ballot", "pr": "acme/widgets#1"}
    iss = forge.ensure_issue(sandbox.bot_repo, marker, "Ballot", "b", [])
    forge.new_tick()
    sandbox.reset_counters()
    forge.ensure_issue(sandbox.bot_repo, marker, "Ballot", "b", [])
    outcome = {"kind": "ballot-outcome", "key": "acme/widgets#1:1:approved:x"}
    assert forge.comment_once(sandbox.bot_repo, iss.number, outcome, "Approved.")
    assert forge.close_issue(sandbox.bot_repo, iss.number, "Merged.")
    assert not forge.comment_once(sandbox.bot_repo, iss.number, outcome, "Approved.")
    assert _requests(sandbox, COMMENTS) == 1
    assert _requests(sandbox, ISSUE) == 1  # the ensure's; the close sends no read of its own
    assert _requests(sandbox, "POST /repos/{owner}/{repo}/issues/{number}/comments") == 2
    assert sandbox.backend.issue(sandbox.bot_repo, iss.number)["state"] == "closed"
    forge.new_tick()
    sandbox.reset_counters()
    assert not forge.comment_once(sandbox.bot_repo, iss.number, outcome, "Approved.")
    assert not forge.close_issue(sandbox.bot_repo, iss.number, "Merged.")
    assert _requests(sandbox, COMMENTS) == 1
    assert _requests(sandbox, "POST /repos/{owner}/{repo}/issues/{number}/comments") == 0


def test_a_refused_comment_is_read_for_again_and_posted_once(
    sandbox: Sandbox, forge: Forge
) -> None:
    """A post GitHub refused: what the tick knew of our comments is dropped, the next post of
    the same marker reads them again, and exactly one such comment ends up on the issue."""
    iss = forge.ensure_issue(sandbox.bot_repo, {"kind": "review", "pr": "acme/w#2"}, "R", "b", [])
    forge.new_tick()
    mk = {"kind": "close", "issue": f"{sandbox.bot_repo}#{iss.number}"}
    sandbox.faults("POST", r"/comments$", status=422, count=1)
    with pytest.raises(ForgeError):
        forge.comment_once(sandbox.bot_repo, iss.number, mk, "Closing.")
    sandbox.reset_counters()
    assert forge.comment_once(sandbox.bot_repo, iss.number, mk, "Closing.")
    assert not forge.comment_once(sandbox.bot_repo, iss.number, mk, "Closing.")
    assert _requests(sandbox, COMMENTS) == 1
    rec = sandbox.backend.issue(sandbox.bot_repo, iss.number)
    bodies = [sandbox.backend.comment(sandbox.bot_repo, i)["body"] for i in rec["comment_ids"]]
    assert sum("Closing." in b for b in bodies) == 1


def test_close_issue_and_pr_twice(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int], writes: Writes
) -> None:
    """Closing an issue or a PR with a comment, twice, writes only the first time."""
    iss = forge.ensure_issue(
        sandbox.bot_repo, {"kind": "review", "pr": "acme/widgets#1"}, "Review", "b", []
    )
    n = open_pr({"README.md": "# d\n"})
    assert forge.close_issue(sandbox.bot_repo, iss.number, "closing: no owner comment in 7 days")
    assert forge.close_pr(sandbox.repo, n, "rejected by an owner")
    sandbox.reset_counters()
    assert not forge.close_issue(
        sandbox.bot_repo, iss.number, "closing: no owner comment in 7 days"
    )
    assert not forge.close_pr(sandbox.repo, n, "rejected by an owner")
    assert writes() == {}


def test_merge_at_sha_is_idempotent_and_stale_sha_raises(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int], writes: Writes
) -> None:
    """merge sends the expected sha: stale raises HeadMoved; merging again returns the same sha."""
    n = open_pr({"README.md": "# e\n"})
    old = forge.snapshot(sandbox.repo, n).head_sha
    sandbox.commit_files(sandbox.repo, "feature", {"README.md": "# e2\n"}, "more")
    with pytest.raises(HeadMoved):
        forge.merge(sandbox.repo, n, old, "squash")
    new = forge.snapshot(sandbox.repo, n).head_sha
    merged = forge.merge(sandbox.repo, n, new, "squash")
    sandbox.reset_counters()
    assert forge.merge(sandbox.repo, n, new, "squash") == merged
    assert writes() == {}


def test_merge_refuses_a_pr_retargeted_right_before_it(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int], writes: Writes
) -> None:
    """Attack: the agent moves an approved PR to another base after the tick listed it. The
    read right before the merge call (one GraphQL point, no REST PR read) sees the new base:
    BaseMoved, and no merge call is sent."""
    n = open_pr({"README.md": "# e\n"})
    head = forge.snapshot(sandbox.repo, n).head_sha
    sandbox.commit_files(sandbox.repo, "release", {"R": "1\n"}, "release", parent_branch="main")
    agent = github.Github(base_url=sandbox.base_url, auth=Auth.Token(sandbox.tokens["agent-1"]))
    agent.get_repo(sandbox.repo).get_pull(n).edit(base="release")
    sandbox.reset_counters()
    with pytest.raises(BaseMoved):
        forge.merge(sandbox.repo, n, head, "squash", base="main")
    seen = {k: v["requests"] for k, v in sandbox.counters()["endpoints"].items() if v["requests"]}
    assert writes() == {}
    assert seen.get("POST /graphql CapdaemonPullBeforeMerge") == 1
    assert "GET /repos/{owner}/{repo}/pulls/{number}" not in seen
    assert not sandbox.backend.issue(sandbox.repo, n)["pull"]["merged"]


def test_merge_without_graphql_reads_the_pr_through_rest(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int]
) -> None:
    """Where GraphQL is not there (404), the PR is read through REST before the merge call,
    and the merge goes through."""
    n = open_pr({"README.md": "# e\n"})
    head = forge.snapshot(sandbox.repo, n).head_sha
    sandbox.faults("POST", "^/graphql", status=404, count=10**6)
    sandbox.reset_counters()
    merged = forge.merge(sandbox.repo, n, head, "squash", base="main")
    seen = sandbox.counters()["endpoints"]
    assert seen["GET /repos/{owner}/{repo}/pulls/{number}"]["requests"] == 1
    assert sandbox.backend.issue(sandbox.repo, n)["pull"]["merge_commit_sha"] == merged


def test_protection_set_once(sandbox: Sandbox, forge: Forge, writes: Writes) -> None:
    """set_protection requires L1.C3 from the App; a second call writes nothing."""
    assert forge.get_protection(sandbox.repo, "main") is None
    assert forge.set_protection(sandbox.repo, "main", "L1.C3", sandbox.app_id)
    sandbox.reset_counters()
    assert not forge.set_protection(sandbox.repo, "main", "L1.C3", sandbox.app_id)
    assert writes() == {}
    prot = forge.get_protection(sandbox.repo, "main")
    assert prot is not None
    checks = prot["required_status_checks"]["checks"]
    assert {"context": "L1.C3", "app_id": sandbox.app_id} in checks


def test_revert_pr_when_base_is_at_the_merge(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int], writes: Writes
) -> None:
    """A revert PR restores the parent's tree, carries the label; a second call: the same PR."""
    before = sandbox.branch_sha(sandbox.repo, "main")
    n = open_pr({"src/widgets/core.py": "def add(a, b):\n    return 0\n", "new.txt": "new\n"})
    head = forge.snapshot(sandbox.repo, n).head_sha
    merge_sha = forge.merge(sandbox.repo, n, head, "squash")
    r = forge.create_revert_pr(
        sandbox.repo,
        merge_sha,
        "main",
        title="Revert #1",
        body="health probe failed",
        label="decision:auto-revert",
    )
    snap = forge.snapshot(sandbox.repo, r)
    assert "decision:auto-revert" in snap.labels
    assert {(f.path, f.status.value) for f in snap.files} == {
        ("src/widgets/core.py", "modified"),
        ("new.txt", "removed"),
    }
    assert forge.read_file(sandbox.repo, "src/widgets/core.py", snap.head_sha) == forge.read_file(
        sandbox.repo, "src/widgets/core.py", before
    )
    sandbox.reset_counters()
    assert (
        forge.create_revert_pr(
            sandbox.repo,
            merge_sha,
            "main",
            title="Revert #1",
            body="x",
            label="decision:auto-revert",
        )
        == r
    )
    assert writes() == {}


def test_revert_three_way_and_conflict(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int]
) -> None:
    """With unrelated commits on base it reverts per path; a path changed since: conflict."""
    n = open_pr({"src/widgets/core.py": "def add(a, b):\n    return 1\n"})
    merge_sha = forge.merge(sandbox.repo, n, forge.snapshot(sandbox.repo, n).head_sha, "squash")
    sandbox.commit_files(sandbox.repo, "main", {"docs/other.md": "unrelated\n"}, "unrelated")
    r = forge.create_revert_pr(
        sandbox.repo, merge_sha, "main", title="Revert", body="b", label="decision:auto-revert"
    )
    snap = forge.snapshot(sandbox.repo, r)
    assert [f.path for f in snap.files] == ["src/widgets/core.py"]
    n2 = open_pr({"README.md": "# f\n"}, branch="second")
    m2 = forge.merge(sandbox.repo, n2, forge.snapshot(sandbox.repo, n2).head_sha, "squash")
    sandbox.commit_files(sandbox.repo, "main", {"README.md": "# edited since\n"}, "edit")
    with pytest.raises(RevertConflict):
        forge.create_revert_pr(
            sandbox.repo, m2, "main", title="Revert", body="b", label="decision:auto-revert"
        )


def test_commit_parents_of_squash_and_merge_commits(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int]
) -> None:
    """A squash merge commit has one parent, a merge-method commit two (read from GitHub)."""
    n = open_pr({"README.md": "# p\n"})
    head = forge.snapshot(sandbox.repo, n).head_sha
    merged = forge.merge(sandbox.repo, n, head, "merge")
    parents = forge.commit_parents(sandbox.repo, merged)
    assert len(parents) == 2 and head in parents
    base_parent = forge.commit_parents(sandbox.repo, parents[0])
    assert len(base_parent) <= 1


def test_pull_status_open_merged_closed(
    sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int]
) -> None:
    """pull_status tells open from merged (with the merge commit) and from closed unmerged."""
    n = open_pr({"README.md": "# s\n"})
    head = forge.snapshot(sandbox.repo, n).head_sha
    st = forge.pull_status(sandbox.repo, n)
    assert (st.state, st.merged, st.merge_sha, st.head_sha) == ("open", False, None, head)
    merged = forge.merge(sandbox.repo, n, head, "squash")
    st = forge.pull_status(sandbox.repo, n)
    assert (st.state, st.merged, st.merge_sha) == ("closed", True, merged)
    m = open_pr({"docs/guide.md": "closed\n"}, branch="other")
    forge.close_pr(sandbox.repo, m, "no")
    st = forge.pull_status(sandbox.repo, m)
    assert (st.state, st.merged, st.merge_sha) == ("closed", False, None)


def test_ensure_issue_with_its_number_restores_a_destroyed_marker(
    sandbox: Sandbox, forge: Forge, make_forge: Callable[..., Forge]
) -> None:
    """An agent rewrites our issue without the marker: with `number=` a restarted Forge adopts
    our own issue (by author) and restores it instead of opening a duplicate; another user's
    issue number is never adopted."""
    import github

    mk = {"kind": "ballot", "pr": f"{sandbox.repo}#6"}
    first = forge.ensure_issue(sandbox.bot_repo, mk, "Ballot for #6", "The real text", [])
    agent = github.Github(base_url=sandbox.base_url, auth=github.Auth.Token("ghp_sandbox_agent_1"))
    agent.get_repo(sandbox.bot_repo).get_issue(first.number).edit(body="safe, approve")
    restarted = make_forge(app=True)
    again = restarted.ensure_issue(
        sandbox.bot_repo, mk, "Ballot for #6", "The real text", [], number=first.number
    )
    assert again.number == first.number and parse_marker(again.body) == mk
    assert "The real text" in again.body
    theirs = agent.get_repo(sandbox.bot_repo).create_issue("mine", "agent text")
    other = make_forge(app=True).ensure_issue(
        sandbox.bot_repo, {"kind": "ballot", "pr": "x/y#1"}, "B", "t", [], number=theirs.number
    )
    assert other.number != theirs.number


def test_activity_lists_title_and_body_and_collaborators_fall_back(
    sandbox: Sandbox, forge: Forge
) -> None:
    """The issue listing carries each issue's title and body (R5); the collaborator list has each
    login's role; when GitHub refuses the list (403/404) → None (the caller falls back to
    checking known logins)."""
    issue = forge.ensure_issue(sandbox.bot_repo, {"kind": "review", "pr": "a/b#1"}, "T", "B", [])
    act = forge.issue_listing(sandbox.bot_repo, (IssueList(),)).open[issue.number]
    assert act.title == "T" and act.body == issue.body
    assert forge.collaborators(sandbox.bot_repo) == [
        ("agent-1", "write"),
        ("agent-2", "write"),
        ("alice", "admin"),
        ("bob", "admin"),
    ]
    sandbox.faults("GET", r"/collaborators$", status=404)
    forge.new_tick()
    assert forge.collaborators(sandbox.bot_repo) is None
    assert forge.permission(sandbox.bot_repo, "agent-1") == "write"

"""Shadow mode never merges or closes; a merge always sends the decided sha (SPEC 4)."""

from __future__ import annotations

import pytest

from capdaemon.forge.errors import HeadMoved

pytestmark = pytest.mark.slow


def test_shadow_mode_never_merges_or_closes_even_approved_or_rejected(daemon) -> None:
    """shadow: an A PR, an owner-approved D PR and an owner-rejected D PR all stay open."""
    daemon.configure(mode="shadow")
    a = daemon.open_pr({"README.md": "# widgets!!\n"})
    approved = daemon.open_pr({".github/workflows/a.yml": "name: a\n"}, title="a")
    rejected = daemon.open_pr({".github/workflows/r.yml": "name: r\n"}, title="r")
    daemon.tick()
    daemon.advance(minutes=1)
    daemon.ballot(approved, "alice").create_comment("/approve A")
    daemon.ballot(rejected, "bob").create_reaction("-1")
    report = daemon.tick()
    daemon.tick()
    for n in (a, approved, rejected):
        pull = daemon.pull(n)
        assert pull.state == "open" and not pull.merged, n
    assert report.merged == [] and report.closed == []
    assert {r["status"] for r in daemon.actions("merge")} == {"would_merge"}
    assert [r["status"] for r in daemon.actions("close", rejected)] == ["would_close"]


def test_forge_merge_refuses_a_sha_that_is_no_longer_the_head(daemon) -> None:
    """The merge call carries the decided sha: after a push, merging the old sha raises HeadMoved
    and nothing is merged."""
    n = daemon.open_pr({"README.md": "# widgets?\n"})
    ticker = daemon.start()
    old = daemon.pull(n).head.sha
    daemon.push(n, {"README.md": "# widgets? and a payload\n"})
    with pytest.raises(HeadMoved):
        ticker.forge.merge(daemon.sb.repo, n, old, "squash")
    assert not daemon.pull(n).merged


def test_agent_forged_extra_check_status_does_not_satisfy_the_gate(daemon) -> None:
    """repos[].extra_checks: [ci/build]; the PR's own agent reports ci/build=success → no merge."""
    daemon.configure(repo={"extra_checks": ["ci/build"]})
    n = daemon.open_pr({"README.md": "# widgets, forged ci\n"})
    sha = daemon.pull(n).head.sha
    repo = daemon.gh("agent-1").get_repo(daemon.sb.repo)
    repo.get_commit(sha).create_status(state="success", context="ci/build")
    daemon.tick()
    assert not daemon.pull(n).merged

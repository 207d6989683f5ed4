"""After a merge, one compare shows the merge commit is on the approved base: the PR itself is
not read again for it."""

from __future__ import annotations

from .conftest import Harness

PULL = "GET /repos/{owner}/{repo}/pulls/{number}"


def test_a_merge_on_its_base_reads_the_pr_once(daemon: Harness) -> None:
    """An A PR merges in one tick: the PR is read three times (its mergeability, computed
    asynchronously, twice through REST; the base and head check right before the merge call in
    GraphQL), none of them after the merge; the base check after it is one compare; no
    wrong-base incident."""
    daemon.configure()
    n = daemon.open_pr({"docs/guide/merge.md": "# m\n"})
    daemon.sb.reset_counters()
    daemon.tick()
    assert daemon.pull(n).merged
    ends = daemon.sb.counters()["endpoints"]
    assert ends[PULL]["requests"] == 2
    assert ends["POST /graphql CapdaemonPullBeforeMerge"]["requests"] == 1
    assert sum(v["requests"] for k, v in ends.items() if "/compare/" in k) >= 1
    assert not daemon.actions("merge_wrong_base") and not daemon.actions("merge_base_check")

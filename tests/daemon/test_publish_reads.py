"""Publishing L1.C3 on a head reuses the check runs the tick already read for it."""

from __future__ import annotations

from .conftest import Harness


def _check_run_reads(daemon: Harness) -> list[str]:
    ends = daemon.sb.counters()["endpoints"]
    return [
        k
        for k, v in ends.items()
        for _ in range(v["requests"])
        if k.startswith("GET ") and k.endswith("/check-runs")
    ]


def test_a_new_head_s_check_runs_are_read_once_to_classify_and_publish(daemon: Harness) -> None:
    """Without the GraphQL batch (its query answers 502), a new D PR's head check runs are read
    through REST to classify it; publishing L1.C3 looks its own run up in that read, not in a
    second one (before: a second GET of the same head's check runs). L1.C3 is published."""
    daemon.configure()
    n = daemon.open_pr({".github/workflows/new.yml": "name: new\n"})  # D: no merge
    daemon.sb.faults("POST", "graphql#CapdaemonOpenPulls", status=502, count=100)
    daemon.sb.reset_counters()
    daemon.tick()
    assert len(_check_run_reads(daemon)) == 1
    head = daemon.pull(n).head.sha
    runs = daemon.gh(daemon.sb.owner).get_repo(daemon.sb.repo).get_commit(head).get_check_runs()
    assert [r.name for r in runs if r.name == "L1.C3"] == ["L1.C3"]

"""A PR whose mergeability GitHub is still computing is read again after a wait, same tick."""

from __future__ import annotations

import time

from capdaemon.daemon.merging.mergewait import RETRY_AFTER, TICK_WAIT_LIMIT

from .conftest import Harness


def _pr_reads(daemon: Harness) -> int:
    ends = daemon.sb.counters()["endpoints"]
    return int(ends.get("GET /repos/{owner}/{repo}/pulls/{number}", {}).get("requests", 0))


def test_unknown_mergeability_merges_in_the_tick_that_sees_it(daemon: Harness) -> None:
    """Unknown for the batch read and the immediate re-read: a re-read after a wait says
    MERGEABLE and the PR merges in this tick (it used to wait for the next one)."""
    daemon.sb.set_fidelity(mergeable_reads=2)
    n = daemon.open_pr({"docs/late.md": "# late\n"})
    daemon.sb.reset_counters()
    started = time.monotonic()
    report = daemon.tick()
    assert report.errors == [] and report.merged == [f"acme/widgets#{n}"]
    assert time.monotonic() - started >= RETRY_AFTER[0]
    assert _pr_reads(daemon) <= 4  # the re-reads, plus the merge's own read at most
    assert daemon.ticker is not None
    assert daemon.ticker.forge.rate_budget()["wait_spent"] >= RETRY_AFTER[0] - 0.5


def test_merges_that_move_the_base_keep_the_waits_within_the_tick_bound(daemon: Harness) -> None:
    """Three ready PRs: each merge moves main, so GitHub computes the others' mergeability
    again. The tick merges what its bounded waits allow (the first at least), never waits more
    than its bound, and the next tick merges the rest."""
    daemon.sb.set_fidelity(mergeable_reads=2)
    numbers = [daemon.open_pr({f"docs/p{i}.md": f"# {i}\n"}) for i in range(3)]
    first = daemon.tick()
    assert first.merged and first.merged[0] == f"acme/widgets#{numbers[0]}"
    assert daemon.ticker is not None
    assert daemon.ticker.forge.rate_budget()["wait_spent"] <= TICK_WAIT_LIMIT
    merged = set(first.merged)
    for _ in range(3):
        merged |= set(daemon.tick().merged)
    assert merged == {f"acme/widgets#{n}" for n in numbers}


def test_a_mergeability_that_stays_unknown_costs_a_bounded_wait(daemon: Harness) -> None:
    """GitHub never finishes (always null): the tick gives up after its bounded re-reads and
    waits, never merges on null, and ends; nothing is merged."""
    daemon.sb.set_fidelity(mergeable_reads=1000)
    n = daemon.open_pr({"docs/never.md": "# never\n"})
    daemon.sb.reset_counters()
    started = time.monotonic()
    report = daemon.tick()
    assert report.merged == [] and not daemon.actions("merge", n)
    assert time.monotonic() - started < TICK_WAIT_LIMIT + 10
    assert _pr_reads(daemon) == 1 + len(RETRY_AFTER)
    assert not daemon.pull(n).merged


def test_the_rereads_follow_a_short_computation_closely(daemon: Harness) -> None:
    """GitHub answers null for the batch read, the immediate re-read and one more: the PR is
    read again a second, then two seconds after the tick listed it (not 2 s and 6 s after the
    first re-read), so a short computation costs the tick about 2 s of waiting, not 6."""
    daemon.sb.set_fidelity(mergeable_reads=3)
    n = daemon.open_pr({"docs/soon.md": "# soon\n"})
    daemon.sb.reset_counters()
    report = daemon.tick()
    assert report.merged == [f"acme/widgets#{n}"]
    assert daemon.ticker is not None
    assert daemon.ticker.forge.rate_budget()["wait_spent"] < 4.0
    assert _pr_reads(daemon) <= 5  # three reads for it, and the merge's own

"""The change detector's newer reads — a waiting PR's checks, an open decision issue below
the list's top — and targeted ticks in tick_metrics.json (against the sandbox over HTTP)."""

from __future__ import annotations

import json

import pytest

from capdaemon.daemon.polling.detector import CHECK_FEEDS, ChangeDetector

from .conftest import Harness
from .test_detector import _counted, _detector, _merges
from .test_steady import _app_github, _settle

BALLOTS_FEED = "label=decision:pending-owner#1"  # the open ballots listing, its first page

pytestmark = pytest.mark.slow


def _waiting_on_ci(daemon: Harness) -> tuple[int, ChangeDetector]:
    """An A PR that waits only for an outside `ci` check, settled; a detector with its marks."""
    daemon.configure(repo={"extra_checks": ["ci"]})
    n = daemon.open_pr({"docs/ci.md": "# ci\n"})
    _settle(daemon)
    ticker = daemon.ticker
    assert ticker is not None
    sha = daemon.pull(n).head.sha
    assert ticker.deps.waiting_checks == {(daemon.sb.repo, n): (sha, "check-runs")}
    det = _detector(daemon)
    det.run(daemon.sb.now())
    return n, det


def _ci_passes(daemon: Harness, n: int) -> None:
    gh = _app_github(daemon, daemon.sb.evil_installation_id)  # another App: outside CI
    gh.get_repo(daemon.sb.repo).create_check_run(
        name="ci", head_sha=daemon.pull(n).head.sha, status="completed", conclusion="success"
    )


def test_a_check_run_completing_merges_at_the_next_look(daemon: Harness) -> None:
    """The PR waits only on outside CI: while CI runs, each look reads its check runs and
    status, every answer a 304 (0 counted); when CI completes, the next look flags the repo
    and its targeted tick merges the PR (it used to wait for the next full tick), once."""
    n, det = _waiting_on_ci(daemon)
    feeds = det.feeds()
    assert (daemon.sb.repo, "check-runs", daemon.pull(n).head.sha) in feeds
    daemon.sb.reset_counters()
    for _ in range(2):
        assert det.run(daemon.sb.now()) is None
    requests, counted = _counted(daemon)
    assert counted == 0 and requests == 2 * len(feeds)  # `ci` is an App's: no status read
    _ci_passes(daemon, n)
    report = det.run(daemon.sb.now())
    assert report is not None and report.merged == [f"{daemon.sb.repo}#{n}"]
    assert daemon.pull(n).merged and _merges(daemon, n) == 1
    assert not [f for f in det.feeds() if f[1] in CHECK_FEEDS]  # merged: no longer watched
    for _ in range(2):
        later = det.run(daemon.sb.now())
        assert later is None or later.merged == []
    assert _merges(daemon, n) == 1


def test_a_failing_checks_read_loses_nothing_and_doubles_nothing(daemon: Harness) -> None:
    """The checks read answers 502 (every retry) when CI completes: the look flags nothing and
    merges nothing; the full tick merges the PR, and no later look merges it again."""
    n, det = _waiting_on_ci(daemon)
    ticker = daemon.ticker
    assert ticker is not None
    ticker.forge.transport.backoff_base = ticker.forge.transport.backoff_max = 0.01
    _ci_passes(daemon, n)
    daemon.sb.faults("GET", r"/commits/[0-9a-f]+/(check-runs|status)", status=502, count=100)
    assert det.run(daemon.sb.now()) is None
    assert det.stats.failed_reads >= 1 and not daemon.pull(n).merged
    daemon.sb.clear_faults()
    assert f"{daemon.sb.repo}#{n}" in daemon.tick().merged  # the safety net
    for _ in range(2):
        later = det.run(daemon.sb.now())
        assert later is None or later.merged == []
    assert _merges(daemon, n) == 1


def test_a_check_that_fails_merges_nothing(daemon: Harness) -> None:
    """CI completes red: the look sees it move and runs a targeted tick, which merges nothing
    (a completion is a reason to look, never a reason to merge)."""
    n, det = _waiting_on_ci(daemon)
    gh = _app_github(daemon, daemon.sb.evil_installation_id)
    gh.get_repo(daemon.sb.repo).create_check_run(
        name="ci", head_sha=daemon.pull(n).head.sha, status="completed", conclusion="failure"
    )
    report = det.run(daemon.sb.now())
    assert report is not None and report.merged == []
    assert not daemon.pull(n).merged and _merges(daemon, n) == 0


def test_targeted_ticks_are_counted_in_tick_metrics(daemon: Harness) -> None:
    """A targeted tick that merges: tick_metrics.json counts it apart from the full ticks and
    keeps its merge's reaction time."""
    daemon.tick()
    path = daemon.state_dir / "tick_metrics.json"
    ticks = json.loads(path.read_text(encoding="utf-8"))["ticks"]
    det = _detector(daemon)
    det.run(daemon.sb.now())
    n = daemon.open_pr({"docs/metric.md": "# metric\n"})
    report = det.run(daemon.sb.now())
    assert report is not None and report.merged == [f"{daemon.sb.repo}#{n}"]
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["ticks"] == ticks and data["targeted_ticks"] == 1
    assert data["targeted_merged"] == 1 and data["targeted_api_requests"] > 0
    assert data["reaction_samples"]["merge_done"]
    assert data["reaction_seconds_24h"]["merge_done"]["n"] >= 1


def test_a_reaction_on_a_ballot_below_the_top_ten_is_seen(daemon: Harness) -> None:
    """A D PR's ballot, then eleven newer issues in the decision repo: the ballot is not among
    the ten most recently updated, and a 👍 moves no update time. The page of open issues the
    look reads (a 304 while quiet) still shows the 👍 in its rollup: the look flags the PR's
    repo."""
    n = daemon.open_pr({"cron_settings.json": '{"jobs": ["r"]}\n'})
    daemon.tick()
    bot = daemon.gh(daemon.sb.owner).get_repo(daemon.sb.bot_repo)
    for i in range(11):
        bot.create_issue(title=f"unrelated {i}")
    det = _detector(daemon)
    det.look()
    ballot = daemon.ballot(n, daemon.sb.owner)
    assert (daemon.sb.bot_repo, "issues", "open#1") in det.feeds()  # under a page: all open
    assert det.look() == set()
    daemon.sb.reset_counters()
    assert det.look() == set()
    assert _counted(daemon)[1] == 0  # quiet: every read a 304
    ballot.create_reaction("+1")
    assert det.look() == {daemon.sb.repo}
    assert det.look() == set()


def test_a_failing_ballot_read_keeps_the_change_for_the_next_look(daemon: Harness) -> None:
    """The open-issue page answers 502 (every retry) right after a 👍: that look flags
    nothing; its mark is kept, so the next look flags the repo — once."""
    n = daemon.open_pr({"cron_settings.json": '{"jobs": ["s"]}\n'})
    daemon.tick()
    ticker = daemon.ticker
    assert ticker is not None
    ticker.forge.transport.backoff_base = ticker.forge.transport.backoff_max = 0.01
    bot = daemon.gh(daemon.sb.owner).get_repo(daemon.sb.bot_repo)
    for i in range(11):
        bot.create_issue(title=f"unrelated {i}")
    det = _detector(daemon)
    det.look()
    det.look()
    ballot = daemon.ballot(n, daemon.sb.owner)
    ballot.create_reaction("+1")
    daemon.sb.faults("GET", r"capdaemon-bot/issues\?.*state=open", status=502, count=100)
    assert det.look() == set() and det.stats.failed_reads >= 1
    daemon.sb.clear_faults()
    assert det.look() == {daemon.sb.repo}
    assert det.look() == set()


def test_a_reaction_on_a_ballot_past_the_first_hundred_open_issues_is_seen(
    daemon: Harness,
) -> None:
    """A hundred older open issues in the decision repo: the ballot would be on the open
    list's second page; the look reads the open ballots by label (one page) and sees it."""
    bot = daemon.gh(daemon.sb.owner).get_repo(daemon.sb.bot_repo)
    for i in range(100):
        bot.create_issue(title=f"older {i}")
    n = daemon.open_pr({"cron_settings.json": '{"jobs": ["p"]}\n'})
    daemon.tick()
    det = _detector(daemon)
    det.look()
    issue_feeds = [f for f in det.feeds() if f[1] == "issues"]
    assert issue_feeds == [(daemon.sb.bot_repo, "issues", BALLOTS_FEED)]
    assert det.look() == set()
    daemon.ballot(n, daemon.sb.owner).create_reaction("+1")
    assert det.look() == {daemon.sb.repo}


def test_a_reaction_on_a_ballot_past_the_first_hundred_ballots_is_seen(daemon: Harness) -> None:
    """Over a hundred open ballots: the look reads the ballots' second page in turn (a slow
    feed) once the first page is full, and sees a 👍 there."""
    bot = daemon.gh(daemon.sb.owner).get_repo(daemon.sb.bot_repo)
    for i in range(100):
        bot.create_issue(title=f"older ballot {i}", labels=["decision:pending-owner"])
    n = daemon.open_pr({"cron_settings.json": '{"jobs": ["q"]}\n'})
    daemon.tick()
    det = _detector(daemon)
    det.look()
    page2 = (daemon.sb.bot_repo, "issues", BALLOTS_FEED.replace("#1", "#2"))
    assert page2 in det.feeds()
    for _ in range(2):  # the page's first read sets its mark (it may share a look's turn)
        det.look()
    daemon.ballot(n, daemon.sb.owner).create_reaction("+1")
    flagged: set[str] = set()
    for _ in range(3):  # at most every feed's turn
        flagged |= det.look()
    assert flagged == {daemon.sb.repo}

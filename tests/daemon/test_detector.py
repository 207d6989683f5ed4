"""The change detector between ticks and its targeted tick, against the sandbox over HTTP."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.config import ConfigError, load_config
from capdaemon.daemon.polling.detector import ChangeDetector
from capdaemon.forge.reads import _poll_interval

from .conftest import Harness, write_config


def _detector(daemon: Harness) -> ChangeDetector:
    """A detector over the daemon's ticker whose clock jumps a minute per look (always due)."""
    ticker = daemon.ticker or daemon.start()
    minutes = itertools.count(0, 60)
    return ChangeDetector(ticker, clock=lambda: float(next(minutes)))


def _counted(daemon: Harness) -> tuple[int, int]:
    total = daemon.sb.counters()["total"]
    return int(total["requests"]), int(total["counted"])


def _merges(daemon: Harness, n: int) -> int:
    return sum(1 for r in daemon.actions("merge", n) if r.get("status") == "done")


def test_a_quiet_look_costs_no_counted_request(daemon: Harness) -> None:
    """After a tick, nothing happens: a look sends one request per feed and every answer is a
    304 (not counted); no targeted tick runs."""
    daemon.open_pr({"docs/a.md": "# a\n"})
    daemon.tick()
    det = _detector(daemon)
    assert det.run(daemon.sb.now()) is None  # the first look only sets the marks
    daemon.sb.reset_counters()
    for _ in range(3):
        assert det.run(daemon.sb.now()) is None
    requests, counted = _counted(daemon)
    assert counted == 0
    assert requests == 3 * len(det.feeds())
    assert det.stats.targeted_ticks == 0


def test_a_new_pr_is_merged_by_the_targeted_tick(daemon: Harness) -> None:
    """A PR opened between ticks: the next look sees the repo's list move and a targeted tick
    merges it — once: the looks after it (which see the daemon's own writes) merge nothing."""
    daemon.tick()
    det = _detector(daemon)
    det.run(daemon.sb.now())
    n = daemon.open_pr({"docs/new.md": "# new\n"})
    report = det.run(daemon.sb.now())
    assert report is not None and report.merged == [f"{daemon.sb.repo}#{n}"]
    assert daemon.pull(n).merged
    for _ in range(3):
        later = det.run(daemon.sb.now())
        assert later is None or later.merged == []
    assert det.run(daemon.sb.now()) is None  # quiet again
    assert _merges(daemon, n) == 1


def test_a_failing_look_loses_nothing_and_doubles_nothing(daemon: Harness) -> None:
    """The feed answers 502 (every retry): the look changes nothing and merges nothing; the
    change stays visible, so the full tick (or the next look) acts on it exactly once."""
    daemon.tick()
    ticker = daemon.ticker
    assert ticker is not None
    ticker.forge.transport.backoff_base = ticker.forge.transport.backoff_max = 0.01
    det = _detector(daemon)
    det.run(daemon.sb.now())
    n = daemon.open_pr({"docs/flaky.md": "# flaky\n"})
    daemon.sb.faults("GET", r"/pulls\?.*sort=updated", status=502, count=100)
    assert det.run(daemon.sb.now()) is None
    assert det.stats.failed_reads >= 1 and not daemon.pull(n).merged
    daemon.sb.clear_faults()
    assert f"{daemon.sb.repo}#{n}" in daemon.tick().merged  # the safety net
    later = det.run(daemon.sb.now())  # the feed still shows the change: handled, not redone
    assert later is None or later.merged == []
    assert _merges(daemon, n) == 1


def test_a_repeated_change_writes_nothing_twice(daemon: Harness) -> None:
    """The same change handed over twice (a feed that repeats itself): the second targeted
    tick reads, but opens no second ballot, posts no second check run, writes nothing."""
    daemon.tick()
    n = daemon.open_pr({"cron_settings.json": '{"jobs": ["x"]}\n'})  # protected: a D ballot
    ticker = daemon.ticker
    assert ticker is not None
    first = ticker.targeted_tick([daemon.sb.repo], daemon.sb.now())
    assert first is not None and first.merged == []
    daemon.issue_for(n, "ballot")  # exactly one
    daemon.sb.reset_counters()
    again = ticker.targeted_tick([daemon.sb.repo], daemon.sb.now())
    assert again is not None and again.errors == []
    assert daemon.writes() == {}
    daemon.issue_for(n, "ballot")  # still exactly one


def test_a_change_seen_during_a_tick_waits_for_it_to_end(daemon: Harness) -> None:
    """A tick holds the lock: the targeted tick does not run beside it (no second writer); the
    repo is kept and handled at the next look, even though the feed is quiet by then."""
    daemon.tick()
    ticker = daemon.ticker
    assert ticker is not None
    det = _detector(daemon)
    det.run(daemon.sb.now())
    n = daemon.open_pr({"docs/during.md": "# during\n"})
    with ticker.busy:  # a full tick (or a Telegram tap) is running
        result: list[object] = []
        t = threading.Thread(target=lambda: result.append(det.run(daemon.sb.now())))
        t.start()
        t.join(timeout=60)
        assert result == [None] and det.pending == {daemon.sb.repo}
        assert not daemon.pull(n).merged
    report = det.run(daemon.sb.now())
    assert report is not None and report.merged == [f"{daemon.sb.repo}#{n}"]
    assert det.stats.deferred == 1 and _merges(daemon, n) == 1


def test_a_change_the_feed_does_not_show_is_caught_by_the_full_tick(daemon: Harness) -> None:
    """A PR closed outside the daemon is left for the full tick: a targeted tick of another
    repo lists nothing and takes nothing as closed; the full tick records it closed."""
    n = daemon.open_pr({"cron_settings.json": '{"jobs": ["y"]}\n'})
    daemon.tick()
    ticker = daemon.ticker
    assert ticker is not None
    daemon.gh(daemon.sb.owner).get_repo(daemon.sb.repo).get_pull(n).edit(state="closed")
    ref = f"{daemon.sb.repo}#{n}"
    report = ticker.targeted_tick(["acme/not-flagged"], daemon.sb.now())
    assert report is not None and report.prs_seen == 0
    assert ticker.prs.records[ref].state == "open"  # not listed: not taken as closed
    daemon.tick()
    assert ticker.prs.records[ref].state == "closed"


def test_looks_stay_within_the_configured_request_rate(daemon: Harness, tmp_path: Path) -> None:
    """At most `detect_requests_per_minute`: a look of F feeds waits 60·F/limit seconds."""
    daemon.configure(
        schedule={"tick_seconds": 60, "detect_seconds": 1, "detect_requests_per_minute": 6}
    )
    daemon.tick()
    ticker = daemon.ticker
    assert ticker is not None
    now = [0.0]
    det = ChangeDetector(ticker, clock=lambda: now[0])
    feeds = len(det.feeds())
    assert det.interval(feeds) == pytest.approx(10.0 * feeds)
    looks = 0
    while now[0] < 300:
        before = det.stats.looks
        det.run(daemon.sb.now())
        looks += det.stats.looks - before
        now[0] += 1.0
    assert looks * feeds <= 6 * 5 + feeds  # five minutes at six requests a minute


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({"tick_seconds": 30, "detect_seconds": 30}, "must be less than tick_seconds (30)"),
        ({"detect_seconds": -1}, "must be at least 0"),
        ({"detect_requests_per_minute": 0}, "must be at least 1"),
        ({"detect_seconds": 2.5}, "expected an integer"),
    ],
)
def test_a_bad_detector_setting_is_named(
    daemon: Harness, tmp_path: Path, schedule: dict[str, object], message: str
) -> None:
    """One clear error naming the file and the `schedule.` key."""
    folder = write_config(tmp_path / "bad", daemon.sb, schedule=schedule)
    with pytest.raises(ConfigError) as err:
        load_config(folder)
    text = str(err.value)
    assert message in text and "capdaemon.yml" in text
    key = "detect_requests_per_minute" if "detect_requests" in str(schedule) else "detect_seconds"
    assert f"schedule.{key}" in text


@given(st.text(max_size=12))
def test_poll_interval_header_is_a_whole_number_of_seconds_or_nothing(value: str) -> None:
    """`X-Poll-Interval` from the wire: only plain digits count; anything else is ignored."""
    got = _poll_interval({"X-Poll-Interval": value})
    stripped = value.strip()
    if stripped.isdigit() and stripped.isascii() and len(stripped) <= 6:
        assert got == int(stripped)
    else:
        assert got is None
    assert _poll_interval({"x-poll-interval": "60"}) == 60 and _poll_interval({}) is None


@pytest.mark.slow
def test_run_merges_a_new_pr_within_seconds_not_at_the_next_tick(daemon: Harness) -> None:
    """`capdaemon run` with a 60 s tick: a PR opened after the first tick is merged by a
    targeted tick within seconds, long before the second tick; SIGTERM still exits 0."""
    daemon.configure(schedule={"tick_seconds": 60, "detect_seconds": 1})
    args = ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "capdaemon.cli", "run", *args, "--log-format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (daemon.state_dir / "tick_metrics.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no first tick"
            time.sleep(0.2)
        n = daemon.open_pr({"docs/fast.md": "# fast\n"})
        opened = time.monotonic()
        while not daemon.pull(n).merged:
            assert time.monotonic() - opened < 20, "not merged within 20 s"
            time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            print(proc.communicate()[1][-6000:])
    assert proc.returncode == 0, err
    events = [json.loads(line)["event"] for line in err.splitlines() if line.startswith("{")]
    assert events.count("tick.done") == 1  # merged between ticks, not by the second one
    assert "detect.changed" in events and "tick.targeted.done" in events


def test_an_owner_vote_on_a_ballot_is_seen_by_the_next_look(daemon: Harness) -> None:
    """A D PR's ballot: an owner's `/approve` comment, then a 👍 on the issue (which moves no
    update time), each move the decision repo's issue list: the look flags the PR's repo."""
    n = daemon.open_pr({"cron_settings.json": '{"jobs": ["z"]}\n'})
    daemon.tick()
    det = _detector(daemon)
    assert ("acme/capdaemon-bot", "issues", "open#1") in det.feeds()
    det.look()
    assert det.look() == set()
    daemon.ballot(n, daemon.sb.owner).create_comment("/approve")
    assert det.look() == {daemon.sb.repo}
    assert det.look() == set()
    daemon.ballot(n, daemon.sb.owner).create_reaction("+1")
    assert det.look() == {daemon.sb.repo}


def test_a_change_that_shows_a_look_late_is_acted_on_once(daemon: Harness) -> None:
    """The feed lags: the look right after the push still answers (502 here), the one after it
    shows the change — the targeted tick then merges the PR, once."""
    daemon.tick()
    ticker = daemon.ticker
    assert ticker is not None
    ticker.forge.transport.backoff_base = ticker.forge.transport.backoff_max = 0.01
    det = _detector(daemon)
    det.run(daemon.sb.now())
    n = daemon.open_pr({"docs/late.md": "# late\n"})
    daemon.sb.faults(
        "GET", r"/pulls\?.*sort=updated", status=502, count=ticker.forge.transport.attempts
    )
    assert det.run(daemon.sb.now()) is None and not daemon.pull(n).merged
    report = det.run(daemon.sb.now())
    assert report is not None and report.merged == [f"{daemon.sb.repo}#{n}"]
    for _ in range(3):
        later = det.run(daemon.sb.now())
        assert later is None or later.merged == []
    assert _merges(daemon, n) == 1

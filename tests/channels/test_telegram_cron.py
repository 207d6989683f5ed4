"""Taps under cron and in the face of a hostile or failing Bot API: `tick --once` reads them,
a malformed update is skipped (not a blocked queue), refused taps are filed under the PR of
their message, and a 429's retry_after holds every later call."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from capdaemon.cli import main

from .conftest import ALICE_TG, BOB_TG, CHAT, MALLORY_TG, TgHarness
from .tgadmin import admin

pytestmark = pytest.mark.slow


def _tick_once(tgd: TgHarness) -> subprocess.CompletedProcess[str]:
    """One cron tick: its own process, as crontab runs it."""
    args = ["--config", str(tgd.config_dir), "--state", str(tgd.state_dir)]
    return subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "tick", "--once", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )


def test_a_cron_tick_acts_on_a_tap_and_merges_in_that_tick(tgd: TgHarness) -> None:
    """`tick --once` processes only: the first posts the request; bob taps Approve; the next
    process reads the tap and merges in the same tick (it used to wait for a poll job that
    cron never runs, until the request expired into a ballot)."""
    tgd.sb.set_clock(None)  # separate processes: the real clock for everyone
    tgd.configure_telegram()
    number = tgd.tier2_pr()
    proc = _tick_once(tgd)
    assert proc.returncode == 0, proc.stderr
    (msg,) = tgd.messages()
    admin(tgd.tg, "press", chat_id=CHAT, message_id=msg["message_id"], user_id=BOB_TG)
    proc = _tick_once(tgd)
    assert proc.returncode == 0, proc.stderr
    assert tgd.pull(number).merged
    (tap,) = tgd.taps()
    assert tap["counted"] is True and tap["by"] == "bob"
    assert tgd.messages()[0]["text"].startswith(f"Merged: {tgd.sb.repo}#{number}: task work")
    assert admin(tgd.tg, "state")["queued"] == 1  # confirmed by the next getUpdates' offset
    proc = _tick_once(tgd)  # nothing live: no getUpdates at all
    assert proc.returncode == 0, proc.stderr
    assert admin(tgd.tg, "state")["queued"] == 1


def test_a_malformed_update_is_skipped_and_the_tap_behind_it_counts(tgd: TgHarness) -> None:
    """A callback_query without `from` on the request's message, then a message update: each
    is skipped and audited under the PR; alice's tap queued behind them counts in the same
    tick, and the offset moves past all three."""
    tgd.configure_telegram()
    number = tgd.tier2_pr()
    tgd.tick()
    (msg,) = tgd.messages()
    data = msg["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    broken = {"id": "q-broken", "message": msg, "chat_instance": "c", "data": data}
    bad = admin(tgd.tg, "update", update={"callback_query": broken})
    other = admin(
        tgd.tg, "update", update={"update_id": bad["update_id"] + 1, "edited_message": {}}
    )
    admin(tgd.tg, "press", chat_id=CHAT, message_id=msg["message_id"], user_id=ALICE_TG)
    report = tgd.tick()
    assert tgd.pull(number).merged, report.errors
    skipped = tgd.actions("telegram_update_skipped")
    assert [s["update_id"] for s in skipped] == [bad["update_id"], other["update_id"]]
    assert skipped[0]["pr"] == f"{tgd.sb.repo}#{number}"
    assert skipped[0]["reason"] == "callback_query.from is missing or not an object"
    assert tgd.tg.state.answers["q-broken"]["text"].startswith("Not counted")
    assert [t["counted"] for t in tgd.taps()] == [True]
    assert tgd.desk.store.offset > other["update_id"] + 1


def test_refused_taps_are_filed_under_the_pr_of_their_message(tgd: TgHarness, capsys) -> None:
    """On PR 2's message: data naming an unknown request, malformed data, and PR 1's own
    approve button. All three are refused and filed under PR 2, so `why` of PR 2 shows them
    (they used to be filed under no PR, or under PR 1)."""
    tgd.configure_telegram()
    first = tgd.tier2_pr("t-a")
    second = tgd.tier2_pr("t-b")
    tgd.tick()
    m1, m2 = tgd.messages()
    approve_1 = m1["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    for data in ("cd1.a.000000000000.AAAAAAAAAAAAAAAAAAAAAA", "approve!", approve_1):
        tgd.press(BOB_TG, message=m2["message_id"], data=data)
    tgd.tick()
    assert not tgd.pull(first).merged and not tgd.pull(second).merged
    taps = tgd.taps()
    assert [t["pr"] for t in taps] == [f"{tgd.sb.repo}#{second}"] * 3
    assert [t["counted"] for t in taps] == [False] * 3
    capsys.readouterr()
    assert main(["why", f"{tgd.sb.repo}#{second}", "--state", str(tgd.state_dir)]) == 0
    out = capsys.readouterr().out
    assert out.count(f"telegram tap — by: bob; user: {BOB_TG}; counted: False") == 3
    assert "the button is not on this request's message" in out
    assert "malformed callback data" in out


def test_retry_after_holds_the_rest_of_the_sync_and_the_next_process(tgd: TgHarness) -> None:
    """Two requests to post; the first sendMessage is answered 429 retry_after 3. No other
    call goes out for 3 s: not the second sendMessage of that tick, not the next tick, not a
    restarted daemon; after it, both requests are posted."""
    tgd.configure_telegram()
    tgd.tier2_pr("t-a")
    tgd.tier2_pr("t-b")
    admin(tgd.tg, "fault", method="sendMessage", code=429, retry_after=3)
    report = tgd.tick()
    assert any("429 Too Many Requests: retry after 3" in e for e in report.errors)
    calls = admin(tgd.tg, "counters")
    assert calls.get("sendMessage") == 1
    report = tgd.tick()
    assert any("paused" in e for e in report.errors)
    tgd.stop()
    tgd.start()  # a new process: telegram.json remembers the pause (getMe only at start)
    tgd.tick()
    after = admin(tgd.tg, "counters")
    assert after == {**calls, "getMe": calls["getMe"] + 1}
    left = tgd.desk.client.pause_left()
    assert 0 < left <= 3
    time.sleep(left + 0.05)
    tgd.tick()
    assert len(tgd.messages()) == 2
    assert admin(tgd.tg, "counters")["sendMessage"] == 3


def test_the_poll_job_reopens_its_long_poll_at_once(tgd: TgHarness) -> None:
    """Under `run`, while a request is live a long poll is open nearly all the time (it used
    to be closed one second in every `poll_seconds`), and taps pressed at any moment are read
    within a second."""
    from apscheduler.schedulers.background import BackgroundScheduler

    from capdaemon.channels.tgjob import add_poll_job

    tgd.sb.set_clock(None)
    tgd.configure_telegram(poll_seconds=2)
    tgd.tier2_pr()
    ticker = tgd.start()
    sched = BackgroundScheduler(timezone="UTC")
    add_poll_job(sched, ticker)  # the defaults of `capdaemon run`
    sched.start()
    waits = []
    try:
        ticker.tick()  # posts the request, which wakes the job
        time.sleep(0.3)
        samples = []
        for _ in range(40):  # 4 s: two long polls of 2 s
            samples.append(admin(tgd.tg, "state")["polling"])
            time.sleep(0.1)
        for i in range(4):
            time.sleep(0.3 * i)  # pressed at different phases of the long poll
            pressed = time.monotonic()
            tgd.press(MALLORY_TG)
            while len(tgd.taps()) <= i and time.monotonic() - pressed < 5:
                time.sleep(0.02)
            waits.append(time.monotonic() - pressed)
    finally:
        sched.shutdown(wait=True)
    assert sum(1 for n in samples if n == 1) >= 36, samples
    assert len(tgd.taps()) == 4
    assert max(waits) < 1.0, waits

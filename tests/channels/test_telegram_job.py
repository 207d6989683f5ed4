"""The getUpdates scheduler job: a tap merges within seconds, with no tick in between."""

from __future__ import annotations

import time

from apscheduler.schedulers.background import BackgroundScheduler

from capdaemon.channels.tgjob import add_poll_job

from .conftest import BOB_TG, TgHarness


def test_scheduled_poll_job_merges_a_tap_within_ten_seconds(tgd: TgHarness) -> None:
    """Real clock, the job on its own executor, no tick job: the tap alone leads to the merge."""
    tgd.sb.set_clock(None)
    tgd.configure_telegram(poll_seconds=2)
    number = tgd.tier2_pr()
    ticker = tgd.start()
    ticker.tick()
    sched = BackgroundScheduler(timezone="UTC")
    add_poll_job(sched, ticker)  # every poll_seconds (2), long polls of 1 s
    sched.start()
    try:
        tapped = time.monotonic()
        tgd.press(BOB_TG, "✅ Approve")
        while time.monotonic() - tapped < 10 and not tgd.pull(number).merged:
            time.sleep(0.2)
        assert tgd.pull(number).merged, "no merge within 10 s of the tap"
    finally:
        sched.shutdown(wait=True)
    assert [t["counted"] for t in tgd.taps()] == [True]

"""The digest states the targeted ticks of its period: a targeted tick's merge shows in the
next digest, once (the digest after it does not count it again), across a restart."""

from __future__ import annotations

from datetime import timedelta

import pytest

from capdaemon.daemon.service.digest_facts import gather
from capdaemon.decide.digest import digest_day, render_digest
from capdaemon.decide.targeted import TargetedCounts

from .conftest import Harness
from .test_detector import _detector

pytestmark = pytest.mark.slow


def test_a_targeted_ticks_work_is_in_the_next_digest_once(daemon: Harness) -> None:
    daemon.tick()
    det = _detector(daemon)
    det.run(daemon.sb.now())
    n = daemon.open_pr({"docs/metric.md": "# metric\n"})
    at = daemon.sb.now()
    report = det.run(at)
    assert report is not None and report.merged == [f"{daemon.sb.repo}#{n}"]
    ticker = daemon.ticker
    assert ticker is not None
    config = ticker.config
    daemon.stop()  # a restart: the digest reads only what is on disk
    sc = config.schedule
    day = digest_day(at, sc.digest_time, sc.timezone, ended=False)
    facts = gather(config, daemon.state_dir, day, at + timedelta(minutes=1))
    assert facts.targeted == TargetedCounts(ticks=1, merged=1)
    assert "Targeted ticks (run between full ticks on a change seen): 1, merging 1 PR." in (
        render_digest(facts, at + timedelta(minutes=1))
    )
    later = gather(config, daemon.state_dir, day + timedelta(days=1), at + timedelta(days=1))
    assert later.targeted == TargetedCounts(ticks=0, merged=0)
    earlier = gather(config, daemon.state_dir, day - timedelta(days=1), at)
    assert earlier.targeted == TargetedCounts(ticks=0, merged=0)

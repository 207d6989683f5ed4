"""What a targeted tick (the change detector's) does is measured in tick_metrics.json too."""

from __future__ import annotations

import itertools
import json
from typing import Any

from capdaemon.daemon.polling.detector import ChangeDetector

from .conftest import Harness


def _samples(daemon: Harness) -> dict[str, Any]:
    data = json.loads((daemon.state_dir / "tick_metrics.json").read_text("utf-8"))
    samples: dict[str, Any] = data["reaction_samples"]
    return samples


def test_a_targeted_ticks_publish_and_merge_are_measured(daemon: Harness) -> None:
    """A PR opened 20 s before the look that sees it: the targeted tick publishes L1.C3 and
    merges it, and both reactions (20 s and a little more) are in tick_metrics.json without
    waiting for a full tick; the full tick count is unchanged."""
    daemon.tick()
    before = _samples(daemon)
    minutes = itertools.count(0, 60)
    det = ChangeDetector(daemon.ticker or daemon.start(), clock=lambda: float(next(minutes)))
    det.run(daemon.sb.now())  # the first look sets the marks
    ticks = json.loads((daemon.state_dir / "tick_metrics.json").read_text("utf-8"))["ticks"]
    n = daemon.open_pr({"docs/new.md": "# new\n"})
    daemon.advance(seconds=20)
    report = det.run(daemon.sb.now())
    assert report is not None and report.merged == [f"{daemon.sb.repo}#{n}"]
    after = _samples(daemon)
    for kind in ("check_published", "merge_done"):
        new = after[kind][len(before[kind]) :]
        assert len(new) == 1, (kind, after[kind])
        assert 20 <= new[0][1] <= 20 + report.seconds + 1
    metrics = json.loads((daemon.state_dir / "tick_metrics.json").read_text("utf-8"))
    assert metrics["ticks"] == ticks
    assert metrics["reaction_seconds_24h"]["merge_done"]["n"] == len(after["merge_done"])

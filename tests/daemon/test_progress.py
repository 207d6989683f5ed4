"""Progress of long ticks: `tick.progress` events off a terminal, one human line on one."""

from __future__ import annotations

import io

from structlog.testing import capture_logs

from capdaemon.daemon.core.progress import Progress
from capdaemon.daemon.core.tickdata import TickReport

from .conftest import T0, Harness


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_tick_reports_k_of_n_as_events(daemon: Harness) -> None:
    """Over three PRs, with reports due at every PR, the tick logs `tick.progress` k of 3."""
    for i in range(3):
        daemon.open_pr({f"docs/guide/page{i}.md": f"# page {i}\n"})
    ticker = daemon.start()
    ticker.progress_every = 0.0
    with capture_logs() as logs:
        daemon.tick()
    progress = [e for e in logs if e["event"] == "tick.progress"]
    assert [(e["done"], e["total"]) for e in progress] == [(0, 3), (1, 3), (2, 3)]
    assert all(e["repo"] == "acme/widgets" for e in progress)


def test_short_ticks_stay_quiet(daemon: Harness) -> None:
    """The default interval: a quick tick prints no progress at all."""
    daemon.open_pr({"docs/guide/a.md": "# a\n"})
    with capture_logs() as logs:
        daemon.tick()
    assert not [e for e in logs if e["event"] == "tick.progress"]


def test_on_a_terminal_one_human_line_every_interval() -> None:
    """On a TTY: a plain "classified k of N" line, at most one per interval."""
    now = [0.0]
    out = _Terminal()
    progress = Progress(None, every=5.0, stream=out, clock=lambda: now[0])
    report = TickReport(started_at=T0, issues=["a"] * 14, merged=["m"] * 3)
    assert not progress.step("acme/widgets", 10, 1000, report)  # too soon
    now[0] = 5.0
    assert progress.step("acme/widgets", 120, 1000, report)
    now[0] = 6.0
    assert not progress.step("acme/widgets", 130, 1000, report)
    assert out.getvalue() == "acme/widgets: classified 120 of 1,000 PRs, 14 issues, 3 merges\n"

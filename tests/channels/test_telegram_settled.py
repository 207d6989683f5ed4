"""A one-tap approved on GitHub while Telegram is down still closes with the merge."""

from __future__ import annotations

from tests.safety.test_settled_issues import _closed_once, _one_tap, _thumbs_up

from .conftest import TgHarness
from .tgadmin import admin


def test_a_thumbs_up_one_tap_closes_with_the_merge_while_telegram_is_down(tgd: TgHarness) -> None:
    """Telegram configured but down (502 from its proxy): the 👍 on GitHub still merges the PR
    and its one-tap issue closes with the outcome in that tick."""
    tgd.configure_telegram()
    n = tgd.tier2_pr()
    tgd.tick()
    admin(tgd.tg, "outage", seconds=3600)
    issue = _one_tap(tgd, n)
    _thumbs_up(tgd, issue)
    tgd.tick()
    tgd.tick()
    assert tgd.pull(n).merged
    _closed_once(tgd, issue, "The PR was merged (merge commit")

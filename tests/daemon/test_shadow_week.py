"""A first week in shadow mode says "would merge" everywhere; the switch to enforce is reported
in one summary before anything merges (real ticks against the sandbox)."""

from __future__ import annotations

import json
import re

import pytest

from capdaemon.daemon.service.digest_job import render_for
from capdaemon.dashboard.readmodel import build
from capdaemon.dashboard.site import render
from capdaemon.decide.digest import digest_day

from .conftest import Harness

pytestmark = pytest.mark.slow

ROUTER = {"src/multiagent_protocol/router.py": "def route(msg, hs):\n    return hs(msg)\n"}
MERGED_WORD = re.compile(r"(?<!not )(?<!Not )\b(auto-)?merged\b(?! nothing)", re.I)


def _shadow_week(daemon: Harness) -> tuple[int, int]:
    """Shadow mode: a B PR and an A PR approved ("would merge"), the A PR twice (a push)."""
    daemon.configure(mode="shadow")
    b = daemon.open_pr(ROUTER, title="Refactor the router")
    a = daemon.open_pr({"README.md": "# widgets, shadow\n"}, title="Readme")
    daemon.tick()
    daemon.advance(minutes=5)
    daemon.tick()
    daemon.push(a, {"README.md": "# widgets, shadow again\n"})
    daemon.advance(minutes=5)
    daemon.tick()
    daemon.advance(minutes=5)
    daemon.tick()
    return b, a


def test_shadow_mode_says_would_merge_everywhere_and_never_merged(daemon: Harness) -> None:
    """The B PR's review issue, its L1.C3, the digest and the dashboard say "would merge" and
    shadow; none says the PR merged; the dashboard counts no merge and lists each PR once."""
    b, a = _shadow_week(daemon)
    refs = [f"{daemon.sb.repo}#{n}" for n in (b, a)]
    assert not daemon.pull(b).merged and not daemon.pull(a).merged
    assert len(daemon.actions("merge", a)) == 2  # one "would merge" per head

    review = daemon.issue_for(b, "review")
    assert "would merge" in review.title and "shadow" in review.title
    assert "Would merge" in review.body and "shadow mode" in review.body
    assert not MERGED_WORD.search(review.title + "\n" + review.body), review.body

    check = daemon.check(b)
    assert "would merge (shadow mode: not merged)" in check.output.title
    assert "Shadow mode" in check.output.summary
    assert not MERGED_WORD.search(check.output.title + check.output.summary)

    config, now = daemon.ticker.config, daemon.sb.now()  # type: ignore[union-attr]
    day = digest_day(now, config.schedule.digest_time, config.schedule.timezone, ended=False)
    digest = render_for(config, daemon.state_dir, day, now)
    assert "## Merges (0)" in digest
    shadow_part = digest.split("## Would merge, shadow mode: not merged (2)", 1)[1]
    shadow_part = shadow_part.split("\n## ", 1)[0]
    assert all(shadow_part.count(r) == 1 for r in refs), shadow_part

    model = build(daemon.state_dir, config, now)
    assert model.merges == []
    assert sorted(r for _, r, _ in model.would_merges) == sorted(refs)
    page = render(model, "index.html").body
    assert 'data-card="merges"><b>0</b>' in page
    assert 'data-card="merges-today"><b>0</b>' in page
    assert 'data-card="would-merge"><b>2</b>' in page
    assert 'id="shadow-mode">shadow mode: capdaemon merges nothing<' in page  # every page
    would = page.split('id="would-merge"', 1)[1].split("</table>", 1)[0]
    assert all(would.count(f">{r}<") == 1 for r in refs) and "shadow" in would


def test_the_first_enforce_tick_reports_the_switch_and_merges_nothing(daemon: Harness) -> None:
    """After a shadow week, the first enforce tick posts one summary listing each PR shadow
    approved with its verdict now, audits mode.switched and merges nothing; the next merges."""
    b, a = _shadow_week(daemon)
    daemon.configure(mode="enforce")
    daemon.advance(minutes=5)
    first = daemon.tick()
    assert first.merged == []
    assert not daemon.pull(b).merged and not daemon.pull(a).merged
    (summary,) = daemon.issues("mode-switch")
    assert "Switched from shadow to enforce mode" in summary.title
    for n in (b, a):
        row = next(ln for ln in summary.body.splitlines() if f"{daemon.sb.repo}#{n} " in ln)
        assert "yes, at" in row and "merges at the next tick" in row, row
    (switched,) = daemon.actions("mode.switched")
    assert (switched["from"], switched["to"]) == ("shadow", "enforce")
    assert {p["pr"] for p in switched["prs"]} == {f"{daemon.sb.repo}#{n}" for n in (b, a)}
    assert daemon.issue_for(b, "review").title.startswith("[B] auto-approved")

    daemon.advance(minutes=5)
    second = daemon.tick()
    assert sorted(second.merged) == sorted(f"{daemon.sb.repo}#{n}" for n in (b, a))
    assert len(daemon.issues("mode-switch")) == 1  # reported once


def test_until_the_switch_is_reported_nothing_merges(daemon: Harness) -> None:
    """A targeted tick before the first full enforce tick merges nothing; a summary that cannot
    be posted (GitHub refuses) holds every merge and is tried again at the next tick."""
    b, a = _shadow_week(daemon)
    daemon.configure(mode="enforce")
    daemon.advance(minutes=5)
    ticker = daemon.start()
    targeted = ticker.targeted_tick([daemon.sb.repo], daemon.sb.now())
    assert targeted is not None and targeted.merged == []
    daemon.sb.faults("POST", r"^/repos/acme/capdaemon-bot/issues$", status=403, count=20)
    refused = daemon.tick()
    assert refused.merged == [] and any("mode switch summary" in e for e in refused.errors)
    assert daemon.issues("mode-switch") == [] and daemon.actions("mode.switched") == []
    daemon.sb.clear_faults()
    daemon.advance(minutes=5)
    assert daemon.tick().merged == []
    assert len(daemon.issues("mode-switch")) == 1
    daemon.advance(minutes=5)
    assert len(daemon.tick().merged) == 2
    assert daemon.pull(b).merged and daemon.pull(a).merged


def test_a_state_from_before_the_mode_was_recorded_still_reports_the_switch(
    daemon: Harness,
) -> None:
    """bot-state written before safety.json kept the mode: an open PR approved in shadow is
    enough to treat the first enforce tick as the switch (fail closed)."""
    b, a = _shadow_week(daemon)
    daemon.stop()
    path = daemon.state_dir / "safety.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data.pop("mode") == "shadow"
    path.write_text(json.dumps(data), encoding="utf-8")
    daemon.configure(mode="enforce")
    daemon.advance(minutes=5)
    assert daemon.tick().merged == []
    (summary,) = daemon.issues("mode-switch")
    assert f"{daemon.sb.repo}#{b} " in summary.body and f"{daemon.sb.repo}#{a} " in summary.body

"""Reaction times (event → action, per kind) measured in sandbox ticks: in tick_metrics.json,
in the digest an owner reads, and one clear error when the stored samples are malformed."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from capdaemon.cli import main as cli

from .conftest import SafetyHarness

pytestmark = pytest.mark.slow

AFTER = "2026-05-25T04:00:00Z"  # an hour after T0: the digest period in progress holds the ticks
WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}


def _metrics(safe: SafetyHarness) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((safe.state_dir / "tick_metrics.json").read_text("utf-8"))
    return data


def _digest(safe: SafetyHarness, capsys: pytest.CaptureFixture[str]) -> str:
    safe.stop()
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir), "--now", AFTER]
    capsys.readouterr()
    assert cli(["digest", "--print", *args]) == 0
    text = capsys.readouterr().out.replace("\\", "")  # Markdown escapes aside
    return text[text.index("# capdaemon digest") :]


def test_a_merge_and_a_vote_are_measured_from_their_events(
    safe: SafetyHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """An A PR opened 30 s before the tick: L1.C3 and the merge 30 s after the opening. A D PR
    whose `/approve A` came 15 s before the next tick: counted and merged 15 s after the vote.
    tick_metrics.json and the digest show those figures (p50/p95/max per kind)."""
    safe.configure()
    safe.open_pr({"README.md": "# widgets (typo fixed)\n"}, title="typo")
    d_pr = safe.open_pr(WORKFLOW, title="workflow")
    safe.advance(seconds=30)
    took = safe.tick().seconds + 0.1  # an action late in a tick is that much later
    first = _metrics(safe)["reaction_seconds_24h"]
    assert 30 <= first["check_published"]["p50"] <= 30 + took and first["check_published"]["n"] == 2
    assert first["merge_done"]["n"] == 1 and 30 <= first["merge_done"]["max"] <= 30 + took
    safe.advance(seconds=60)
    safe.ballot(d_pr, "alice").create_comment("/approve A")
    safe.advance(seconds=15)
    report = safe.tick()
    assert report.merged == [f"{safe.sb.repo}#{d_pr}"]
    late = report.seconds + 0.1
    day = _metrics(safe)["reaction_seconds_24h"]
    assert day["ballot_counted"]["n"] == 1 and 15 <= day["ballot_counted"]["max"] <= 15 + late
    merges = sorted(s for _, s in _metrics(safe)["reaction_samples"]["merge_done"])
    assert len(merges) == 2 and 15 <= merges[0] <= 15 + late and 30 <= merges[1] <= 30 + took
    text = _digest(safe, capsys)
    section = text[text.index("## Reaction times") :]
    found = re.search(r"- merge done: p50 (\d+) s, p95 (\d+) s, max (\d+) s \(2 actions\)", section)
    assert found is not None, section
    # whole seconds of the figures kept to a tenth
    assert abs(int(found[1]) - merges[0]) < 1 and abs(int(found[3]) - merges[1]) < 1
    counted = f"p50 {day['ballot_counted']['p50']:.0f} s"
    assert f"- vote counted: {counted}, p95" in section and "(1 action)" in section
    assert re.search(r"- L1.C3 published: p50 3\d s, p95 3\d s, max 3\d s \(2 actions\)", section)


def test_a_one_tap_thumbs_up_is_measured_from_the_reaction(safe: SafetyHarness) -> None:
    """bob's 👍 on a one-tap 20 s before the tick: vote counted and merge done both 20 s."""
    safe.configure()
    safe.task("t-2", level=2)
    number = safe.open_pr(
        {"examples/old.py": "print('v2')\n"},
        title="task work",
        trailers="Agent-Session: claude-code/claude-opus-4/sess-00000001\nTask-Id: t-2",
    )
    safe.tick()
    tap = next(i for i in safe.issues("one-tap") if f"#{number}@" in i.body)
    safe.gh("bob").get_repo(safe.sb.bot_repo).get_issue(tap.number).create_reaction("+1")
    safe.advance(seconds=20)
    late = safe.tick().seconds + 0.1
    assert safe.pull(number).merged
    samples = _metrics(safe)["reaction_samples"]
    assert [20 <= s <= 20 + late for _, s in samples["ballot_counted"]] == [True]
    assert [20 <= s <= 20 + late for _, s in samples["merge_done"]] == [True]


def test_malformed_samples_are_one_digest_error_and_a_tick_starts_them_again(
    safe: SafetyHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hand-edited sample list: the digest names the file and field once; the next tick
    keeps its own figures instead of failing."""
    safe.configure()
    safe.tick()
    path = safe.state_dir / "tick_metrics.json"
    data = json.loads(path.read_text("utf-8"))
    data["reaction_samples"] = {"merge_done": [["soon", 3]]}
    path.write_text(json.dumps(data), "utf-8")
    text = _digest(safe, capsys)
    assert "tick_metrics.json: reaction_samples.merge_done[0]: not [epoch seconds" in text
    assert "No action measured in this period." in text
    safe.open_pr({"README.md": "# widgets (typo fixed)\n"}, title="typo")
    safe.advance(seconds=5)
    late = safe.tick().seconds + 0.1
    assert [5 <= s <= 5 + late for _, s in _metrics(safe)["reaction_samples"]["merge_done"]] == [
        True
    ]


def test_an_unreadable_vote_time_is_not_measured_and_does_not_stop_the_merge(
    safe: SafetyHarness,
) -> None:
    """A one-tap approved while a required check runs; its recorded vote time is then garbled:
    the check passes, the PR merges, and the merge is timed from the other causes only."""
    safe.configure()
    safe.task("t-2", level=2)
    number = safe.open_pr(
        {"examples/old.py": "print('v2')\n"},
        title="task work",
        trailers="Agent-Session: claude-code/claude-opus-4/sess-00000001\nTask-Id: t-2",
    )
    safe.tick()
    required = {"required_status_checks": {"strict": False, "contexts": ["ci/test"]}}
    safe.sb.set_protection(safe.sb.repo, "main", required)
    tap = next(i for i in safe.issues("one-tap") if f"#{number}@" in i.body)
    safe.gh("bob").get_repo(safe.sb.bot_repo).get_issue(tap.number).create_reaction("+1")
    safe.tick()
    assert not safe.pull(number).merged  # approved, waiting for ci/test
    safe.stop()
    path = safe.state_dir / "safety.json"
    data = json.loads(path.read_text("utf-8"))
    data["one_tap"][f"{safe.sb.repo}#{number}"]["voted_at"] = "yesterday-ish"
    path.write_text(json.dumps(data), "utf-8")
    safe.ci(safe.pull(number).head.sha, "success", "ci/test")
    safe.advance(seconds=40)
    report = safe.tick()
    assert report.errors == [] and safe.pull(number).merged
    assert len(_metrics(safe)["reaction_samples"]["merge_done"]) == 1

"""The Trends page's reaction times: the figures the ticks measured, per kind, and a malformed
sample list shown as an escaped error instead of a number."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from capdaemon.dashboard.readmodel import build
from capdaemon.dashboard.site import render

from .conftest import XSS_SCRIPT, DashState
from .pagecheck import Tags

pytestmark = pytest.mark.slow


def _rows(page: str) -> dict[str, list[str]]:
    table = page[page.index('<table id="reactions">') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr><td>(.*?)</td></tr>", table, re.S)
    return {cells[0]: cells[1:] for cells in (r.split("</td><td>") for r in rows)}


def _actions(ds: DashState) -> list[dict[str, object]]:
    lines = (ds.state_dir / "actions.jsonl").read_text("utf-8").splitlines()
    return [json.loads(x) for x in lines]


def test_trends_show_each_kind_measured_by_the_ticks(dash_state: DashState) -> None:
    """Two merges and one counted vote in the scenario's ticks: the table counts exactly those,
    with the p50/p95/max tick_metrics.json holds, to the tenth of a second."""
    model = build(dash_state.state_dir, dash_state.config(), dash_state.now)
    rows = _rows(render(model, "trends.html").body)
    acts = _actions(dash_state)
    merges = [a for a in acts if a.get("action") == "merge" and a.get("status") == "done"]
    votes = [a for a in acts if a.get("action") == "vote_counted"]
    assert rows["merge done"][0] == str(len(merges)) == "2"
    assert rows["vote counted"][0] == str(len(votes)) == "1"
    assert rows["L1.C3 published"][0] == "4"  # the four PRs' first heads
    summary = json.loads((dash_state.state_dir / "tick_metrics.json").read_text("utf-8"))
    vote = summary["reaction_seconds_24h"]["ballot_counted"]
    assert rows["vote counted"][1:] == [f"{vote[k]:.1f} s" for k in ("p50", "p95", "max")]


def test_malformed_samples_are_an_escaped_error_on_the_page(
    dash_state: DashState, tmp_path: Path
) -> None:
    """A sample list with a hostile kind: the page names the file and the field, escaped."""
    ds = dash_state.copy(tmp_path / "copy")
    path = ds.state_dir / "tick_metrics.json"
    data = json.loads(path.read_text("utf-8"))
    data["reaction_samples"] = {XSS_SCRIPT: []}
    path.write_text(json.dumps(data), "utf-8")
    page = render(build(ds.state_dir, ds.config(), ds.now), "trends.html").body
    assert '<p id="reaction-summary" class="bad">tick_metrics.json: reaction_samples.' in page
    assert XSS_SCRIPT not in page and "&lt;script&gt;" in page
    assert not Tags(page).scripts or all("__xss" not in s for s in Tags(page).scripts)

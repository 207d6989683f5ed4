"""The overview's "Ballots waiting for an owner" names the PR of every waiting one-tap."""

from __future__ import annotations

import json
import re
from pathlib import Path

from capdaemon.dashboard.readmodel import build
from capdaemon.dashboard.site import render
from capdaemon.filenames import SAFETY_FILE
from capdaemon.state import atomic_write_json

from .conftest import XSS_SCRIPT, DashState


def _pending_rows(page: str) -> list[str]:
    table = page.split('id="pending"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr>(.*?)</tr>", table, flags=re.DOTALL)[1:]  # after the header


def test_a_waiting_one_tap_row_shows_its_pr_title(dash_state: DashState, tmp_path: Path) -> None:
    """Two one-taps waiting, as the daemon records them in safety.json: each row of the
    table names its PR's title (escaped), as the ballot rows do; the one-tap rows had an
    empty title cell."""
    state = dash_state.copy(tmp_path / "s")
    path = state.state_dir / SAFETY_FILE
    safety = json.loads(path.read_text(encoding="utf-8"))
    for i, name in enumerate(("scope", "script")):
        safety.setdefault("one_tap", {})[f"acme/widgets#{state.prs[name]}"] = {
            "head_sha": "f" * 40,
            "issue": 90 + i,
            "opened_at": f"2026-05-25T03:00:0{i}Z",
            "state": "pending",
            "reason": "waiting for an owner 👍",
            "by": None,
        }
    atomic_write_json(path, safety)
    model = build(state.state_dir, state.config(), state.now)
    taps = {b.ref: b.title for b in model.pending if b.kind == "one-tap"}
    assert taps == {
        f"acme/widgets#{state.prs['scope']}": "Tune the cron",
        f"acme/widgets#{state.prs['script']}": XSS_SCRIPT,
    }
    rows = [r for r in _pending_rows(render(model, "index.html").body) if "one-tap" in r]
    assert len(rows) == 2
    assert any("Tune the cron" in r for r in rows), rows
    assert any("&lt;script&gt;" in r and "<script>" not in r for r in rows), rows

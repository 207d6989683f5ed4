"""The safety net's readers of actions.jsonl refuse a malformed complete line, naming file and
line, and never move a cursor past it or rewrite the log (they used to skip it silently)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from capdaemon.audit import AuditCorruptError, AuditLog, log_paths
from capdaemon.channels.notify import Outbox
from capdaemon.daemon.safety.burnin import _check_against_log
from capdaemon.decide.burnin import BurnInState
from capdaemon.stores.safety_state import new_actions

NOW = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)


def _log(state: Path, *records: dict[str, object]) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    log = AuditLog(log_paths(state)[1])
    for rec in records:
        log.append(dict(rec), now=NOW)
    return log.path


def _cut(path: Path, lineno: int) -> bytes:
    """Cut line `lineno` (1-based) short, keeping its newline; the file's new bytes."""
    lines = path.read_bytes().split(b"\n")
    lines[lineno - 1] = lines[lineno - 1][:30]
    path.write_bytes(b"\n".join(lines))
    return path.read_bytes()


def test_new_actions_refuses_a_malformed_line_after_its_cursor(tmp_path: Path) -> None:
    """The step-7 / burn-in / notification reader: a bad line after the cursor is an error
    naming it; the cursor the caller holds is not advanced, so the line is read once repaired."""
    path = _log(tmp_path, *({"action": "merge", "pr": f"acme/w#{i}"} for i in range(3)))
    first, cursor = new_actions(tmp_path, {"seq": 0, "offset": 0})
    assert [r["pr"] for r in first] == ["acme/w#0", "acme/w#1", "acme/w#2"]
    _log(tmp_path, {"action": "merge", "pr": "acme/w#3"}, {"action": "merge", "pr": "acme/w#4"})
    cut = _cut(path, 4)
    with pytest.raises(AuditCorruptError, match=rf"^{re.escape(str(path))}:4: not JSON"):
        new_actions(tmp_path, cursor)
    assert path.read_bytes() == cut


def test_notifications_keep_their_cursor_before_a_malformed_line(tmp_path: Path) -> None:
    """`Outbox.pull_actions` (the daemon and finish-task): refused, and notifications.json is
    left byte for byte (the cursor used to move past the bad line, losing its notice)."""
    path = _log(tmp_path, {"action": "merge", "pr": "acme/w#1"})
    box = Outbox(tmp_path)
    assert box.pull_actions(tmp_path, ["json://x"], NOW) == 0  # the first call sets the cursor
    _log(tmp_path, {"action": "merge", "pr": "acme/w#2"}, {"action": "merge", "pr": "acme/w#3"})
    _cut(path, 2)
    kept = box.path.read_bytes()
    with pytest.raises(AuditCorruptError, match=r"actions\.jsonl:2: not JSON"):
        box.pull_actions(tmp_path, ["json://x"], NOW)
    assert box.path.read_bytes() == kept


def test_burn_in_clocks_are_not_accepted_against_a_cut_promotion(tmp_path: Path) -> None:
    """Attack: reset safety.json (no clocks) and cut the `burn_in.promoted` line short. The
    cross-check refuses the line, naming it (it used to skip it and accept the reset clocks)."""
    path = _log(
        tmp_path,
        {"action": "merge", "pr": "acme/w#1"},
        {"action": "burn_in.promoted", "agent": "agent-7"},
    )
    cut = _cut(path, 2)
    with pytest.raises(AuditCorruptError, match=rf"^{re.escape(str(path))}:2: not JSON"):
        _check_against_log(tmp_path, BurnInState())
    assert path.read_bytes() == cut

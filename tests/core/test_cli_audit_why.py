"""`capdaemon audit verify` exit codes and `capdaemon why` stories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from capdaemon.audit import AuditLog, log_paths
from capdaemon.cli import main

T0 = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)
PR = "acme/widgets#12"


@pytest.fixture(autouse=True)
def _no_env_dirs(monkeypatch):
    """Keep the caller's CAPDAEMON_* environment out of these tests."""
    monkeypatch.delenv("CAPDAEMON_STATE", raising=False)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A state dir whose logs tell one PR's story: classified D, ballot, votes, merge."""
    sdir = tmp_path / "bot-state"
    sdir.mkdir()
    clog, alog = (AuditLog(p) for p in log_paths(sdir))
    clog.append(
        {
            "pr": PR,
            "head_sha": "abcdef1234567890",
            "quadrant": "D",
            "reasoning": ".github/workflows/ci.yml modified (CI is always D)",
            "rules_fired": [
                {"rule": "path_classifier_default", "result": "vote", "vote": "D"},
                {"rule": "empty_pr", "result": "abstain"},
            ],
            "files": [],
        },
        now=T0,
    )
    alog.append({"action": "ballot_opened", "pr": PR, "issue": 40}, now=T0 + timedelta(minutes=1))
    alog.append(
        {"action": "vote_ignored", "pr": PR, "who": "mallory", "reason": "not an owner"},
        now=T0 + timedelta(minutes=5),
    )
    alog.append(
        {"action": "vote_counted", "pr": PR, "who": "alice", "vote": "approve A"},
        now=T0 + timedelta(minutes=6),
    )
    alog.append(
        {"action": "merge", "pr": PR, "sha": "abcdef1234567890", "method": "squash"},
        now=T0 + timedelta(minutes=7),
    )
    alog.append({"action": "merge", "pr": "acme/widgets#13"}, now=T0 + timedelta(minutes=8))
    return sdir


def test_verify_whole_logs_exit_0(capsys, state):
    """Both logs whole → exit 0 and one ok line per log."""
    assert main(["audit", "verify", "--state", str(state)]) == 0
    out = capsys.readouterr().out
    assert "classifier_audit.jsonl: ok, 1 entries" in out
    assert "actions.jsonl: ok, 5 entries" in out


def test_verify_tampered_log_exit_1_with_line(capsys, state):
    """An edited entry → exit 1 and `path:line: reason` for the first bad line."""
    path = state / "actions.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace("mallory", "alice")
    path.write_text("".join(lines))
    assert main(["audit", "verify", "--state", str(state)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:2: hash does not match" in out


def test_verify_truncated_tail_exit_1(capsys, state):
    """Whole last lines cut off → exit 1 (the .head pointer remembers)."""
    path = state / "classifier_audit.jsonl"
    path.write_text("")
    assert main(["audit", "verify", "--state", str(state)]) == 1
    assert "tail truncated" in capsys.readouterr().out


def test_verify_uses_env_state(capsys, state, monkeypatch):
    """$CAPDAEMON_STATE picks the state dir when --state is not given."""
    monkeypatch.setenv("CAPDAEMON_STATE", str(state))
    assert main(["audit", "verify"]) == 0


def test_verify_missing_state_dir_exit_2(capsys, tmp_path):
    """A state dir that does not exist is a usage error (exit 2), not a clean bill."""
    assert main(["audit", "verify", "--state", str(tmp_path / "nope")]) == 2


def test_why_tells_the_story_in_order(capsys, state):
    """`why` prints the classification then every action of that PR, oldest first."""
    assert main(["why", PR, "--state", str(state)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{PR}: 5 record(s)")
    assert "classified D at abcdef1234" in out
    assert "CI is always D" in out
    assert "rules that voted: path_classifier_default=D" in out
    assert "empty_pr" not in out  # abstentions are not votes
    order = ["classified D", "ballot opened", "vote ignored", "vote counted", "merge"]
    positions = [out.index(word) for word in order]
    assert positions == sorted(positions)
    assert "who: mallory; reason: not an owner" in out
    assert "acme/widgets#13" not in out


def test_why_unknown_pr_exit_1(capsys, state):
    """A PR the logs know nothing of → exit 1 with a one-line message."""
    assert main(["why", "acme/widgets#999", "--state", str(state)]) == 1
    assert "nothing is known of acme/widgets#999" in capsys.readouterr().err


@pytest.mark.parametrize("arg", ["acme/widgets", "widgets#3", "acme/widgets#x", "#3"])
def test_why_malformed_argument_exit_2(capsys, state, arg):
    """Anything but OWNER/REPO#N is exit 2."""
    assert main(["why", arg, "--state", str(state)]) == 2

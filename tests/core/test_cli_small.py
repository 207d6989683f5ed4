"""Small CLI behaviours operators meet first: a missing state directory is an error (not an
empty listing), help texts that say what a command takes, aligned tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from capdaemon.cli import main as cli


@pytest.mark.parametrize(
    "argv",
    [["tasks"], ["escalations"], ["escalations", "--all"], ["why", "acme/widgets#1"]],
)
def test_missing_or_wrong_state_directory_is_exit_2(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--state /nonexistent` or a file: exit 2 and one line naming it (it used to print
    "no dispatched tasks" / "nothing is known" and exit 0 / 1)."""
    afile = tmp_path / "file"
    afile.write_text("x")
    for state, why in ((tmp_path / "nope", "does not exist"), (afile, "is not a directory")):
        assert cli([*argv, "--state", str(state)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        [line] = captured.err.strip().splitlines()
        assert str(state) in line and why in line
    assert not (tmp_path / "nope").exists()


def test_escalations_all_on_an_empty_directory_says_no_escalations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--all lists resolved records too, so "no open escalations" would be wrong."""
    assert cli(["escalations", "--all", "--state", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "no escalations"
    assert cli(["escalations", "--state", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "no open escalations"


def test_help_texts_name_what_commands_take(capsys: pytest.CaptureFixture[str]) -> None:
    """`sandbox --help` shows serve and its options; `tick --help` does not call --once the
    only mode; `init` and `doctor` are listed."""
    assert cli(["sandbox", "serve", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--root" in out and "--port" in out and "argv" not in out
    assert cli(["tick", "--help"]) == 0
    assert "the only mode" not in capsys.readouterr().out
    assert cli([]) == 2
    usage = capsys.readouterr().out
    assert "  init " in usage and "  doctor " in usage


def test_agents_table_columns_line_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every row's columns start where the header's do, whatever the agent id's length."""
    import json

    state = tmp_path / "state"
    state.mkdir()
    agents = {
        "claude-code/claude-opus-4-with-a-much-longer-model-name-than-forty": {
            "first_seen": "2026-05-20T01:02:03.456789+00:00",
            "clock_start": "2026-05-20T01:02:03.456789+00:00",
            "rejections": 12,
            "status": "hard_block",
            "promoted_at": "2026-05-24T00:00:00+00:00",
        },
        "codex/x": {
            "first_seen": "2026-05-21T00:00:00+00:00",
            "clock_start": "2026-05-21T00:00:00+00:00",
            "rejections": 0,
            "status": "burn_in",
        },
    }
    (state / "safety.json").write_text(json.dumps({"burn_in": agents}))
    code = cli(["agents", "--state", str(state), "--now", "2026-05-25T00:00:00Z"])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, captured.err
    header, *rows = out.splitlines()
    assert len(rows) == 2
    starts = [header.index(h) for h in ("registry", "status", "first seen")]
    for row in rows:
        for start in starts:
            assert row[start - 2 : start] == "  " and row[start] != " ", (row, start)


def test_an_unanticipated_failure_is_one_line_unless_debugging(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state folder where a log file should be: one line naming it, exit 1, no traceback;
    CAPDAEMON_DEBUG=1 lets the exception (and so its traceback) through."""
    (tmp_path / "classifier_audit.jsonl").mkdir()
    argv = ["why", "acme/widgets#1", "--state", str(tmp_path)]
    monkeypatch.delenv("CAPDAEMON_DEBUG", raising=False)
    assert cli(argv) == 1
    err = capsys.readouterr().err
    [line] = err.strip().splitlines()
    assert "classifier_audit.jsonl" in line and "Traceback" not in err
    monkeypatch.setenv("CAPDAEMON_DEBUG", "1")
    with pytest.raises(IsADirectoryError):
        cli(argv)


def test_output_into_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """`capdaemon breaker status | head -1`: the reader is gone before the output is written
    (here: a pipe whose read end is already closed, so every write fails). No
    BrokenPipeError message on stderr, exit 141 as for SIGPIPE; a readable pipe still
    gets the whole status."""
    repo = Path(__file__).resolve().parents[2]
    argv = [sys.executable, "-m", "capdaemon.cli", "breaker", "status"]
    argv += ["--state", str(tmp_path / "state"), "--config", str(repo / "config")]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(argv, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert proc.stderr == "" and proc.returncode == 141, proc.stderr
    ok = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.startswith("breaker: closed"), ok.stderr

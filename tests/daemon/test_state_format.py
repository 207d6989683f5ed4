"""bot-state/format.json: an unnumbered (older) directory is stamped with a message, a newer
format is refused in one line by the daemon and every command that opens the state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.stateformat import STATE_FORMAT, StateFormatError, check_format, read_format

from .conftest import Harness
from .test_process import _capdaemon

FORMAT = "format.json"


def _dirs(daemon: Harness) -> list[str]:
    return ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]


@pytest.mark.slow
def test_an_unnumbered_state_directory_is_stamped_format_1_with_a_message(
    daemon: Harness,
) -> None:
    """A bot-state/ written before formats were numbered (no format.json) is read as format 1:
    the daemon stamps it and logs what it did; its records are read as before."""
    n = daemon.open_pr({"README.md": "# widgets (older state)\n"})
    daemon.tick()
    daemon.stop()
    (daemon.state_dir / FORMAT).unlink()  # as an older capdaemon left it
    prs_before = json.loads((daemon.state_dir / "prs.json").read_text())
    proc = _capdaemon("tick", "--once", *_dirs(daemon), "--log-format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((daemon.state_dir / FORMAT).read_text()) == {"format": STATE_FORMAT}
    events = [json.loads(x) for x in proc.stderr.splitlines() if x.startswith("{")]
    stamped = [e for e in events if e["event"] == "state.format_stamped"]
    assert len(stamped) == 1 and "no format.json" in stamped[0]["detail"]
    assert f"acme/widgets#{n}" in prs_before["prs"]
    proc = _capdaemon("tick", "--once", *_dirs(daemon), "--log-format", "json")
    assert proc.returncode == 0 and "state.format_stamped" not in proc.stderr  # once only


@pytest.mark.slow
def test_a_newer_format_is_refused_in_one_line_by_the_daemon_and_commands(
    daemon: Harness, tmp_path: Path
) -> None:
    """format.json from a newer capdaemon: `tick`, `run` and the commands that read state each
    exit 3 with one line naming the file and both formats; nothing in the directory changes."""
    daemon.open_pr({"README.md": "# widgets (newer state)\n"})
    daemon.tick()
    daemon.stop()
    newer = STATE_FORMAT + 1
    (daemon.state_dir / FORMAT).write_text(json.dumps({"format": newer}))
    before = {p.name: p.read_bytes() for p in daemon.state_dir.iterdir() if p.is_file()}
    state = ["--state", str(daemon.state_dir)]
    commands = [
        ["tick", "--once", *_dirs(daemon), "--log-format", "console"],
        ["run", "--tick-seconds", "1", *_dirs(daemon), "--log-format", "console"],
        ["why", "acme/widgets#1", *state],
        ["tasks", *state],
        ["escalations", *state],
        ["digest", "--config", str(daemon.config_dir), *state],
        ["dashboard", "--config", str(daemon.config_dir), *state, "--out", str(tmp_path / "o")],
        ["breaker", "status", "--config", str(daemon.config_dir), *state],
        ["scope-guard", "--task", "t-1", *state, "README.md"],
    ]
    for cmd in commands:
        proc = _capdaemon(*cmd)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 3, (cmd, proc.stderr)
        assert len(lines) == 1, (cmd, proc.stderr)
        assert str(daemon.state_dir / FORMAT) in lines[0]
        assert f"state format {newer}" in lines[0] and f"format {STATE_FORMAT}" in lines[0]
    after = {p.name: p.read_bytes() for p in daemon.state_dir.iterdir() if p.is_file()}
    assert after == before
    assert not (tmp_path / "o").exists()


def test_a_corrupt_format_file_is_refused_naming_it(tmp_path: Path) -> None:
    """format.json that is not {"format": N} stops every reader, named, and is kept."""
    for text in ("{", '{"format": "1"}', '{"format": 0}', "[1]", '{"format": true}'):
        (tmp_path / FORMAT).write_text(text)
        with pytest.raises(StateFormatError, match=str(tmp_path / FORMAT)):
            check_format(tmp_path)
        assert (tmp_path / FORMAT).read_text() == text


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.sampled_from(["format", "x"]), inner),
        max_leaves=5,
    )
)
def test_read_format_returns_the_number_or_refuses_naming_the_file(value: object) -> None:
    """Whatever JSON format.json holds, read_format gives its whole `format` >= 1 or refuses
    with StateFormatError naming the file: never another exception, never a guess."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / FORMAT
        path.write_text(json.dumps(value))
        fmt = value.get("format") if isinstance(value, dict) else None
        valid = isinstance(fmt, int) and not isinstance(fmt, bool) and fmt >= 1
        try:
            got = read_format(Path(d))
        except StateFormatError as exc:
            assert not valid and str(path) in str(exc)
        else:
            assert valid and got == fmt


@pytest.mark.slow
def test_doctor_reports_the_state_format(daemon: Harness) -> None:
    """doctor --offline names the format: ok for format 1, one FAIL line naming the file and
    both formats for a newer one (the other checks still run)."""
    daemon.tick()
    daemon.stop()
    proc = _capdaemon("doctor", "--offline", *_dirs(daemon))
    [line] = [ln for ln in proc.stdout.splitlines() if " state format " in ln]
    assert line.startswith("ok") and "format 1" in line
    (daemon.state_dir / FORMAT).write_text(json.dumps({"format": STATE_FORMAT + 1}))
    proc = _capdaemon("doctor", "--offline", *_dirs(daemon))
    [line] = [ln for ln in proc.stdout.splitlines() if " state format " in ln]
    assert line.startswith("FAIL") and str(daemon.state_dir / FORMAT) in line
    assert f"state format {STATE_FORMAT + 1}" in line and proc.returncode == 1
    assert proc.stdout.splitlines()[-1].startswith("doctor: 1 failed")

"""`capdaemon digest` as an operator meets it right after a first run: the period in progress,
merge times in the digest's zone, one line per recurring warning, and --print writes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from capdaemon.cli import main as cli

from .conftest import SafetyHarness

AFTER = "2026-05-25T04:00:00Z"  # 13:00 in Seoul, an hour after the tick at T0 (12:00 KST)


def _files(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_print_shows_the_period_in_progress_and_writes_nothing(
    safe: SafetyHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """After 09:00 the default is the day being collected (it used to say "No PR was
    classified"); merge times are local, to the minute; no file or lock file appears."""
    safe.configure()
    safe.open_pr({"README.md": "# widgets (typo fixed)\n"})
    safe.tick()
    safe.stop()
    before = _files(safe.state_dir)
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir), "--now", AFTER]
    assert cli(["digest", "--print", *args]) == 0
    text = capsys.readouterr().out
    text = text[text.index("# capdaemon digest") :]  # (the tick's own log lines come first)
    assert "# capdaemon digest — 2026-05-26 (Asia/Seoul)" in text
    assert "No PR was classified" not in text
    assert "at 2026-05-25 12:00" in text and "03:00:00" not in text
    assert _files(safe.state_dir) == before


def test_writing_a_period_that_has_not_ended_is_refused(
    safe: SafetyHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --print, a day whose period is still running (or in the future) is not written."""
    safe.configure()
    safe.tick()
    safe.stop()
    before = _files(safe.state_dir)
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir), "--now", AFTER]
    for date in ("2026-05-26", "2030-01-01"):
        assert cli(["digest", "--date", date, *args]) == 2
        err = capsys.readouterr().err
        assert "has not come yet" in err and len(err.strip().splitlines()) == 1
    assert _files(safe.state_dir) == before
    assert cli(["digest", *args]) == 0  # the default when writing: the last period that ended
    assert capsys.readouterr().out.strip().endswith("digests/2026-05-25.md")


def test_a_warning_repeated_by_every_start_is_one_attention_line(
    safe: SafetyHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """agent-1 can write to the decision repo; each daemon start warns again. The digest shows
    it once, with how often it was seen."""
    safe.configure()
    safe.open_pr({"README.md": "# widgets (typo fixed)\n"})
    for _ in range(3):
        safe.tick()
        safe.stop()  # a restart checks the decision repo's writers again
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir), "--now", AFTER]
    assert cli(["digest", "--print", *args]) == 0
    text = capsys.readouterr().out
    text = text[text.index("# capdaemon digest") :]
    attention = text.split("## Attention (P1)")[1].split("##")[0]
    lines = [ln for ln in attention.splitlines() if ln.startswith("- ") and "decision repo" in ln]
    assert len(lines) == 1, attention
    assert "agent-1 (write)" in lines[0] and re.search(r"\(×[23]\)", lines[0]), lines[0]


def test_a_malformed_journal_line_is_refused_naming_file_and_line(
    safe: SafetyHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """A complete line of prs.journal that is not JSON: the digest refuses in one line naming
    the journal and the line (it never reports a PR's older state as current); nothing changes."""
    safe.configure()
    safe.open_pr({"README.md": "# widgets (typo fixed)\n"})
    safe.tick()
    safe.stop()
    journal = safe.state_dir / "prs.journal"
    good = '{"ref": "acme/widgets#9", "record": {"repo": "acme/widgets", "number": 9}}\n'
    journal.write_text(good + '{"ref": "acme/widg\n', encoding="utf-8")
    before = _files(safe.state_dir)
    raw = journal.read_bytes()
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir), "--now", AFTER]
    assert cli(["digest", "--print", *args]) == 3  # corrupt state, as for `run` and `tick`
    err = capsys.readouterr().err
    assert f"{journal}:2: not JSON" in err and len(err.strip().splitlines()) == 1, err
    assert journal.read_bytes() == raw and _files(safe.state_dir) == before


def test_post_puts_the_digest_in_the_decision_repo_once(
    safe: SafetyHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--post` writes the day's digest and posts it as an issue in the decision repo; posting
    the same day again updates that issue, it never opens a second one."""
    safe.configure()
    safe.open_pr({"README.md": "# widgets (typo fixed)\n"})
    safe.tick()
    safe.stop()
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir), "--now", AFTER]
    for _ in range(2):
        assert cli(["digest", "--post", "--date", "2026-05-25", *args]) == 0
    posted = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("posted: ")]
    (issue,) = safe.issues("digest")
    assert posted == [f"posted: {safe.sb.bot_repo}#{issue.number}"] * 2
    assert issue.title == "capdaemon digest 2026-05-25"
    assert "# capdaemon digest — 2026-05-25" in issue.body
    assert (safe.state_dir / "digests" / "2026-05-25.md").is_file()

"""An unprotected supervised repo is visible where owners look: an issue, the digest, --check."""

from __future__ import annotations

from capdaemon.cli import main as cli

from .conftest import SafetyHarness


def _protection_issues(safe: SafetyHarness, state: str = "all") -> list[object]:
    return safe.issues("protection", state=state)


def test_unprotected_repo_gets_one_open_issue_until_protected(safe: SafetyHarness) -> None:
    """No protection: one open `decision:incident` issue naming the fix, not one per tick; it
    closes once `capdaemon protect` ran; the breaker counts nothing for a never-protected repo."""
    safe.configure()
    safe.tick()
    safe.tick()
    issues = _protection_issues(safe)
    assert len(issues) == 1 and issues[0].state == "open"  # type: ignore[attr-defined]
    body = issues[0].body  # type: ignore[attr-defined]
    assert "decision:incident" in [lb.name for lb in issues[0].labels]  # type: ignore[attr-defined]
    assert f"capdaemon protect {safe.sb.repo}" in body.replace("\\", "")
    assert safe.breaker().incidents == ()
    args = ["--config", str(safe.config_dir), "--state", str(safe.state_dir)]
    assert cli(["protect", safe.sb.repo, *args]) == 0
    safe.tick()
    issues = _protection_issues(safe)
    assert len(issues) == 1 and issues[0].state == "closed"  # type: ignore[attr-defined]
    safe.tick()
    assert len(_protection_issues(safe)) == 1


def test_digest_attention_names_the_unprotected_repo_and_the_fix(
    safe: SafetyHarness, capsys: object
) -> None:
    """The digest's attention section lists the unprotected repo with the command to run."""
    safe.configure()
    safe.tick()
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir)]
    now = ["--now", "2026-05-26T00:00:00Z"]
    assert cli(["digest", "--date", "2026-05-26", "--print", *now, *args]) == 0
    text = capsys.readouterr().out  # type: ignore[attr-defined]
    attention = text.split("## Attention (P1)", 1)[1].split("\n## ", 1)[0]
    assert f"{safe.sb.repo}:main" in attention
    assert f"capdaemon protect {safe.sb.repo}" in attention.replace("\\", "")


def test_protect_check_says_what_to_run(safe: SafetyHarness, capsys: object) -> None:
    """`capdaemon protect --check` on an unprotected repo prints the command that fixes it."""
    safe.configure()
    args = ["--config", str(safe.config_dir), "--state", str(safe.state_dir)]
    assert cli(["protect", safe.sb.repo, *args, "--check"]) == 1
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert f"to fix, run: capdaemon protect {safe.sb.repo}" in out

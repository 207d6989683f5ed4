"""Branch protection (SPEC 6.5): `capdaemon protect`, and drift reported once as an incident."""

from __future__ import annotations

import pytest

from capdaemon.cli import main as cli
from capdaemon.daemon.safety.protection import protection_problems

from .conftest import SafetyHarness, decision_writer_warnings


def test_protect_then_drift_is_one_incident(safe: SafetyHarness) -> None:
    """protect sets L1.C3 (pinned to the App), PRs and no force pushes; removing it later is
    one protection_drift incident, not one per tick; restoring it is audited."""
    safe.configure()
    args = ["--config", str(safe.config_dir), "--state", str(safe.state_dir)]
    safe.state_dir.mkdir(parents=True, exist_ok=True)
    assert cli(["protect", safe.sb.repo, *args, "--check"]) == 1
    assert cli(["protect", safe.sb.repo, *args]) == 0
    assert cli(["protect", safe.sb.repo, *args, "--check"]) == 0
    assert safe.actions("protect")[0]["changed"] is True
    safe.tick()
    safe.step7()
    assert not safe.actions("protection.drift")
    branch = safe.gh(safe.sb.owner).get_repo(safe.sb.repo).get_branch("main")
    branch.remove_protection()
    safe.tick()
    safe.step7()
    safe.tick()
    drift = safe.actions("protection.drift")
    assert len(drift) == 1 and "not protected" in drift[0]["problems"][0]
    assert [i.kind.value for i in safe.breaker().incidents] == ["protection_drift"]
    assert cli(["protect", safe.sb.repo, *args]) == 0
    safe.step7()
    assert len(safe.actions("protection.restored")) == 1


def test_never_protected_repo_is_reported_once_without_an_incident(safe: SafetyHarness) -> None:
    """A repo never protected is audited once as protection.missing (not counted by the breaker)."""
    safe.configure()
    safe.tick()
    safe.step7()
    safe.tick()
    assert len(safe.actions("protection.missing")) == 1
    assert safe.breaker().incidents == ()


def test_protection_problems_table() -> None:
    """Unpinned check, force pushes and missing PR reviews are each named."""
    ok = {
        "required_status_checks": {"checks": [{"context": "L1.C3", "app_id": 7}]},
        "allow_force_pushes": {"enabled": False},
        "required_pull_request_reviews": {},
    }
    assert protection_problems(ok, 7) == []
    assert protection_problems(ok, 8) == ["L1.C3 is not pinned to App 8"]
    forced = {**ok, "allow_force_pushes": {"enabled": True}}
    assert protection_problems(forced, 7) == ["force pushes are allowed"]
    no_pr = {k: v for k, v in ok.items() if k != "required_pull_request_reviews"}
    assert protection_problems(no_pr, None) == ["pull requests are not required"]
    assert protection_problems(None, 7) == ["the branch is not protected"]


def test_protect_check_warns_about_agents_with_write_on_the_decision_repo(
    safe: SafetyHarness, capsys: object
) -> None:
    """`protect --check` warns (stderr) about non-owner writers of the decision repo: PR
    authors known to bot-state and --agent logins; owners and read-only users are not named."""
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir)]
    safe.configure()
    safe.open_pr({"README.md": "# widgets (by agent-1)\n"})
    safe.tick()
    safe.stop()
    cli(["protect", safe.sb.repo, *args, "--check", "--agent", "agent-2", "--agent", "mallory"])
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    warned = decision_writer_warnings(err)
    assert warned["agent-1"][:2] == ("write", "acme/capdaemon-bot")
    assert warned["agent-2"][0] == "write"
    assert "mallory" not in err and "alice" not in err and "bob" not in err


def test_protect_reviewers_and_the_doctor_note(
    safe: SafetyHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new protection requires no human review (capdaemon is the reviewer of record);
    `--reviewers N` requires N, a plain `protect` keeps it, `--reviewers 0` removes it, and
    `doctor` warns while a human review is required (it blocks the bot's own merges)."""
    safe.configure()
    args = ["--config", str(safe.config_dir), "--state", str(safe.state_dir)]
    safe.state_dir.mkdir(parents=True, exist_ok=True)

    def count() -> int:
        branch = safe.gh(safe.sb.owner).get_repo(safe.sb.repo).get_branch("main")
        reviews = branch.get_protection().required_pull_request_reviews
        return int(reviews.required_approving_review_count or 0)

    def doctor_lines() -> list[str]:
        capsys.readouterr()
        cli(["doctor", *args])
        return [ln for ln in capsys.readouterr().out.splitlines() if "reviewers " in ln]

    assert cli(["protect", safe.sb.repo, *args]) == 0 and count() == 0
    assert doctor_lines() == []
    assert cli(["protect", safe.sb.repo, *args, "--reviewers", "2", "--check"]) == 1
    assert cli(["protect", safe.sb.repo, *args, "--reviewers", "2"]) == 0 and count() == 2
    assert "2 approving review(s)" in capsys.readouterr().out
    assert cli(["protect", safe.sb.repo, *args, "--reviewers", "2", "--check"]) == 0
    assert cli(["protect", safe.sb.repo, *args]) == 0 and count() == 2  # kept, not lowered
    [note] = doctor_lines()
    assert note.startswith("warn") and "reviewer of record" in note and "--reviewers 0" in note
    assert cli(["protect", safe.sb.repo, *args, "--reviewers", "0"]) == 0 and count() == 0
    assert doctor_lines() == []
    assert cli(["protect", safe.sb.repo, *args, "--reviewers", "9"]) == 2
    assert "0 to 6" in capsys.readouterr().err

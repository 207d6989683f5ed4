"""Rulesets and the collaborator list as GitHub serves them: protect --check, merge gate, R5."""

from __future__ import annotations

from typing import Any

from capdaemon.cli import main as cli

from .conftest import SafetyHarness, decision_writer_warnings


def _ruleset(app_id: int | None, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    check: dict[str, Any] = {"context": "L1.C3"}
    if app_id is not None:
        check["integration_id"] = app_id
    return {
        "name": "main",
        "target": "branch",
        "enforcement": "active",
        "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
        "rules": [
            {"type": "non_fast_forward"},
            {"type": "pull_request", "parameters": {"required_approving_review_count": 0}},
            {
                "type": "required_status_checks",
                "parameters": {
                    "strict_required_status_checks_policy": False,
                    "required_status_checks": [check, *(extra or [])],
                },
            },
        ],
    }


def test_a_ruleset_protected_branch_is_protected(safe: SafetyHarness, capsys: Any) -> None:
    """protect --check reads rulesets: a branch protected only by a ruleset is as required
    (it used to read classic protection only and call it unprotected); the daemon agrees."""
    safe.configure()
    args = ["--config", str(safe.config_dir), "--state", str(safe.state_dir)]
    safe.state_dir.mkdir(parents=True, exist_ok=True)
    safe.sb.add_ruleset(safe.sb.repo, _ruleset(safe.sb.app_id))
    assert cli(["protect", safe.sb.repo, *args, "--check"]) == 0
    assert "protected as required" in capsys.readouterr().out
    assert cli(["protect", safe.sb.repo, *args]) == 0  # nothing to write
    assert safe.actions("protect")[0]["changed"] is False
    safe.tick()
    safe.step7()
    assert not safe.actions("protection.missing") and not safe.actions("protection.drift")


def test_an_unpinned_ruleset_check_is_still_reported(safe: SafetyHarness, capsys: Any) -> None:
    """A ruleset check without the App's integration_id is named (anyone could satisfy it)."""
    safe.configure()
    args = ["--config", str(safe.config_dir), "--state", str(safe.state_dir)]
    safe.sb.add_ruleset(safe.sb.repo, _ruleset(None))
    assert cli(["protect", safe.sb.repo, *args, "--check"]) == 1
    assert f"L1.C3 is not pinned to App {safe.sb.app_id}" in capsys.readouterr().out


def test_the_merge_gate_waits_for_a_check_a_ruleset_requires(safe: SafetyHarness) -> None:
    """A check required only by a ruleset (ci/build) holds the merge until it is green."""
    safe.configure()
    safe.sb.add_ruleset(safe.sb.repo, _ruleset(safe.sb.app_id, [{"context": "ci/build"}]))
    n = safe.open_pr({"README.md": "# widgets, ruleset ci\n"})
    safe.tick()
    assert not safe.pull(n).merged
    assert not [m for m in safe.actions("merge", n) if m["status"] == "attempted"]
    safe.ci(safe.pull(n).head.sha, "success", "ci/build")
    safe.tick()
    assert safe.pull(n).merged


def test_protect_check_finds_decision_repo_writers_from_the_collaborator_list(
    safe: SafetyHarness, capsys: Any
) -> None:
    """With no PR authors known and no --agent, the collaborator list still names both write
    agents (the old sandbox had no list: nobody was found)."""
    safe.configure()
    args = ["--config", str(safe.config_dir), "--state", str(safe.state_dir)]
    cli(["protect", safe.sb.repo, *args, "--check"])
    err = capsys.readouterr().err
    warned = decision_writer_warnings(err)
    for agent in ("agent-1", "agent-2"):
        assert warned[agent] == ("write", "acme/capdaemon-bot", "collaborators"), err
    assert "alice" not in err and "bob" not in err and "mallory" not in err

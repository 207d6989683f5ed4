"""The engine: max-vote composition, disabled rules, fail-closed errors, reasoning, findings."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from capdaemon.classify import classify
from capdaemon.classify import engine as engine_mod
from capdaemon.classify.rules import BuiltinRule
from capdaemon.config import AgentEntry, AgentRegistry, SkillsConfig
from capdaemon.model import FileChange, FileStatus, RuleResult, Severity

from .classify_builders import NOW, added, base_config, commit, modified, removed, snapshot

SAFE = added("examples/demo.py")
AGENT = "Fix\n\nAgent-Session: rogue/model-x/sess-12345678"


def test_now_must_be_aware() -> None:
    """A naive `now` is refused."""
    with pytest.raises(ValueError):
        classify(snapshot(SAFE), base_config(), now=datetime(2026, 1, 1))


def test_every_rule_is_recorded_in_order() -> None:
    """Every built-in's outcome is recorded, path rule first."""
    v = classify(snapshot(SAFE), base_config(), now=NOW)
    assert [o.rule for o in v.rules] == [r.name for r in engine_mod.BUILTIN_RULES]


@pytest.mark.parametrize(
    ("disabled", "still_runs"),
    [
        pytest.param("published_verdict", True, id="verdict-rule-votes-D-cannot-be-disabled"),
        pytest.param("auto_revert_marker", False, id="auto-revert-can-be-disabled"),
        pytest.param("empty_pr", True, id="D-rule-cannot-be-disabled"),
        pytest.param("path_classifier_default", True, id="path-rule-cannot-be-disabled"),
    ],
)
def test_disabled_rules(disabled: str, still_runs: bool) -> None:
    """skills.disabled_rules turns off only built-ins that never vote D."""
    cfg = base_config(skills=SkillsConfig(disabled_rules=(disabled,)))
    v = classify(snapshot(), cfg, now=NOW)
    o = next(o for o in v.rules if o.rule == disabled)
    assert (o.reason != "disabled in skills.yml") is still_runs
    assert v.quadrant.value == "D"  # the empty PR stays D whatever is disabled


def test_crashing_builtin_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A built-in rule that raises is an error outcome and makes the PR D."""

    def broken(snapshot, config, ctx):  # type: ignore[no-untyped-def]
        raise KeyError("oops")

    rules = (*engine_mod.BUILTIN_RULES, BuiltinRule("broken", broken, True))
    monkeypatch.setattr(engine_mod, "BUILTIN_RULES", rules)
    v = classify(snapshot(SAFE), base_config(), now=NOW)
    assert v.quadrant.value == "D"
    assert v.rules[-1].result is RuleResult.ERROR
    assert "rule broken failed" in v.reasoning


def test_file_that_breaks_the_classifier_is_D() -> None:
    """An unexpected failure inside per-file classification yields D for that file."""
    weird = FileChange(path=None, status=FileStatus.MODIFIED, patch="")  # type: ignore[arg-type]
    v = classify(snapshot(weird), base_config(), now=NOW)
    assert v.quadrant.value == "D"


def test_reasoning_lists_deciding_files_first_and_is_bounded() -> None:
    """With 3,000 files the reasoning names the deciding file first and summarises the rest."""
    files = [added(f"examples/f{i}.py") for i in range(2999)]
    files.append(modified("src/multiagent_protocol/core.py", ["a = 1"], ["a = 2"]))
    v = classify(snapshot(*files), base_config(), now=NOW)
    assert v.quadrant.value == "B"
    assert v.reasoning.startswith("src/multiagent_protocol/core.py modified (critical")
    assert "and 2995 more files (A: 2995)" in v.reasoning
    assert len(v.reasoning) <= engine_mod.MAX_REASONING_CHARS
    assert len(v.files) == 3000


def test_reasoning_names_a_deciding_rule() -> None:
    """When a rule decides (empty PR), the reasoning says so."""
    v = classify(snapshot(), base_config(), now=NOW)
    assert v.reasoning.startswith("empty_pr: the PR changes no files: push a commit")


def test_reasoning_for_mixed_quadrants() -> None:
    """Mixed C and B files: B is listed before C."""
    v = classify(
        snapshot(removed("examples/old.py"), modified("app/x.py", ["a"], ["b"])),
        base_config(),
        now=NOW,
    )
    assert v.reasoning.index("app/x.py") < v.reasoning.index("examples/old.py")


REGISTRY = AgentRegistry(agents=(AgentEntry(tool="claude-code", models=("opus",)),))

FINDINGS = [
    pytest.param("Fix\n\nAgent-Session: claude-code/opus/sess-12345678", None, {}, [],
                 id="registered"),
    pytest.param("Fix\n\nHuman.", None, {}, [], id="human"),
    pytest.param(AGENT, None, {}, ["P2"], id="unregistered-default-P2"),
    pytest.param(AGENT, Severity.P0, {}, ["P0"], id="skills-override-P0"),
    pytest.param(AGENT, None, {"rogue/model-x": Severity.P0}, ["P0"], id="burn-in-floor-P0"),
    pytest.param(AGENT, Severity.P1, {"rogue/model-x": Severity.P2}, ["P1"],
                 id="floor-never-lowers"),
    pytest.param("Fix\n\nAgent-Session: claude-code/sonnet/sess-12345678", None, {}, ["P2"],
                 id="registered-tool-other-model"),
]  # fmt: skip


@pytest.mark.parametrize(("message", "override", "floors", "expected"), FINDINGS)
def test_agent_registry_validator(
    message: str, override: Severity | None, floors: dict[str, Severity], expected: list[str]
) -> None:
    """Unregistered agents are findings, with the configured severity or the burn-in floor."""
    skills = SkillsConfig(
        severity_overrides=(("validator_agent_registry", override),) if override else ()
    )
    cfg = base_config(registry=REGISTRY, skills=skills)
    v = classify(snapshot(SAFE, commits=[commit(message)]), cfg, now=NOW, agent_severity=floors)
    assert [f.severity.value for f in v.findings] == expected
    for f in v.findings:
        assert f.validator == "validator_agent_registry"
        assert f.subject in message
    assert v.quadrant.value == "A"  # findings are not votes


def test_findings_are_grouped_per_agent() -> None:
    """Several commits of one unregistered agent give one finding that lists them."""
    commits = [commit(AGENT, sha=c * 40) for c in "abcd"]
    v = classify(snapshot(SAFE, commits=commits), base_config(), now=NOW)
    (finding,) = v.findings
    assert "+1 more" in finding.message
    assert finding.to_dict()["subject"] == "rogue/model-x"


def test_verdict_files_keep_input_order_and_normalised_paths() -> None:
    """FileVerdicts follow the PR's file order with normalised paths."""
    v = classify(snapshot(added("./examples/b.py"), SAFE), base_config(), now=NOW)
    assert [f.path for f in v.files] == ["examples/b.py", "examples/demo.py"]


def test_classify_is_deterministic() -> None:
    """The same snapshot and config give the same verdict."""
    snap = snapshot(SAFE, removed("examples/old.py"))
    cfg = base_config()
    assert classify(snap, cfg, now=NOW) == classify(replace(snap), cfg, now=NOW)


def test_repo_policy_error_makes_a_safe_pr_d() -> None:
    """A repo policy the caller could not parse is an error outcome: even a quadrant-A PR is D,
    with the parse error in the reason (never a silent fallback to the central config)."""
    assert classify(snapshot(SAFE), base_config(), now=NOW).quadrant.value == "A"
    v = classify(
        snapshot(SAFE), base_config(), now=NOW, policy_error="acme/w@main:.capdaemon.yml:1: bad"
    )
    assert v.quadrant.value == "D"
    (o,) = [o for o in v.rules if o.rule == engine_mod.REPO_POLICY_RULE]
    assert o.result is RuleResult.ERROR
    assert o.reason == "repo policy invalid, failing closed: acme/w@main:.capdaemon.yml:1: bad"


def test_the_effective_config_decides() -> None:
    """classify() applies the config it is given: the repo policy the caller merged into it
    (here `always_d_globs`) makes a quadrant-A file D."""
    from capdaemon.config import parse_repo_policy

    cfg = base_config()
    policy = parse_repo_policy("always_d_globs: ['examples/**']\n", ".capdaemon.yml")
    effective = cfg.with_repo_policy(policy, snapshot(SAFE).repo)
    assert classify(snapshot(SAFE), cfg, now=NOW).quadrant.value == "A"
    assert classify(snapshot(SAFE), effective, now=NOW).quadrant.value == "D"

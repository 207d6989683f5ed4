"""L4 identity gate and burn-in (SPEC 6.4): clocks, promotion, rejection reset, P0 override."""

from __future__ import annotations

import json

from capdaemon.classify.engine import classify
from capdaemon.cli import main as cli
from capdaemon.config import SkillsConfig
from capdaemon.decide.burnin import BurnInState, agent_severities, observe
from capdaemon.model import Quadrant, Severity
from tests.classify.classify_builders import HEAD_TIME, base_config, commit, modified, snapshot

from .conftest import T0, SafetyHarness

AGENT = "claude-code/claude-opus-4"
CI_CHANGE = {".github/workflows/ci.yml": "name: ci2\n"}  # always D: stays open on its ballot


def _clock(safe: SafetyHarness) -> dict:
    return json.loads((safe.state_dir / "tick_metrics.json").read_text())["l4_burn_in"][AGENT]


def test_promotion_after_60_days_blocks_the_open_pr(safe: SafetyHarness) -> None:
    """A new identity starts a clock; 60 quiet days promote it to hard-block (finding turns P0)."""
    safe.configure()
    number = safe.open_pr(CI_CHANGE)
    safe.tick()
    clock = _clock(safe)
    assert clock["status"] == "burn_in" and clock["first_seen"] == "2026-05-25T03:00:00Z"
    finding = safe.classifications(number)[-1]["findings"][0]
    assert finding["severity"] == "P2" and AGENT in finding["message"]
    safe.advance(days=59, hours=23)
    safe.tick()
    assert _clock(safe)["status"] == "burn_in"
    safe.advance(hours=1)
    safe.tick()
    assert _clock(safe)["status"] == "hard_block"
    assert safe.actions("burn_in.promoted")[0]["agent"] == AGENT
    safe.tick()  # the promoted agent's open PR is republished with a P0 registry finding
    summary = safe.check(number).output.summary
    assert "P0" in summary and AGENT in summary


def test_rejection_resets_the_clock(safe: SafetyHarness, capsys: object) -> None:
    """An owner's rejection of the agent's D PR restarts its clock; `capdaemon agents` shows it."""
    safe.configure()
    number = safe.open_pr(CI_CHANGE)
    safe.tick()
    safe.advance(days=30)
    safe.ballot(number, "alice").create_comment("/reject")
    safe.tick()
    safe.tick()
    clock = _clock(safe)
    assert clock["rejections"] == 1 and clock["clock_start"] == "2026-06-24T03:00:00Z"
    safe.advance(days=31)
    safe.tick()
    assert _clock(safe)["status"] == "burn_in"  # 61 days after first sight, 31 after the reset
    assert cli(["agents", "--state", str(safe.state_dir), "--config", str(safe.config_dir),
                "--now", "2026-07-25T03:00:00Z"]) == 0  # fmt: skip
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert AGENT in out and "burn-in" in out and "29.0" in out


def test_p0_override_and_burn_in_severity_feed_the_classifier() -> None:
    """The registry check takes the higher of the configured severity and the burn-in floor."""
    snap = snapshot(
        modified("docs/guide/a.md", ["a"], ["b"]),
        commits=[commit(f"work\n\nAgent-Session: {AGENT}/sess-00000001", committed_at=HEAD_TIME)],
    )
    state, _ = observe(BurnInState(), [AGENT], T0)
    floors = agent_severities(state)
    assert floors == {AGENT: Severity.P2}
    plain = classify(snap, base_config(), now=T0, agent_severity=floors)
    assert [f.severity for f in plain.findings] == [Severity.P2]
    p0 = base_config(
        skills=SkillsConfig(severity_overrides=(("validator_agent_registry", Severity.P0),))
    )
    assert [f.severity for f in classify(snap, p0, now=T0, agent_severity=floors).findings] == [
        Severity.P0
    ]


def test_adding_an_agent_to_the_registry_is_d() -> None:
    """A PR that edits agent_registry.yml is quadrant D (self_paths)."""
    snap = snapshot(
        modified(
            "config/agent_registry.yml",
            ["agents: []"],
            ["agents:", "  - tool: evil-bot", "    trust: trusted"],
        )
    )
    assert classify(snap, base_config(), now=T0).quadrant is Quadrant.D

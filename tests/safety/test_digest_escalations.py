"""The digest's scope-violation list names where a violation without a PR was caught."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

import pytest

from capdaemon.capability.taskfile import parse_task
from capdaemon.cli import main as cli
from capdaemon.commands._common import load_config_and_rules
from capdaemon.daemon.service import digest_facts
from capdaemon.decide.digest import digest_period, render_digest
from capdaemon.stores.registry import dispatch

from .conftest import SafetyHarness


def test_a_scope_guard_escalation_is_listed_by_task_and_escalation(
    safe: SafetyHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    """scope-guard refuses a path outside the task (no PR involved): the digest line names
    the task, the layer and the escalation record, never an empty `- : task …` reference."""
    safe.configure()
    now = datetime.now(UTC)
    cap = parse_task(
        {
            "task_id": "task-2360",
            "title": "finish script",
            "level": 1,
            "allowed_resources": {"paths": ["scripts/finish-task.sh"], "ttl_hours": 48},
        }
    )
    dispatch(safe.state_dir, cap, now, source="tests")
    argv = ["scope-guard", "--task", "task-2360", "--state", str(safe.state_dir)]
    assert cli([*argv, "cron_settings.json"]) == 1
    capsys.readouterr()
    config, _rules = load_config_and_rules(argparse.Namespace(config=str(safe.config_dir)))
    tz, at = config.schedule.timezone, config.schedule.digest_time
    day = next(
        d
        for d in (now.date() + timedelta(days=k) for k in (-1, 0, 1, 2))
        if digest_period(d, at, tz)[0] <= now < digest_period(d, at, tz)[1]
    )
    facts = digest_facts.gather(config, safe.state_dir, day, now)
    (item,) = facts.scope_violations
    text = render_digest(facts, now + timedelta(minutes=1))
    assert "- : " not in text
    line = next(ln for ln in text.splitlines() if "task-2360" in ln)
    assert "1 violation(s)" in line and "scope-guard" in line and "escalation" in line
    assert item.detail in line.replace("\\", "")

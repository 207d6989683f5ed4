"""daemon.tasks.evaluate with a bound capability: the PR's author and head branch are checked."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from capdaemon.capability.taskfile import parse_task
from capdaemon.daemon.polling.tasks import evaluate
from capdaemon.model import FileChange, FileStatus, PRSnapshot
from capdaemon.stores.capabilities import load_snapshot
from capdaemon.stores.registry import dispatch

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _pr(author: str, head_ref: str, path: str = "src/a.py") -> PRSnapshot:
    return PRSnapshot(
        repo="acme/widgets",
        number=5,
        base_ref="main",
        base_sha="b" * 40,
        head_sha="h" * 40,
        author=author,
        head_ref=head_ref,
        files=(FileChange(path=path, status=FileStatus.MODIFIED),),
    )


@pytest.fixture
def load(tmp_path: Path):
    state = tmp_path / "state"
    res = {"paths": ["src/**"], "agents": ["agent-2"], "branches": ["agent-2/**"]}
    dispatch(state, parse_task({"task_id": "task-7", "allowed_resources": res}), T0)
    dispatch(
        state, parse_task({"task_id": "task-open", "allowed_resources": {"paths": ["**"]}}), T0
    )
    return lambda task: load_snapshot(state, task)


def test_bound_agent_on_bound_branch_passes(load) -> None:
    v = evaluate(_pr("agent-2", "agent-2/task-7"), ("task-7",), load, require=True, now=T0)
    assert v.violations == () and v.blocking == ()


def test_other_agent_is_blocked_with_a_clear_reason(load) -> None:
    v = evaluate(_pr("agent-1", "agent-2/task-7"), ("task-7",), load, require=True, now=T0)
    assert v.blocking == ("task-7: task task-7 is bound to agents [agent-2]; PR author agent-1",)
    assert v.to_dict()["violations"][0]["kind"] == "binding"


def test_unknown_author_and_branch_fail_closed(load) -> None:
    v = evaluate(_pr("", ""), ("task-7",), load, require=True, now=T0)
    assert len(v.blocking) == 2
    assert "PR author unknown" in v.blocking[0]
    assert "PR head branch unknown" in v.blocking[1]


def test_binding_and_path_violations_are_both_reported(load) -> None:
    v = evaluate(
        _pr("agent-1", "agent-1/x", "cron_settings.json"), ("task-7",), load, require=True, now=T0
    )
    kinds = [x.kind.value for x in v.violations]
    assert kinds == ["binding", "binding", "not_allowed"]


def test_not_enforced_off_the_hard_wall(load) -> None:
    """Without require_capability the violation is recorded (audit) but does not block."""
    v = evaluate(_pr("agent-1", "agent-1/x"), ("task-7",), load, require=False, now=T0)
    assert v.violations and v.blocking == ()


def test_unbound_task_is_open_to_any_author(load) -> None:
    v = evaluate(_pr("mallory", "whatever"), ("task-open",), load, require=True, now=T0)
    assert v.violations == ()

"""Capability attacks on a hard-wall repo (require_capability: true), end to end (SPEC 5.5)."""

from __future__ import annotations

import json
import os

import pytest

from capdaemon.capability.taskfile import parse_task
from capdaemon.stores.capabilities import snapshot_path
from capdaemon.stores.registry import dispatch
from tests.daemon.conftest import T0

pytestmark = pytest.mark.slow

SESSION = "Agent-Session: claude-code/claude-opus-4/sess-00000009"
CRON = {"cron_settings.json": '{"jobs": ["rm -rf /"]}\n'}


def _dispatch(h, task_id: str, paths: list[str], ttl: int = 48) -> None:
    cap = parse_task(
        {
            "task_id": task_id,
            "level": 1,
            "allowed_resources": {"paths": paths, "merge_policy": "auto", "ttl_hours": ttl},
        }
    )
    dispatch(h.state_dir, cap, T0, source="attack-tests")


def _blocked(h, n: int) -> None:
    assert not h.pull(n).merged, n
    assert h.check(n).conclusion == "failure", n


def test_capability_tricks_are_blocked(daemon) -> None:
    """Branch names task-narrow but the trailer names task-wide (ambiguous); a traversal task id
    in the trailer and in the branch; a Task-Id in the subject paragraph (not a trailer) → each
    PR fails L1.C3 and none merges; the honest in-scope PR merges."""
    daemon.configure(
        repo={"require_capability": True, "task_branch_pattern": r"^task/(?P<task_id>[^/]+)$"}
    )
    _dispatch(daemon, "task-narrow", ["scripts/finish-task.sh"])
    _dispatch(daemon, "task-wide", ["**"])
    cross = daemon.open_pr(
        CRON, trailers=f"{SESSION}\nTask-Id: task-wide", branch="task/task-narrow"
    )
    traversal = daemon.open_pr(CRON, trailers=f"{SESSION}\nTask-Id: ../capabilities/task-wide")
    dotted = daemon.open_pr(CRON, trailers=f"{SESSION}\nTask-Id: ..")
    branch_trav = daemon.open_pr(CRON, trailers=SESSION, branch="task/task-wide;x")
    in_subject = daemon.open_pr(CRON, title="Task-Id: task-wide", trailers="Refs: nothing")
    honest = daemon.open_pr(
        {"scripts/finish-task.sh": "#!/bin/sh\nexit 3\n"},
        trailers=SESSION,
        branch="task/task-narrow-ok",
    )
    _dispatch(daemon, "task-narrow-ok", ["scripts/finish-task.sh"])
    daemon.tick()
    daemon.tick()
    for n in (cross, traversal, dotted, branch_trav, in_subject):
        _blocked(daemon, n)
    assert daemon.pull(honest).merged
    assert "several tasks" in daemon.check(cross).output.summary


def test_tampered_snapshot_is_refused(daemon) -> None:
    """The agent widens its capability snapshot on disk (paths: ["**"]): the hash no longer matches
    the dispatch record → tampered, the PR fails L1.C3."""
    daemon.configure(repo={"require_capability": True})
    _dispatch(daemon, "task-7", ["scripts/finish-task.sh"])
    path = snapshot_path(daemon.state_dir, "task-7")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["capability"]["paths"] = ["**"]
    os.chmod(path, 0o644)
    path.write_text(json.dumps(data), encoding="utf-8")
    n = daemon.open_pr(CRON, trailers=f"{SESSION}\nTask-Id: task-7")
    daemon.tick()
    _blocked(daemon, n)
    assert "tamper" in daemon.check(n).output.summary


def test_tampered_snapshot_with_recomputed_self_hash_is_refused(daemon) -> None:
    """Widened snapshot whose own sha256 is recomputed: still refused (the audit record pins it)."""
    from capdaemon.capability.snapshot import content_hash

    daemon.configure(repo={"require_capability": True})
    _dispatch(daemon, "task-8", ["scripts/finish-task.sh"])
    path = snapshot_path(daemon.state_dir, "task-8")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["capability"]["paths"] = ["**"]
    data.pop("sha256", None)
    data["sha256"] = content_hash(data)
    os.chmod(path, 0o644)
    path.write_text(json.dumps(data), encoding="utf-8")
    n = daemon.open_pr(CRON, trailers=f"{SESSION}\nTask-Id: task-8")
    daemon.tick()
    _blocked(daemon, n)


def test_expired_capability_blocks_even_an_in_scope_change(daemon) -> None:
    """A capability past its TTL (1 h) no longer allows anything on the hard wall."""
    from datetime import timedelta

    daemon.configure(repo={"require_capability": True})
    _dispatch(daemon, "task-9", ["scripts/finish-task.sh"], ttl=1)
    daemon.sb.set_clock(T0 + timedelta(hours=2))
    n = daemon.open_pr({"scripts/finish-task.sh": "#!/bin/sh\nexit 4\n"},
                       trailers=f"{SESSION}\nTask-Id: task-9")  # fmt: skip
    daemon.tick()
    _blocked(daemon, n)
    assert "expired" in daemon.check(n).output.summary


def test_capability_bound_to_another_agent_cannot_be_borrowed(daemon) -> None:
    """task-7 is bound to agent-2 (agents: [agent-2], branches: [agent-2/**]). agent-1 names it
    in a Task-Id trailer to borrow its scope: L1.C3 fails with the binding reason and a
    decision:scope-violation issue opens; agent-2 off its branches is blocked too; agent-2's
    identical in-scope PR on agent-2/... merges."""
    daemon.configure(repo={"require_capability": True})
    cap = parse_task(
        {
            "task_id": "task-7",
            "level": 1,
            "allowed_resources": {
                "paths": ["scripts/finish-task.sh"],
                "merge_policy": "auto",
                "agents": ["Agent-2"],  # logins compare case-insensitively
                "branches": ["agent-2/**"],
            },
        }
    )
    dispatch(daemon.state_dir, cap, T0, source="attack-tests")
    change = {"scripts/finish-task.sh": "#!/bin/sh\nexit 7\n"}
    trailers = f"{SESSION}\nTask-Id: task-7"
    borrowed = daemon.open_pr(change, user="agent-1", trailers=trailers, branch="agent-2/t7")
    other = {"scripts/finish-task.sh": "#!/bin/sh\nexit 8\n"}  # not `own`'s commit sha
    off_branch = daemon.open_pr(other, user="agent-2", trailers=trailers, branch="hotfix/t7")
    own = daemon.open_pr(change, user="agent-2", trailers=trailers)  # branch agent-2/change-N
    daemon.tick()
    daemon.tick()
    _blocked(daemon, borrowed)
    reason = "task task-7 is bound to agents [agent-2]; PR author agent-1"
    summary = daemon.check(borrowed).output.summary
    assert reason.replace("[", "\\[").replace("]", "\\]") in summary  # Markdown-escaped
    (entry,) = daemon.actions("scope_violation", pr=borrowed)
    assert [(v["kind"], v["reason"]) for v in entry["violations"]] == [("binding", reason)]
    scope = daemon.issue_for(borrowed, "scope-violation")
    assert any(lb.name == "decision:scope-violation" for lb in scope.labels)
    assert "PR author agent-1" in scope.body
    _blocked(daemon, off_branch)
    (entry,) = daemon.actions("scope_violation", pr=off_branch)
    assert [v["reason"] for v in entry["violations"]] == [
        "task task-7 is bound to branches [agent-2/**]; PR head branch hotfix/t7"
    ]
    assert daemon.pull(own).merged
    assert daemon.actions("scope_violation", pr=own) == []

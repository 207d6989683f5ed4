"""A PR that links no task is at least `tiered` (SPEC 4.1), made stricter by its author's and
branch's active tasks (the strictest applies, never laxer than `tiered`), `manual` when the
store is unreadable."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.capability.model import Capability, CapabilityError, CapabilitySnapshot
from capdaemon.config import TierConfig
from capdaemon.daemon.polling.tasks import bind_policy
from capdaemon.decide.tiers import (
    MERGE_POLICIES,
    Binding,
    Requirement,
    bind_unlinked,
    strictest,
    tier_for,
)
from capdaemon.model import FileChange, FileStatus, PRSnapshot
from capdaemon.stores.capabilities import load_snapshot, snapshot_ids, snapshot_path
from capdaemon.stores.registry import dispatch

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ONE_FILE = (FileChange("examples/m.py", FileStatus.MODIFIED, additions=1),)


def pr(author: str = "agent-1", branch: str = "agent-1/change-1") -> PRSnapshot:
    return PRSnapshot("acme/widgets", 7, "main", "b" * 40, "h" * 40, author, branch, files=ONE_FILE)


def put(state: Path, task_id: str, policy: str, ttl: int = 24, **bound: tuple[str, ...]) -> None:
    cap = Capability(
        task_id,
        paths=("**",),
        merge_policy=policy,
        ttl_hours=ttl,
        agents=bound.get("agents", ()),
        branches=bound.get("branches", ()),
    )
    dispatch(state, cap, T0, source="tests")


def store(state: Path) -> tuple[list[CapabilitySnapshot], str | None]:
    """The store as the tick reads it (capdaemon.daemon.core.context.TickContext.all_caps)."""
    snaps, errors = [], []
    for task_id in snapshot_ids(state):
        try:
            snaps.append(load_snapshot(state, task_id))
        except CapabilityError as exc:
            errors.append(str(exc))
    return snaps, "; ".join(errors) or None


def bound(state: Path, snap: PRSnapshot, own: tuple[str, ...] = (), now: datetime = T0) -> str:
    caps, err = store(state)
    return bind_policy(snap, caps, err, own, lambda t: load_snapshot(state, t), now).policy


@given(st.lists(st.sampled_from(MERGE_POLICIES), max_size=6))
def test_no_binding_makes_an_unlinked_pr_laxer_than_tiered(policies: list[str]) -> None:
    """Whatever active tasks bind it, a PR naming no task is `tiered` or stricter, and the
    strictest of its tasks when that is stricter."""
    got = bind_unlinked([Binding(f"t-{i}", p, "x") for i, p in enumerate(policies)]).policy
    assert MERGE_POLICIES.index(got) >= MERGE_POLICIES.index("tiered")
    assert got == ("manual" if "manual" in policies else "tiered")


@given(st.lists(st.sampled_from(MERGE_POLICIES), max_size=6))
def test_strictest_is_never_looser_than_any_policy(policies: list[str]) -> None:
    """manual > tiered > auto, whatever the order; none → None (the caller says `tiered`)."""
    got = strictest(policies)
    if not policies:
        assert got is None
        return
    assert got in policies
    assert all(MERGE_POLICIES.index(got) >= MERGE_POLICIES.index(p) for p in policies)
    assert strictest(reversed(policies)) == got


def test_bind_unlinked_table() -> None:
    """No binding → tiered; the strictest binding wins and is named, but an `auto` one never
    lowers the floor of `tiered`; unreadable store → manual."""
    assert bind_unlinked([]).policy == "tiered"
    b = bind_unlinked([Binding("t-a", "auto", "x"), Binding("t-m", "manual", "agents include a")])
    assert b.policy == "manual" and b.tasks == ("t-a", "t-m") and "t-m (manual" in b.reason
    only_auto = bind_unlinked([Binding("t-a", "auto", "x")])
    assert only_auto.policy == "tiered" and "at least tiered" in only_auto.reason
    assert only_auto.tasks == ("t-a",) and "t-a (auto" in only_auto.reason
    assert bind_unlinked([Binding("t-x", "bogus", "x")]).policy == "manual"
    bad = bind_unlinked([Binding("t-a", "auto", "x")], "permission denied")
    assert bad.policy == "manual" and "capability store could not be read" in bad.reason


def test_a_manual_task_of_the_author_binds_a_tier1_pr(tmp_path: Path) -> None:
    """The attack: leave `Task-Id` out of a one-file change. The author's bound manual task
    still holds it (the daemon never merges), where today it would merge as tier 1."""
    put(tmp_path, "t-man", "manual", agents=("agent-1",))
    put(tmp_path, "t-auto", "auto", agents=("agent-1",))
    policy = bound(tmp_path, pr())
    assert policy == "manual"
    assert tier_for(None, ONE_FILE, TierConfig(), policy).requirement is Requirement.NEVER


def test_branch_binding_and_other_agents(tmp_path: Path) -> None:
    """`branches` binds by head branch; another agent's manual task binds nobody else; an
    expired task binds nothing; the author's tasks linked in other PRs bind too; an `auto`
    task binds but never below `tiered`."""
    put(tmp_path, "t-other", "manual", agents=("agent-2",))
    assert bound(tmp_path, pr()) == "tiered"
    put(tmp_path, "t-auto", "auto", agents=("agent-1",))
    assert bound(tmp_path, pr()) == "tiered"
    put(tmp_path, "t-br", "manual", branches=("release/**",))
    assert bound(tmp_path, pr(branch="release/1.0")) == "manual"
    assert bound(tmp_path, pr(author="AGENT-1", branch="x")) == "tiered"
    put(tmp_path, "t-old", "manual", ttl=1, agents=("agent-1",))
    assert bound(tmp_path, pr(), now=T0 + timedelta(hours=2)) == "tiered"
    assert bound(tmp_path, pr(), now=T0) == "manual"
    put(tmp_path, "t-unbound", "manual")
    assert bound(tmp_path, pr(), now=T0 + timedelta(hours=2)) == "tiered"
    assert bound(tmp_path, pr(), ("t-unbound",), now=T0 + timedelta(hours=2)) == "manual"
    assert bound(tmp_path, pr(), ("never-dispatched",), now=T0 + timedelta(hours=2)) == "tiered"


def test_a_tampered_snapshot_fails_closed(tmp_path: Path) -> None:
    """A snapshot that does not verify could be the author's manual task: manual, named."""
    put(tmp_path, "t-auto", "auto", agents=("agent-1",))
    put(tmp_path, "t-gone", "auto", agents=("agent-9",))
    path = snapshot_path(tmp_path, "t-gone")
    body = json.loads(path.read_text(encoding="utf-8"))
    body["capability"]["merge_policy"] = "manual"
    path.chmod(0o644)
    path.write_text(json.dumps(body), encoding="utf-8")
    caps, err = store(tmp_path)
    got = bind_policy(pr(), caps, err, (), lambda t: load_snapshot(tmp_path, t), T0)
    assert got.policy == "manual"
    assert "capability store could not be read" in got.reason and "t-gone" in got.reason


def test_an_unreadable_store_folder_fails_closed(tmp_path: Path) -> None:
    """A capabilities "folder" that cannot be listed raises, never reads as "no tasks"."""
    (tmp_path / "capabilities").write_text("not a folder", encoding="utf-8")
    with pytest.raises(OSError):
        snapshot_ids(tmp_path)
    assert snapshot_ids(tmp_path / "missing") == []

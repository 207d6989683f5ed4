"""Binding a capability to who may use it: `allowed_resources.agents` and `.branches`.

Task file validation (errors name the field, the schema agrees), normalisation into the
capability and its snapshot hash, old unbound snapshots, and the pure `check_binding` table.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
import yaml

from capdaemon.capability.model import (
    Capability,
    DispatchConflictError,
    SnapshotError,
    TamperedError,
    TaskFileError,
    ViolationKind,
)
from capdaemon.capability.scope import check_binding
from capdaemon.capability.snapshot import content_hash, guard_capability
from capdaemon.capability.taskfile import parse_task
from capdaemon.stores.capabilities import load_snapshot, snapshot_path
from capdaemon.stores.registry import dispatch, list_tasks

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "schemas" / "task.schema.json").read_text(encoding="utf-8")
)
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def task(**res: object) -> dict:
    """A task file (parsed YAML) for task-7 with `paths: [src/**]` plus `res`."""
    return {"task_id": "task-7", "allowed_resources": {"paths": ["src/**"], **res}}


def cap(agents: tuple[str, ...] = (), branches: tuple[str, ...] = ()) -> Capability:
    return Capability("task-7", paths=("src/**",), agents=agents, branches=branches)


# -- task file ------------------------------------------------------------------------------


def test_binding_normalises() -> None:
    """Logins are lower-cased, de-duplicated and sorted; branch globs sorted and de-duplicated."""
    c = parse_task(
        task(agents=["Agent-2", "agent-2", "ci-bot[bot]"], branches=["b/**", "a/*", "b/**"])
    )
    assert c.agents == ("agent-2", "ci-bot[bot]")
    assert c.branches == ("a/*", "b/**")
    assert c.bound
    res = c.to_dict()["allowed_resources"]
    assert res["agents"] == ["agent-2", "ci-bot[bot]"]
    assert res["branches"] == ["a/*", "b/**"]
    jsonschema.validate(task(agents=["Agent-2", "ci-bot[bot]"], branches=["a/*"]), SCHEMA)


def test_unbound_capability_keeps_its_old_form() -> None:
    """Without the keys nothing changes: no new keys in the canonical form (same hash as before)."""
    c = parse_task(task())
    assert (c.agents, c.branches, c.bound) == ((), (), False)
    assert set(c.to_dict()["allowed_resources"]) == {"paths", "forbidden_paths", "commands"}
    assert Capability.from_dict(c.to_dict()) == c


def test_binding_round_trips_and_counts_in_equality() -> None:
    c = parse_task(task(agents=["agent-2"], branches=["agent-2/**"]))
    assert Capability.from_dict(c.to_dict()) == c
    assert c != parse_task(task(agents=["agent-1"], branches=["agent-2/**"]))
    assert c != parse_task(task(agents=["agent-2"]))


BAD = [
    ("agents not a list", task(agents="agent-2"), "allowed_resources.agents"),
    ("agents empty", task(agents=[]), "allowed_resources.agents"),
    ("agents null", task(agents=None), "allowed_resources.agents"),
    ("agent not a string", task(agents=["ok", 7]), "allowed_resources.agents[1]"),
    ("agent empty", task(agents=[""]), "allowed_resources.agents[0]"),
    ("agent with space", task(agents=["agent 2"]), "allowed_resources.agents[0]"),
    ("agent leading hyphen", task(agents=["-agent"]), "allowed_resources.agents[0]"),
    ("agent too long", task(agents=["a" * 40]), "allowed_resources.agents[0]"),
    ("agent non-ascii", task(agents=["agent-\u212a"]), "allowed_resources.agents[0]"),
    ("agent wildcard", task(agents=["agent-*"]), "allowed_resources.agents[0]"),
    ("branches not a list", task(branches="main"), "allowed_resources.branches"),
    ("branches empty", task(branches=[]), "allowed_resources.branches"),
    ("branch not a string", task(branches=[["x"]]), "allowed_resources.branches[0]"),
    ("branch empty glob", task(branches=[" "]), "allowed_resources.branches[0]"),
    ("branch negated", task(branches=["a/**", "!a/x"]), "allowed_resources.branches[1]"),
    ("branch dot-dot", task(branches=["a/../b"]), "allowed_resources.branches[0]"),
    ("branch bad bracket", task(branches=["a/[b"]), "allowed_resources.branches[0]"),
]
_SCHEMA_CANNOT = {"branch bad bracket"}


@pytest.mark.parametrize(("case", "data", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_binding_names_the_field(case: str, data: dict, field: str) -> None:
    with pytest.raises(TaskFileError) as exc:
        parse_task(data)
    assert exc.value.field == field, case
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("case", "data"),
    [(b[0], b[1]) for b in BAD if b[0] not in _SCHEMA_CANNOT],
    ids=[b[0] for b in BAD if b[0] not in _SCHEMA_CANNOT],
)
def test_schema_rejects_bad_binding(case: str, data: dict) -> None:
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)), case


def test_empty_list_error_says_how_to_unbind() -> None:
    for key in ("agents", "branches"):
        with pytest.raises(TaskFileError, match="omit the key to leave the task unbound"):
            parse_task(task(**{key: []}))


def test_bad_binding_through_the_cli(taskfile, cli, state: Path) -> None:
    """One stderr line naming the field, exit 2 (bad input), nothing written."""
    res = cli("dispatch", taskfile(yaml.safe_dump(task(agents=["bad login"]))), "--state", state)
    lines = res.err.strip().splitlines()
    assert res.code == 2
    assert len(lines) == 1 and "allowed_resources.agents[0]:" in lines[0], res.err
    assert not state.exists()


# -- snapshot -------------------------------------------------------------------------------


def test_binding_is_in_the_snapshot_and_its_hash(state: Path) -> None:
    c = parse_task(task(agents=["Agent-2"], branches=["agent-2/**"]))
    dispatch(state, c, T0)
    snap = load_snapshot(state, "task-7")
    assert snap.capability.agents == ("agent-2",)
    assert snap.capability.branches == ("agent-2/**",)
    body = json.loads(snapshot_path(state, "task-7").read_text(encoding="utf-8"))
    assert body["capability"]["allowed_resources"]["agents"] == ["agent-2"]
    assert body["sha256"] == content_hash(body)
    # scope-guard's stored-regex capability keeps the binding (equal capability)
    assert guard_capability(snap) == snap.capability
    assert guard_capability(snap).agents == ("agent-2",)
    states = {t.task_id: t.to_dict() for t in list_tasks(state, T0)}
    assert states["task-7"]["agents"] == ["agent-2"]
    assert states["task-7"]["branches"] == ["agent-2/**"]


@pytest.mark.parametrize(
    "edit",
    [
        lambda res: res.pop("agents"),
        lambda res: res.__setitem__("agents", ["agent-1", "agent-2"]),
        lambda res: res.__setitem__("branches", ["**"]),
    ],
    ids=["unbind", "add agent", "widen branches"],
)
def test_editing_the_binding_is_tampering(state: Path, edit) -> None:
    """Dropping or widening the binding on disk, even with a recomputed self-hash, is refused."""
    dispatch(state, parse_task(task(agents=["agent-2"], branches=["agent-2/**"])), T0)
    path = snapshot_path(state, "task-7")
    body = json.loads(path.read_text(encoding="utf-8"))
    edit(body["capability"]["allowed_resources"])
    body.pop("sha256")
    body["sha256"] = content_hash(body)
    path.chmod(0o644)
    path.write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(TamperedError):
        load_snapshot(state, "task-7")


def test_old_unbound_snapshot_keeps_working(state: Path) -> None:
    """A snapshot written before binding existed loads unbound, and re-dispatching the same
    (unbound) task file is still a no-op."""
    c = parse_task(task())
    first = dispatch(state, c, T0)
    body = json.loads(snapshot_path(state, "task-7").read_text(encoding="utf-8"))
    assert "agents" not in body["capability"]["allowed_resources"]
    snap = load_snapshot(state, "task-7")
    assert not snap.capability.bound
    assert check_binding(snap.capability, None, None) == []
    again = dispatch(state, parse_task(task()), T0)
    assert again.outcome == "unchanged" and again.snapshot.sha256 == first.snapshot.sha256


def test_binding_a_dispatched_task_needs_a_new_id(state: Path) -> None:
    dispatch(state, parse_task(task()), T0)
    with pytest.raises(DispatchConflictError):
        dispatch(state, parse_task(task(agents=["agent-2"])), T0)


@pytest.mark.parametrize("value", [[], "agent-2", [1], None])
def test_malformed_binding_in_a_snapshot_is_refused(value: object) -> None:
    """A stored binding that is not a non-empty list of strings never silently unbinds."""
    data = cap().to_dict()
    data["allowed_resources"]["agents"] = value
    with pytest.raises(SnapshotError):
        Capability.from_dict(data)


# -- check_binding (pure) -------------------------------------------------------------------

A2 = ("agent-2",)
BR = ("agent-2/**", "/release-7")

# (case, agents, branches, author, head_ref, violations expected)
TABLE = [
    ("unbound, anyone", (), (), "mallory", "anything", 0),
    ("unbound, unknown author and ref", (), (), None, None, 0),
    ("agent listed", A2, (), "agent-2", "x", 0),
    ("agent other case", A2, (), "AGENT-2", "x", 0),
    ("agent not listed", A2, (), "agent-1", "x", 1),
    ("agent unknown (None)", A2, (), None, "x", 1),
    ("agent unknown (empty)", A2, (), "", "x", 1),
    ("agent prefix only", A2, (), "agent-", "x", 1),
    ("agent longer", A2, (), "agent-22", "x", 1),
    ("agent look-alike cyrillic a", A2, (), "\u0430gent-2", "x", 1),
    ("agent kelvin sign", ("k",), (), "\u212a", "x", 1),
    ("agent with whitespace", A2, (), " agent-2", "x", 1),
    ("one of several agents", ("agent-1", "agent-2"), (), "agent-1", "x", 0),
    ("branch under agent folder", (), BR, "anyone", "agent-2/task-7", 0),
    ("branch deep under folder", (), BR, "anyone", "agent-2/a/b", 0),
    ("branch anchored exact", (), BR, "anyone", "release-7", 0),
    ("branch anchored not at depth", (), BR, "anyone", "x/release-7", 1),
    ("branch other folder", (), BR, "anyone", "agent-1/task-7", 1),
    ("branch case differs", (), BR, "anyone", "Agent-2/task-7", 1),
    ("branch look-alike", (), BR, "anyone", "\u0430gent-2/task-7", 1),
    ("branch folder name alone", (), BR, "anyone", "agent-2", 1),
    ("branch unknown (None)", (), BR, "anyone", None, 1),
    ("branch unknown (empty)", (), BR, "anyone", "", 1),
    ("branch climbing", (), BR, "anyone", "agent-2/../agent-1/x", 1),
    ("branch leading slash", (), BR, "anyone", "/release-7", 1),
    ("branch double slash", (), BR, "anyone", "agent-2//x", 1),
    ("branch dot segment", (), BR, "anyone", "agent-2/./x", 1),
    ("branch control char", (), BR, "anyone", "agent-2/x\n", 1),
    ("unanchored glob matches at depth", (), ("task-7",), "a", "agent-1/task-7", 0),
    ("both bound, both fine", A2, BR, "agent-2", "agent-2/t", 0),
    ("both bound, author wrong", A2, BR, "agent-1", "agent-2/t", 1),
    ("both bound, branch wrong", A2, BR, "agent-2", "agent-1/t", 1),
    ("both bound, both wrong", A2, BR, "agent-1", "agent-1/t", 2),
    ("both bound, both unknown", A2, BR, None, None, 2),
]


@pytest.mark.parametrize(
    ("case", "agents", "branches", "author", "ref", "n"), TABLE, ids=[t[0] for t in TABLE]
)
def test_check_binding_table(
    case: str,
    agents: tuple[str, ...],
    branches: tuple[str, ...],
    author: str | None,
    ref: str | None,
    n: int,
) -> None:
    out = check_binding(cap(agents, branches), author, ref)
    assert len(out) == n, (case, out)
    for v in out:
        assert v.kind is ViolationKind.BINDING
        assert v.subject == "task-7"
        assert "\n" not in v.line()


def test_check_binding_reasons() -> None:
    """Reasons say which task, what it is bound to, and what the PR has (or that it is unknown)."""
    (v,) = check_binding(cap(A2), "agent-1", "agent-1/x")
    assert v.reason == "task task-7 is bound to agents [agent-2]; PR author agent-1"
    (v,) = check_binding(cap(A2), None, "x")
    assert v.reason == "task task-7 is bound to agents [agent-2]; PR author unknown"
    (v,) = check_binding(cap((), BR), "a", "agent-1/x")
    assert (
        v.reason
        == "task task-7 is bound to branches [agent-2/**, /release-7]; PR head branch agent-1/x"
    )
    (v,) = check_binding(cap((), BR), "a", "")
    assert v.reason.endswith("PR head branch unknown")
    (v,) = check_binding(cap((), BR), "a", "agent-2/../x")
    assert "not a plain branch name" in v.reason
    assert v.to_dict()["kind"] == "binding"


def test_legacy_capability_binds_nobody() -> None:
    legacy = Capability("old", legacy=True)
    assert check_binding(legacy, None, None) == []

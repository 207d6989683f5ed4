"""Task file validation: good files normalise; each malformed file is one error naming its field."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from capdaemon.capability.model import NoCapabilityError, TaskFileError
from capdaemon.capability.taskfile import parse_task

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "schemas" / "task.schema.json").read_text(encoding="utf-8")
)
GOOD = {
    "task_id": "task-2364",
    "title": "add scope guard",
    "level": 1,
    "allowed_resources": {
        "paths": ["scripts/finish-task.sh", "memory/plans/bot-capability-system/**"],
        "forbidden_paths": ["memory/events/*.cron-*", ".github/**"],
        "commands": ["pytest", "python3 -m py_compile"],
        "merge_policy": "tiered",
        "ttl_hours": 48,
    },
}


def _with(**changes: object) -> dict:
    data = json.loads(json.dumps(GOOD))
    for dotted, value in changes.items():
        keys = dotted.split("__")
        target = data
        for k in keys[:-1]:
            target = target[k]
        if value is _DELETE:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
    return data


_DELETE = object()

# (case name, data, field the error must name)
BAD = [
    ("not a mapping", ["a"], ""),
    ("empty file", None, ""),
    ("missing task_id", _with(task_id=_DELETE), "task_id"),
    ("task id with slash", _with(task_id="a/b"), "task_id"),
    ("task id traversal", _with(task_id="../../etc/x"), "task_id"),
    ("task id dot-dot", _with(task_id="a..b"), "task_id"),
    ("task id leading dot", _with(task_id=".hidden"), "task_id"),
    ("task id not a string", _with(task_id=12), "task_id"),
    ("task id empty", _with(task_id=""), "task_id"),
    ("task id too long", _with(task_id="x" * 129), "task_id"),
    ("unknown top key", _with(owner="me"), "owner"),
    ("title wrong type", _with(title=["x"]), "title"),
    ("level out of range", _with(level=4), "level"),
    ("level negative", _with(level=-1), "level"),
    ("level wrong type", _with(level="1"), "level"),
    ("level boolean", _with(level=True), "level"),
    ("allowed_resources not mapping", _with(allowed_resources=["x"]), "allowed_resources"),
    ("allowed_resources null", _with(allowed_resources=None), "allowed_resources"),
    ("missing paths", _with(allowed_resources__paths=_DELETE), "allowed_resources.paths"),
    ("empty paths", _with(allowed_resources__paths=[]), "allowed_resources.paths"),
    ("paths not a list", _with(allowed_resources__paths="a/**"), "allowed_resources.paths"),
    ("path not a string", _with(allowed_resources__paths=[3]), "allowed_resources.paths[0]"),
    ("empty glob", _with(allowed_resources__paths=["  "]), "allowed_resources.paths[0]"),
    ("negated glob", _with(allowed_resources__paths=["!a"]), "allowed_resources.paths[0]"),
    ("bad bracket glob", _with(allowed_resources__paths=["a/[b"]), "allowed_resources.paths[0]"),
    ("dot-dot glob", _with(allowed_resources__paths=["../x/**"]), "allowed_resources.paths[0]"),
    (
        "bad forbidden glob",
        _with(allowed_resources__forbidden_paths=["ok", "x]"]),
        "allowed_resources.forbidden_paths[1]",
    ),
    (
        "forbidden not a list",
        _with(allowed_resources__forbidden_paths={"a": 1}),
        "allowed_resources.forbidden_paths",
    ),
    ("unknown resource key", _with(allowed_resources__writes=["a"]), "allowed_resources.writes"),
    (
        "commands not a list",
        _with(allowed_resources__commands="pytest"),
        "allowed_resources.commands",
    ),
    ("command empty", _with(allowed_resources__commands=[""]), "allowed_resources.commands[0]"),
    (
        "command with operator",
        _with(allowed_resources__commands=["pytest; rm"]),
        "allowed_resources.commands[0]",
    ),
    (
        "command with substitution",
        _with(allowed_resources__commands=["echo $(id)"]),
        "allowed_resources.commands[0]",
    ),
    (
        "command unbalanced quote",
        _with(allowed_resources__commands=["pytest 'x"]),
        "allowed_resources.commands[0]",
    ),
    (
        "command not string",
        _with(allowed_resources__commands=[["pytest"]]),
        "allowed_resources.commands[0]",
    ),
    (
        "bad merge policy",
        _with(allowed_resources__merge_policy="yolo"),
        "allowed_resources.merge_policy",
    ),
    ("ttl zero", _with(allowed_resources__ttl_hours=0), "allowed_resources.ttl_hours"),
    ("ttl too long", _with(allowed_resources__ttl_hours=721), "allowed_resources.ttl_hours"),
    ("ttl wrong type", _with(allowed_resources__ttl_hours="48"), "allowed_resources.ttl_hours"),
    ("ttl float", _with(allowed_resources__ttl_hours=1.5), "allowed_resources.ttl_hours"),
    (
        "too many globs",
        _with(allowed_resources__paths=[f"d{i}/**" for i in range(1001)]),
        "allowed_resources.paths",
    ),
]


def test_good_task_normalises() -> None:
    """A well-formed task gives a capability with sorted, de-duplicated lists."""
    cap = parse_task(_with(allowed_resources__paths=["b/**", "a", "b/**"]))
    assert cap.task_id == "task-2364"
    assert cap.paths == ("a", "b/**")
    assert cap.forbidden_paths == (".github/**", "memory/events/*.cron-*")
    assert cap.commands == ("pytest", "python3 -m py_compile")
    assert (cap.level, cap.merge_policy, cap.ttl_hours, cap.legacy) == (1, "tiered", 48, False)


def test_defaults_fail_closed() -> None:
    """Unstated level and merge policy default to the cautious values (3, manual)."""
    cap = parse_task({"task_id": "t1", "allowed_resources": {"paths": ["a/**"]}})
    assert (cap.level, cap.merge_policy, cap.ttl_hours, cap.commands) == (3, "manual", 48, ())


def test_order_does_not_change_the_capability() -> None:
    """Two files listing the same globs in another order give equal capabilities."""
    a = parse_task(_with(allowed_resources__paths=["x", "y"]))
    b = parse_task(_with(allowed_resources__paths=["y", "x"]))
    assert a.to_dict() == b.to_dict()


def test_missing_allowed_resources_is_refused() -> None:
    """No allowed_resources → NoCapabilityError naming the field, unless allow_no_scope."""
    data = _with(allowed_resources=_DELETE)
    with pytest.raises(NoCapabilityError) as exc:
        parse_task(data)
    assert exc.value.field == "allowed_resources"
    assert "--allow-no-scope" in str(exc.value)
    legacy = parse_task(data, allow_no_scope=True)
    assert legacy.legacy and legacy.paths == ()


@pytest.mark.parametrize(("case", "data", "field"), BAD, ids=[b[0] for b in BAD])
def test_malformed_task_names_the_field(case: str, data: object, field: str) -> None:
    """Every malformed task file raises TaskFileError whose field names the culprit."""
    with pytest.raises(TaskFileError) as exc:
        parse_task(data)
    assert exc.value.field == field, case
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(("case", "data", "field"), BAD, ids=[b[0] for b in BAD])
def test_malformed_task_cli_one_line_nothing_written(
    case: str, data: object, field: str, taskfile, cli, state: Path
) -> None:
    """Through the CLI a malformed file gives one stderr line naming the field, exit 2, no state."""
    path = taskfile(yaml.safe_dump(data))
    res = cli("dispatch", path, "--state", state)
    assert res.code == 2
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res.err
    assert f"{field}:" in lines[0] if field else str(path) in lines[0]
    assert not state.exists()


def test_yaml_syntax_error_is_one_line(taskfile, cli, state: Path) -> None:
    """Broken YAML is reported with its line number and nothing is written."""
    res = cli("dispatch", taskfile("task_id: [x\n"), "--state", state)
    assert res.code == 2 and "line 2: not valid YAML" in res.err
    assert len(res.err.strip().splitlines()) == 1
    assert not state.exists()


def test_missing_task_file(cli, state: Path, tmp_path: Path) -> None:
    """A task file that does not exist is a clear error, exit 2 (bad input)."""
    res = cli("dispatch", tmp_path / "nope.yml", "--state", state)
    assert res.code == 2 and "no such task file" in res.err


def test_schema_accepts_the_good_task() -> None:
    """The shipped JSON Schema is valid and accepts the SPEC 5.1 example."""
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(GOOD, SCHEMA)


@pytest.mark.parametrize(
    ("case", "data", "field"),
    [
        b
        for b in BAD
        if b[0] not in ("bad bracket glob", "bad forbidden glob", "command unbalanced quote")
    ],
    ids=[
        b[0]
        for b in BAD
        if b[0] not in ("bad bracket glob", "bad forbidden glob", "command unbalanced quote")
    ],
)
def test_schema_rejects_what_dispatch_rejects(case: str, data: object, field: str) -> None:
    """The schema agrees with the validator on every malformed case it can express."""
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)), case

"""The task file's `enforcement` and `network` (for `scope-guard run`): parsing, errors, hashes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from capdaemon.capability.model import Capability, SnapshotError, TaskFileError
from capdaemon.capability.snapshot import build_snapshot
from capdaemon.capability.taskfile import parse_task

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def task(**res: object) -> dict[str, object]:
    return {"task_id": "f-1", "allowed_resources": {"paths": ["src/**"], **res}}


def test_defaults_are_kernel_and_no_network() -> None:
    cap = parse_task(task())
    assert cap.enforcement == "kernel" and cap.network is False


@pytest.mark.parametrize(
    ("res", "enforcement", "network"),
    [
        ({"enforcement": "check-only"}, "check-only", False),
        ({"network": True}, "kernel", True),
        ({"network": [443, 80, 443]}, "kernel", (80, 443)),
    ],
)
def test_fields_parse_and_survive_the_snapshot(
    res: dict[str, object], enforcement: str, network: object
) -> None:
    cap = parse_task(task(**res))
    assert (cap.enforcement, cap.network) == (enforcement, network)
    assert Capability.from_dict(cap.to_dict()) == cap


def test_a_task_without_them_keeps_its_old_hash() -> None:
    """Absent fields are not written: a snapshot's body (and sha256) is what it was before."""
    body = build_snapshot(parse_task(task()), NOW)
    res = body["capability"]["allowed_resources"]
    assert "enforcement" not in res and "network" not in res
    loud = build_snapshot(parse_task(task(network=[443])), NOW)
    assert loud["sha256"] != body["sha256"]


@pytest.mark.parametrize(
    ("res", "field", "text"),
    [
        ({"enforcement": "off"}, "allowed_resources.enforcement", "kernel, landlock-only, check"),
        ({"network": "yes"}, "allowed_resources.network", "true, false or a list"),
        ({"network": []}, "allowed_resources.network", "write false"),
        ({"network": [0]}, "allowed_resources.network[0]", "1-65535"),
        ({"network": [True]}, "allowed_resources.network[0]", "TCP port"),
        ({"network": [70000]}, "allowed_resources.network[0]", "1-65535"),
    ],
)
def test_bad_values_name_the_field(res: dict[str, object], field: str, text: str) -> None:
    with pytest.raises(TaskFileError) as err:
        parse_task(task(**res))
    assert err.value.field == field and text in str(err.value)


@pytest.mark.parametrize("bad", [{"enforcement": "none"}, {"network": []}, {"network": ["x"]}])
def test_a_snapshot_with_bad_values_is_malformed(bad: dict[str, object]) -> None:
    data = parse_task(task()).to_dict()
    data["allowed_resources"].update(bad)
    with pytest.raises(SnapshotError):
        Capability.from_dict(data)


SCHEMA = Path(__file__).parents[2] / "schemas" / "task.schema.json"


@pytest.mark.parametrize(
    ("res", "valid"),
    [
        ({"network": [443]}, True),
        ({"network": True}, True),
        ({"enforcement": "check-only"}, True),
        ({"network": []}, False),
        ({"network": [0]}, False),
        ({"enforcement": "off"}, False),
    ],
)
def test_the_schema_agrees_with_the_loader(res: dict[str, object], valid: bool) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(task(**res)))
    assert (not errors) == valid, errors
    if valid:
        parse_task(task(**res))
    else:
        with pytest.raises(TaskFileError):
            parse_task(task(**res))

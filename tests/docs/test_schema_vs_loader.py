"""schemas/skills.schema.json and schemas/agent_registry.schema.json say what the loaders
accept: for generated files, the schema accepts exactly the files `load_config` loads (one
rule the schema cannot say — a tool listed twice — is the loader's alone, and named here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capdaemon.config import load_config
from capdaemon.config.sections import ConfigError

ROOT = Path(__file__).resolve().parents[2]
# A key set to nothing (`key:`) is read as left out by the loader, which the schema (for
# editors) does not say; mapping values are therefore never null here, list items may be.
_SCALARS = st.one_of(
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from(["", "P0", "P1", "P2", "P3", "p0", "trusted", "probation", "other"]),
)
_NAMES = st.sampled_from(
    [
        "auto_revert_marker",
        "empty_pr",
        "published_verdict",
        "nope",
        "claude-code",
        "Claude",
        "codex",
        "gpt-5",
        "claude-opus-4",
        "a b",
        "-x",
        "m:1",
        "x" * 70,
    ]
)
_VALUE = st.one_of(_SCALARS, _NAMES, st.lists(st.one_of(_NAMES, _SCALARS, st.none()), max_size=3))

skills_docs = st.dictionaries(
    st.sampled_from(["disabled_rules", "severity_overrides", "other"]),
    st.one_of(
        _VALUE,
        st.dictionaries(
            st.sampled_from(
                ["validator_agent_registry", "validator_capability_scope", "validator_x"]
            ),
            _SCALARS,
            max_size=2,
        ),
    ),
    max_size=2,
)
agent = st.dictionaries(
    st.sampled_from(["tool", "models", "trust", "other"]),
    st.one_of(_NAMES, _SCALARS, st.lists(_NAMES, max_size=3)),
    max_size=3,
)
registry_docs = st.dictionaries(
    st.sampled_from(["agents", "other"]),
    st.one_of(_SCALARS, st.lists(st.one_of(agent, _SCALARS, st.none()), max_size=3)),
    max_size=1,
)


def _accepted(tmp: Path, name: str, doc: Any) -> bool:
    tmp.mkdir(parents=True, exist_ok=True)
    for f in tmp.iterdir():
        f.unlink()
    (tmp / name).write_text(yaml.safe_dump(doc), encoding="utf-8")
    try:
        load_config(tmp)
    except ConfigError:
        return False
    return True


def _valid(schema_file: str, doc: Any) -> bool:
    schema = json.loads((ROOT / "schemas" / schema_file).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema).is_valid(doc)


_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(doc=skills_docs)
def test_the_skills_schema_accepts_what_the_loader_accepts(
    doc: dict[str, Any], tmp_path: Path
) -> None:
    assert _valid("skills.schema.json", doc) == _accepted(tmp_path / "c", "skills.yml", doc), doc


@_SETTINGS
@given(doc=registry_docs)
def test_the_registry_schema_accepts_what_the_loader_accepts(
    doc: dict[str, Any], tmp_path: Path
) -> None:
    loaded = _accepted(tmp_path / "c", "agent_registry.yml", doc)
    agents = doc.get("agents")
    tools = (
        [a.get("tool") for a in agents if isinstance(a, dict)] if isinstance(agents, list) else []
    )
    if len(tools) != len(set(map(str, tools))):
        assert not loaded, doc  # a tool listed twice: refused by the loader alone
        return
    assert _valid("agent_registry.schema.json", doc) == loaded, doc

"""The defaults the configuration reference shows (`default` in schemas/) are the loader's:
each is compared with what `load_config` builds from a folder of empty files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from capdaemon.config import load_config
from capdaemon.config.channels import TelegramConfig
from capdaemon.config.types import KNOWN_VALIDATORS

ROOT = Path(__file__).resolve().parents[2]
TELEGRAM_FIELDS = {f.name: f for f in dataclasses.fields(TelegramConfig)}
ALIASES = {
    "bot.login": "bot_login",
    "bot.own_repo": "own_repo",
    "bot.decision_repo": "decision_repo",
    "canonical_app.slug": "canonical_app",
    "canonical_app.id": "canonical_app_id",
}


def _defaults(schema: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for name, sub in (schema.get("properties") or {}).items():
        if "default" in sub and "[]" not in prefix:
            out.append((prefix + name, sub["default"]))
        out += _defaults(sub, prefix + name + ".")
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return getattr(value, "value", value)


def _built(config: Any, section: str, path: str) -> Any:
    if section == "capdaemon":
        if path in ALIASES:
            return getattr(config, ALIASES[path])
        obj = config
        if path.startswith("notifications."):
            obj = config.channels
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj
    if section == "classifier":
        if path.startswith("extra_") or path == "known_safe_dirs":
            return []  # additions to a list: none by default
        return getattr(config.classifier, path)
    if section == "skills":
        if path.startswith("severity_overrides."):
            return config.skills.severity(path.split(".")[1])
        return getattr(config.skills, path)
    return getattr(config.registry, path)


@pytest.mark.parametrize("section", ["capdaemon", "classifier", "skills", "agent_registry"])
def test_schema_defaults_are_what_the_loader_builds(section: str, tmp_path: Path) -> None:
    for name in ("capdaemon.yml", "classifier.yml", "skills.yml", "agent_registry.yml"):
        (tmp_path / name).write_text("{}\n", encoding="utf-8")
    config = load_config(tmp_path)
    schema = json.loads((ROOT / "schemas" / f"{section}.schema.json").read_text("utf-8"))
    checked = 0
    for path, default in _defaults(schema):
        if path.startswith("telegram."):  # the section exists only when configured
            field = TELEGRAM_FIELDS[path.split(".")[1]]
            assert default == field.default, f"{section}.yml: {path}"
            checked += 1
            continue
        assert _plain(_built(config, section, path)) == default, f"{section}.yml: {path}"
        checked += 1
    assert checked > 0


def test_validator_severity_defaults_are_the_known_ones() -> None:
    schema = json.loads((ROOT / "schemas" / "skills.schema.json").read_text("utf-8"))
    props = schema["properties"]["severity_overrides"]["properties"]
    assert {k: v["default"] for k, v in props.items()} == {
        k: s.value for k, s in KNOWN_VALIDATORS.items()
    }

"""Validating line-tracking YAML (capdaemon.yamlread) section by section: ConfigError names
the file, the key path and the line; plus the list policies shared by the loaders."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

from capdaemon.config.base import CheckSpec, _union
from capdaemon.globs import GlobError, validate_glob
from capdaemon.quoting import quote_value
from capdaemon.yamlread import LDict, YamlInputError, read_yaml

# classifier.yml: restrictive lists may only grow (`extra_<name>` appends; `<name>` must keep
# every default); carve-out lists may only shrink (`<name>` must be a subset of the defaults).
RESTRICTIVE_CLASSIFIER_LISTS: tuple[str, ...] = (
    "irreversible_globs",
    "secret_globs",
    "external_globs",
    "external_content_patterns",
    "secret_content_patterns",
    "self_paths",
    "self_logic_patterns",
    "schema_globs",
    "always_d_globs",
    "critical_globs",
    "config_file_globs",
)
CARVE_OUT_CLASSIFIER_LISTS: tuple[str, ...] = (
    "noncritical_dirs",
    "noncritical_files",
    "noncritical_prose_dirs",
)
_PATTERN_LISTS = frozenset(
    {"external_content_patterns", "secret_content_patterns", "self_logic_patterns"}
)
RESTRICTIVE_TIER_LISTS: tuple[str, ...] = (
    "dependency_globs",
    "protected_globs",
    "production_globs",
)

_LOGIN_RE = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$"
_REPO_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,38}/[A-Za-z0-9_.-]{1,100}$"
_TOOL_RE = r"^[a-z0-9][a-z0-9._-]{0,63}$"
_MODEL_RE = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_ENV_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
_HHMM_RE = r"^(?:[01][0-9]|2[0-3]):[0-5][0-9]$"


class ConfigError(ValueError):
    """A config file is invalid; the message names the file, the key (and line) and why."""

    def __init__(self, file: str, key: str | None, reason: str, line: int | None = None) -> None:
        self.file = file
        self.key = key
        self.reason = reason
        self.line = line
        where = f"{file}:{line}" if line else file
        what = f" key '{key}':" if key else ""
        super().__init__(f"{where}:{what} {reason}")


# ----------------------------------------------------------------------------- YAML with lines
def _parse_yaml(text: str, file: str) -> Any:
    """Parse YAML into LDict/LList (capdaemon.yamlread); ConfigError naming line and key."""
    try:
        return read_yaml(text)
    except YamlInputError as exc:
        raise ConfigError(file, exc.key or None, exc.reason, exc.line) from None


# ----------------------------------------------------------------------------- validation
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


class _Section:
    """One YAML mapping being validated: typed getters that raise ConfigError with key and line."""

    def __init__(
        self,
        file: builtins.str,
        data: Any,
        path: builtins.str,
        allowed: Iterable[builtins.str],
        line: builtins.int | None = None,
        noun: builtins.str = "key",
    ) -> None:
        self.file = file
        self.path = path
        if data is None:
            data = LDict()
            data.lines = {}
        if not isinstance(data, dict):
            raise ConfigError(file, path or None, f"expected a mapping, got {_kind(data)}", line)
        self.data = data
        self.line = getattr(data, "line", line)
        allowed = set(allowed)
        for key in data:
            if key not in allowed:
                hint = _unknown_hint(key, allowed)
                raise ConfigError(file, self.key(key), f"unknown {noun}{hint}", self.line_of(key))

    def key(self, name: builtins.str) -> builtins.str:
        return f"{self.path}.{name}" if self.path else name

    def line_of(self, name: builtins.str) -> builtins.int | None:
        lines = getattr(self.data, "lines", None) or {}
        return lines.get(name, self.line)

    def has(self, name: builtins.str) -> builtins.bool:
        return name in self.data

    def error(
        self, name: builtins.str, reason: builtins.str, index: builtins.int | None = None
    ) -> ConfigError:
        key = self.key(name)
        line = self.line_of(name)
        if index is not None:
            key = f"{key}[{index}]"
            value = self.data.get(name)
            item_lines = getattr(value, "lines", None)
            if item_lines and index < len(item_lines):
                line = item_lines[index]
        return ConfigError(self.file, key, reason, line)

    def _typed(
        self, name: builtins.str, default: Any, types: tuple[type, ...], label: builtins.str
    ) -> Any:
        if name not in self.data:
            return default
        value = self.data[name]
        if isinstance(value, bool) and bool not in types:
            raise self.error(name, f"expected {label}, got {_kind(value)}")
        if not isinstance(value, types):
            raise self.error(name, f"expected {label}, got {_kind(value)}")
        return value

    def str(
        self,
        name: builtins.str,
        default: Any = None,
        *,
        pattern: builtins.str | None = None,
        choices: Iterable[builtins.str] | None = None,
        what: builtins.str = "",
    ) -> Any:
        import re

        value = self._typed(name, default, (str,), "a string")
        if name not in self.data or value is None:
            return value
        if choices is not None:
            choices = tuple(choices)
            if value not in choices:
                raise self.error(
                    name, f"expected one of {', '.join(choices)}, got {quote_value(value)}"
                )
        if pattern is not None and not re.match(pattern, value):
            raise self.error(name, f"{quote_value(value)} is not {what or 'valid'}")
        return value

    def int(
        self, name: builtins.str, default: Any = None, *, minimum: builtins.int | None = None
    ) -> Any:
        value = self._typed(name, default, (int,), "an integer")
        if name in self.data and minimum is not None and value < minimum:
            raise self.error(name, f"must be at least {minimum}, got {value}")
        return value

    def num(
        self,
        name: builtins.str,
        default: Any,
        *,
        minimum: builtins.float | None = None,
        maximum: builtins.float | None = None,
        exclusive_min: builtins.bool = False,
    ) -> builtins.float:
        value = self._typed(name, default, (int, float), "a number")
        if name not in self.data:
            unset: builtins.float = value  # the default, as given
            return unset
        if value != value or value in (float("inf"), float("-inf")):
            raise self.error(name, "must be a finite number")
        if minimum is not None and (value <= minimum if exclusive_min else value < minimum):
            op = "greater than" if exclusive_min else "at least"
            raise self.error(name, f"must be {op} {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(name, f"must be at most {maximum}, got {value}")
        return float(value)

    def bool(self, name: builtins.str, default: builtins.bool) -> builtins.bool:
        value: builtins.bool = self._typed(name, default, (bool,), "true or false")
        return value

    def section(self, name: builtins.str, allowed: Iterable[builtins.str]) -> _Section:
        return _Section(self.file, self.data.get(name), self.key(name), allowed, self.line_of(name))

    def list(self, name: builtins.str) -> builtins.list[Any] | None:
        if name not in self.data:
            return None
        value = self.data[name]
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(name, f"expected a list, got {_kind(value)}")
        return value

    def strs(
        self,
        name: builtins.str,
        *,
        check: Any = None,
        pattern: builtins.str | None = None,
        what: builtins.str = "",
        unique: builtins.bool = True,
    ) -> tuple[builtins.str, ...] | None:
        """A list of strings, each checked (`check(item)` raises ValueError with the reason)."""
        import re

        items = self.list(name)
        if items is None:
            return None
        out: list[str] = []
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise self.error(name, f"expected a string, got {_kind(item)}", i)
            if pattern is not None and not re.match(pattern, item):
                raise self.error(name, f"{quote_value(item)} is not {what or 'valid'}", i)
            if check is not None:
                try:
                    check(item)
                except ValueError as exc:
                    raise self.error(name, str(exc), i) from None
            if unique and item in out:
                raise self.error(name, f"duplicate entry {quote_value(item)}", i)
            out.append(item)
        return tuple(out)


CHECK_SPEC_KEYS = frozenset({"context", "app_id"})


def _extra_checks(sec: _Section, name: str = "extra_checks") -> tuple[CheckSpec, ...]:
    """`extra_checks`: each item a check name (any GitHub App's check run) or a mapping
    `{context: NAME, app_id: N}` (only that App's check run). Errors name the item."""
    items = sec.list(name)
    if not items:
        return ()
    out: list[CheckSpec] = []
    lines = getattr(items, "lines", None) or []
    for i, item in enumerate(items):
        if isinstance(item, str):
            if not item.strip():
                raise sec.error(name, "a check name must not be empty", i)
            spec = CheckSpec(item)
        elif isinstance(item, dict):
            path = f"{sec.key(name)}[{i}]"
            line = lines[i] if i < len(lines) else sec.line_of(name)
            sub = _Section(sec.file, item, path, CHECK_SPEC_KEYS, line)
            if not sub.has("context"):
                raise ConfigError(sec.file, path, "missing required key 'context'", sub.line)
            context = sub.str("context", pattern=r"^\S", what="a check name")
            spec = CheckSpec(context, sub.int("app_id", None, minimum=1))
        else:
            raise sec.error(
                name, f"expected a check name or {{context, app_id}}, got {_kind(item)}", i
            )
        if spec in out:
            raise sec.error(name, f"duplicate entry {quote_value(spec.context)}", i)
        out.append(spec)
    return tuple(out)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    for t, label in _TYPE_NAMES.items():
        if isinstance(value, t):
            return (
                f"{label} ({quote_value(value)})"
                if t is not str
                else f"a string ({quote_value(value)})"
            )
    return type(value).__name__


def _unknown_hint(key: str, allowed: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    if f"extra_{key}" in allowed and key not in allowed:
        return f" (use 'extra_{key}' to add entries)"
    return f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(sorted(allowed))})"


def _check_glob(item: str) -> None:
    try:
        validate_glob(item)
    except GlobError as exc:
        raise ValueError(f"bad glob {quote_value(item)}: {exc}") from None


def _check_regex(item: str) -> None:
    import re

    try:
        re.compile(item)
    except re.error as exc:
        raise ValueError(f"bad regular expression {quote_value(item)}: {exc}") from None


def _restrictive(sec: _Section, name: str, default: tuple[str, ...], check: Any) -> tuple[str, ...]:
    """A list that may only grow: `extra_<name>` appends; `<name>` must keep every default."""
    known = frozenset(default)

    def check_new(item: str) -> None:  # the built-in defaults are known good: skip compiling
        if item not in known:
            check(item)

    full = sec.strs(name, check=check_new)
    if full is not None:
        missing = [d for d in default if d not in full]
        if missing:
            raise sec.error(
                name,
                f"would drop the default {quote_value(missing[0])}; this list can only grow "
                f"(list only the additions under 'extra_{name}')",
            )
        base = full
    else:
        base = default
    extra = sec.strs(f"extra_{name}", check=check_new, unique=True) or ()
    return _union(base, extra)


def _carve_out(sec: _Section, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A carve-out list that may only shrink: every entry must be one of the defaults."""
    items = sec.strs(name, check=_check_glob)
    if items is None:
        return default
    for i, item in enumerate(items):
        if item not in default:
            raise sec.error(
                name,
                f"{quote_value(item)} is not a built-in carve-out; this list can only be narrowed "
                f"(allowed: {', '.join(default)})",
                i,
            )
    return items

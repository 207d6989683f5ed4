"""Task files (YAML): parse and validate into a normalised Capability; errors name the field."""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Mapping
from typing import Any

from capdaemon.capability.cmdpattern import PatternError, is_pattern, parse_pattern
from capdaemon.capability.model import (
    DEFAULT_ENFORCEMENT,
    DEFAULT_LEVEL,
    DEFAULT_MERGE_POLICY,
    DEFAULT_TTL_HOURS,
    ENFORCEMENTS,
    MAX_LIST_ITEMS,
    MAX_TASK_FILE_BYTES,
    MAX_TTL_HOURS,
    MERGE_POLICIES,
    BadTaskIdError,
    Capability,
    NoCapabilityError,
    TaskFileError,
    validate_task_id,
)
from capdaemon.globs import GlobError, validate_glob
from capdaemon.quoting import quote_value
from capdaemon.yamlread import YamlInputError, key_line, read_yaml

TOP_KEYS = ("task_id", "title", "description", "level", "allowed_resources")
RESOURCE_KEYS = (
    "paths", "forbidden_paths", "commands", "merge_policy", "ttl_hours", "agents", "branches",
    "qc", "enforcement", "network", "hooks_writable",
)  # fmt: skip
# A GitHub login (ASCII letters, digits, hyphens; at most 39), or a GitHub App's `name[bot]`.
_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}(?:\[bot\])?")
_UNBIND_HINT = "omit the key to leave the task unbound"
_SHELL_OPERATORS = frozenset(";&|<>()`$\n")


def parse_task_text(text: str, *, allow_no_scope: bool = False) -> Capability:
    """Parse and validate a task file's text; errors carry the field and its line.

    YAML aliases, duplicate keys, oversize text and values the loader cannot build are
    refused (docs/threat-model.md, TF1-TF3).
    """

    if len(text) > MAX_TASK_FILE_BYTES:
        raise TaskFileError(
            "", f"larger than the limit of {MAX_TASK_FILE_BYTES // 1024} KiB for a task file"
        )
    try:
        data = read_yaml(text, aliases=False)
    except YamlInputError as exc:
        raise TaskFileError(exc.key, exc.reason, exc.line) from None
    try:
        return parse_task(data, allow_no_scope=allow_no_scope)
    except TaskFileError as exc:
        raise exc.at_line(key_line(data, exc.field)) from None


def parse_task(data: Any, *, allow_no_scope: bool = False) -> Capability:
    """Validate the parsed YAML of a task file and return its normalised Capability.

    Without `allowed_resources` the task is refused (NoCapabilityError) unless
    `allow_no_scope`, which yields a legacy capability (everything allowed, loudly).
    """
    if not isinstance(data, Mapping):
        kind = "empty" if data is None else f"a {_type(data)}"
        raise TaskFileError("", f"a task file must be a mapping of keys, not {kind}")
    _no_unknown(data, TOP_KEYS, "")
    if "task_id" not in data:
        raise TaskFileError("task_id", "missing (required)")
    try:
        task_id = validate_task_id(data["task_id"])
    except BadTaskIdError as exc:
        raise TaskFileError("task_id", str(exc)) from None
    title = _text(data, "title")
    description = _text(data, "description")
    level = DEFAULT_LEVEL
    if "level" in data:
        level = _int(data["level"], "level", 0, 3)
    if "allowed_resources" not in data:
        if not allow_no_scope:
            raise NoCapabilityError(
                "allowed_resources",
                f"task {task_id!r} declares no capability (allowed_resources is missing); "
                "declare allowed_resources.paths, or dispatch a legacy task with --allow-no-scope",
            )
        return Capability(
            task_id=task_id, title=title, description=description, level=level, legacy=True
        )
    res = data["allowed_resources"]
    if not isinstance(res, Mapping):
        raise TaskFileError(
            "allowed_resources", f"must be a mapping with `paths`, not {_type(res)}"
        )
    _no_unknown(res, RESOURCE_KEYS, "allowed_resources.")
    if "paths" not in res:
        raise TaskFileError("allowed_resources.paths", "missing (at least one glob is required)")
    paths = _globs(res["paths"], "allowed_resources.paths", required=True)
    forbidden = _globs(res.get("forbidden_paths", []), "allowed_resources.forbidden_paths")
    commands = _commands(res.get("commands", []), "allowed_resources.commands")
    qc = _commands(res.get("qc", []), "allowed_resources.qc", ordered=True)
    merge_policy = DEFAULT_MERGE_POLICY
    if "merge_policy" in res:
        merge_policy = res["merge_policy"]
        if merge_policy not in MERGE_POLICIES:
            raise TaskFileError(
                "allowed_resources.merge_policy",
                f"must be one of {', '.join(MERGE_POLICIES)}, not {quote_value(merge_policy)}",
            )
    ttl = DEFAULT_TTL_HOURS
    if "ttl_hours" in res:
        ttl = _int(res["ttl_hours"], "allowed_resources.ttl_hours", 1, MAX_TTL_HOURS)
    agents: tuple[str, ...] = ()
    if "agents" in res:
        agents = _agents(res["agents"], "allowed_resources.agents")
    branches: tuple[str, ...] = ()
    if "branches" in res:
        branches = _globs(
            res["branches"],
            "allowed_resources.branches",
            required=True,
            empty=f"must not be empty ({_UNBIND_HINT})",
        )
    return Capability(
        task_id=task_id,
        title=title,
        description=description,
        level=level,
        paths=paths,
        forbidden_paths=forbidden,
        commands=commands,
        merge_policy=merge_policy,
        ttl_hours=ttl,
        agents=agents,
        branches=branches,
        qc=qc,
        enforcement=_enforcement(res.get("enforcement", DEFAULT_ENFORCEMENT)),
        network=_network(res.get("network", False)),
        hooks_writable=_hooks_writable(res.get("hooks_writable", False)),
    )


def _enforcement(value: Any) -> str:
    field = "allowed_resources.enforcement"
    if value not in ENFORCEMENTS:
        raise TaskFileError(
            field, f"must be one of {', '.join(ENFORCEMENTS)}, not {quote_value(value)}"
        )
    return str(value)


def _hooks_writable(value: Any) -> bool:
    """true lets the task write the folders git hooks run from (`.husky`, `.githooks`,
    `core.hooksPath`); false (the default) keeps them unwritable."""
    if not isinstance(value, bool):
        raise TaskFileError(
            "allowed_resources.hooks_writable", f"must be true or false, not {_type(value)}"
        )
    return value


def _network(value: Any) -> bool | tuple[int, ...]:
    """false (no TCP under `scope-guard run`), true (any), or TCP ports to connect to."""
    field = "allowed_resources.network"
    if isinstance(value, bool):
        return value
    if not isinstance(value, list):
        raise TaskFileError(
            field, f"must be true, false or a list of TCP ports, not {_type(value)}"
        )
    _bounded(value, field)
    if not value:
        raise TaskFileError(field, "must not be an empty list (write false for no network)")
    for i, port in enumerate(value):
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise TaskFileError(f"{field}[{i}]", f"must be a TCP port 1-65535, not {port!r}")
    return tuple(sorted(set(value)))


def _type(value: Any) -> str:
    return {
        dict: "mapping", list: "list", str: "string", int: "integer", float: "number",
        bool: "boolean", type(None): "null",
    }.get(type(value), type(value).__name__)  # fmt: skip


def _no_unknown(data: Mapping[Any, Any], known: tuple[str, ...], prefix: str) -> None:
    for key in data:
        if key not in known:
            raise TaskFileError(f"{prefix}{key}", f"unknown key (known: {', '.join(known)})")


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TaskFileError(key, f"must be a string, not {_type(value)}")
    return value.strip()


def _int(value: Any, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TaskFileError(field, f"must be an integer from {lo} to {hi}, not {_type(value)}")
    if not lo <= value <= hi:
        raise TaskFileError(field, f"must be from {lo} to {hi}, not {value}")
    return int(value)


def _globs(
    value: Any,
    field: str,
    *,
    required: bool = False,
    empty: str = "must not be empty (an empty allow-list allows nothing)",
) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise TaskFileError(field, f"must be a list of globs, not {_type(value)}")
    _bounded(value, field)
    if required and not value:
        raise TaskFileError(field, empty)
    out = []
    for i, pattern in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(pattern, str):
            raise TaskFileError(where, f"must be a string glob, not {_type(pattern)}")
        pattern = unicodedata.normalize("NFC", pattern.strip())
        try:
            validate_glob(pattern)
        except GlobError as exc:
            raise TaskFileError(where, str(exc)) from None
        if ".." in pattern.split("/"):
            raise TaskFileError(
                where, f"glob {quote_value(pattern)} has a `..` segment (paths never climb)"
            )
        out.append(pattern)
    return tuple(sorted(set(out)))


def _bounded(value: list[Any], field: str) -> None:
    if len(value) > MAX_LIST_ITEMS:
        raise TaskFileError(
            field, f"has {len(value)} items; the limit is {MAX_LIST_ITEMS} per list"
        )


def _agents(value: Any, field: str) -> tuple[str, ...]:
    """GitHub logins, lower-cased (GitHub compares logins case-insensitively), sorted, unique."""
    if not isinstance(value, list):
        raise TaskFileError(field, f"must be a list of GitHub logins, not {_type(value)}")
    _bounded(value, field)
    if not value:
        raise TaskFileError(field, f"must not be empty ({_UNBIND_HINT})")
    out = []
    for i, login in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(login, str):
            raise TaskFileError(where, f"must be a string GitHub login, not {_type(login)}")
        if not _LOGIN.fullmatch(login):
            raise TaskFileError(
                where,
                f"{quote_value(login)} is not a GitHub login (ASCII letters, digits and '-', "
                "at most 39, optionally ending in [bot])",
            )
        out.append(login.lower())
    return tuple(sorted(set(out)))


def _commands(value: Any, field: str, *, ordered: bool = False) -> tuple[str, ...]:
    """Command prefixes (sorted, de-duplicated), or with `ordered` a command list kept in its
    order (finish-task's QC)."""
    if not isinstance(value, list):
        raise TaskFileError(field, f"must be a list of command prefixes, not {_type(value)}")
    _bounded(value, field)
    out = []
    for i, cmd in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(cmd, str):
            raise TaskFileError(where, f"must be a string, not {_type(cmd)}")
        if any(ch in _SHELL_OPERATORS for ch in cmd):
            raise TaskFileError(
                where,
                f"{quote_value(cmd)} has shell operators; list a program and its leading arguments",
            )
        try:
            tokens = shlex.split(cmd)
        except ValueError as exc:
            raise TaskFileError(where, f"cannot parse {quote_value(cmd)}: {exc}") from None
        if not tokens:
            raise TaskFileError(where, "empty command")
        if "=" in tokens[0]:
            raise TaskFileError(
                where, f"{quote_value(cmd)} starts with an assignment, not a program"
            )
        entry = shlex.join(tokens)
        if is_pattern(entry):
            try:
                parse_pattern(entry)
            except PatternError as exc:
                raise TaskFileError(where, str(exc)) from None
        out.append(entry)
    return tuple(out) if ordered else tuple(sorted(set(out)))

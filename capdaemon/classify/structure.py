"""Config files' structure against values (SPEC 2.3) and edits to the daemon's own logic."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from typing import Any

import yaml

from capdaemon.classify.hunks import ADDED, REMOVED, Hunk
from capdaemon.classify.scopes import DEF_LINE, scopes_of

MAX_CONFIG_BYTES = 1_000_000
_SHAPE_BUDGET = 200_000
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _shape(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("config file too deep or too large to compare")
    if isinstance(value, dict):
        return ("map", frozenset((str(k), _shape(v, budget)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("list", frozenset(_shape(v, budget) for v in value))
    return type(value).__name__


def _parse_config(path: str, text: str) -> Any:
    low = path.casefold()
    if low.endswith((".yml", ".yaml")):
        return yaml.load(text, Loader=_YAML_LOADER)
    if low.endswith(".json"):
        return json.loads(text)
    if low.endswith(".toml"):
        return tomllib.loads(text)
    raise ValueError("unknown config format")


def config_change(path: str, base: str | None, head: str | None) -> tuple[bool, str]:
    """(schema_changed, reason) for a config file, from its base and head contents.

    Keys added or removed and value types changed are a schema change; anything that cannot
    be compared (content unavailable, unparseable, too large) counts as a schema change.
    """
    if base is None or head is None:
        return True, "config file content unavailable: schema change assumed"
    if len(base) > MAX_CONFIG_BYTES or len(head) > MAX_CONFIG_BYTES:
        return True, "config file too large to compare: schema change assumed"
    try:
        old = _parse_config(path, base)
        new = _parse_config(path, head)
        old_shape = _shape(old, [_SHAPE_BUDGET])
        new_shape = _shape(new, [_SHAPE_BUDGET])
    except RecursionError:
        return True, "config file nested too deeply: schema change assumed"
    except Exception as exc:  # yaml/json/toml errors and our own budget
        return True, f"config file not comparable ({type(exc).__name__}): schema change assumed"
    if old_shape != new_shape:
        return True, "config schema changed (keys added/removed or value types changed)"
    return False, "config values changed (schema unchanged)"


def self_logic_hits(
    hunks: tuple[Hunk, ...],
    rx: re.Pattern[str],
    base: str | None,
    head: str | None,
    path: str = "",
) -> list[str]:
    """Reasons why hunks of a bot-source file touch merge/auth logic (empty when they do not).

    The enclosing functions come from the base file (removed lines) and the head file (added
    lines) as their language's parser reads them; git's hunk header and the hunk's own
    definition lines are used only for a side whose file is unavailable or not parsed exactly.
    """
    if (
        head is None
        and base is None
        and not any(rx.search(h.header) or rx.search("\n".join(h.raw)) for h in hunks)
    ):
        return []  # nothing in the hunks mentions merge/auth, and no content to look up
    sides = {ADDED: scopes_of(path, head), REMOVED: scopes_of(path, base)}
    for h in hunks:
        for n, kind, stripped, guessed in _changed_lines(h, rx):
            hit = rx.search(stripped)
            if hit is not None:
                return [f"line {n} changes code mentioning {hit.group(0)!r}"]
            scopes = sides[kind]
            names = list(scopes.at(n)) if scopes is not None else []
            if scopes is None or not scopes.exact:
                names = guessed + names
            for name in names:
                hit = rx.search(name)
                if hit is not None:
                    return [f"line {n} is inside {name.split('(')[0]!r}"]
    return []


def _changed_lines(h: Hunk, rx: re.Pattern[str]) -> Iterator[tuple[int, str, str, list[str]]]:
    """(line number, kind, text, scopes guessed from the hunk header and hunk) per changed line."""
    stack = _header_scope(h.header, rx)
    min_indent: int | None = None
    for ln in h.lines:
        stripped = ln.text.strip()
        if not stripped:
            continue
        indent = len(ln.text) - len(ln.text.lstrip(" \t"))
        m = DEF_LINE.match(ln.text)
        if m is not None:
            while stack and _closes(stack[-1][0], indent, min_indent):
                stack.pop()
        if ln.kind in (ADDED, REMOVED):
            n = ln.new_no if ln.kind == ADDED else ln.old_no
            yield n, ln.kind, stripped, [name for _, name in stack]
        if m is not None:
            stack.append((indent, m.group("name") or stripped))
        min_indent = indent if min_indent is None else min(min_indent, indent)


def _header_scope(line: str, rx: re.Pattern[str]) -> list[tuple[int | None, str]]:
    """git's guess at the enclosing function (the hunk header), when it names one. Used only
    without the file itself, and kept open until the hunk shows it closed (fail closed)."""
    header = line.strip()
    header_def = DEF_LINE.match(header) if header else None
    if header and (header_def is not None or rx.search(header)):
        return [(None, (header_def.group("name") if header_def is not None else "") or header)]
    return []


def _closes(scope_indent: int | None, indent: int, min_indent: int | None) -> bool:
    if scope_indent is not None:
        return indent <= scope_indent
    return min_indent is not None and indent < min_indent


def added_line_no(hunks: tuple[Hunk, ...], index: int) -> int:
    """The new-file line number of the index-th added line."""
    for h in hunks:
        for ln in h.lines:
            if ln.kind == ADDED:
                if index == 0:
                    return ln.new_no
                index -= 1
    return 0

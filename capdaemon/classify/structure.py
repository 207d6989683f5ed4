"""Config files' structure against values (SPEC 2.3) and edits to the daemon's own logic."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import yaml

from capdaemon.classify.hunks import ADDED, REMOVED, Hunk

MAX_CONFIG_BYTES = 1_000_000
_SHAPE_BUDGET = 200_000
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A definition line in most languages: Python/Ruby def/class, JS function, Go func, Rust fn …
_DEF_LINE = re.compile(
    r"^(?P<indent>[ \t]*)(?:@\S+[ \t]+)*"
    r"(?:(?:export|public|private|protected|internal|static|async|override|final|abstract|"
    r"default|pub(?:\([^)]*\))?|unsafe|extern|inline|virtual)[ \t]+)*"
    r"(?:def|class|func|function|fn|sub|interface|struct|impl|trait|module|object)\b"
    r"[ \t]*(?P<name>[\w$.:<>]*)"
)


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


def _scopes_by_line(content: str | None) -> list[tuple[str, ...]] | None:
    """For each line (1-based index - 1) the names of the definitions enclosing it."""
    if content is None:
        return None
    stack: list[tuple[int, str]] = []
    out: list[tuple[str, ...]] = []
    for line in content.splitlines():
        stripped = line.strip()
        if stripped:
            indent = len(line) - len(line.lstrip(" \t"))
            m = _DEF_LINE.match(line)
            # a definition or any code line at or left of a scope's indentation closes it
            while stack and indent <= stack[-1][0] and not stripped.startswith(("#", ")", "]")):
                stack.pop()
            if m is not None:
                stack.append((indent, m.group("name") or stripped))
        out.append(tuple(name for _, name in stack))
    return out


def self_logic_hits(
    hunks: tuple[Hunk, ...], rx: re.Pattern[str], base: str | None, head: str | None
) -> list[str]:
    """Reasons why hunks of a bot-source file touch merge/auth logic (empty when they do not)."""
    reasons: list[str] = []
    if (
        head is None
        and base is None
        and not any(rx.search(h.header) or rx.search("\n".join(h.raw)) for h in hunks)
    ):
        return reasons  # nothing in the hunks mentions merge/auth, and no content to look up
    head_scopes = _scopes_by_line(head)
    base_scopes = _scopes_by_line(base)
    for h in hunks:
        header_def = _DEF_LINE.match(h.header.strip()) if h.header.strip() else None
        stack: list[tuple[int | None, str]] = []
        if h.header.strip() and (header_def is not None or rx.search(h.header)):
            name = header_def.group("name") if header_def is not None else ""
            stack.append((None, name or h.header.strip()))
        min_indent: int | None = None
        for ln in h.lines:
            text = ln.text
            stripped = text.strip()
            if not stripped:
                continue
            indent = len(text) - len(text.lstrip(" \t"))
            m = _DEF_LINE.match(text)
            if m is not None:
                while stack and (
                    (stack[-1][0] is not None and indent <= stack[-1][0])
                    or (stack[-1][0] is None and min_indent is not None and indent < min_indent)
                ):
                    stack.pop()
            if ln.kind in (ADDED, REMOVED):
                n = ln.new_no if ln.kind == ADDED else ln.old_no
                scopes = [name for _, name in stack]
                by_content = head_scopes if ln.kind == ADDED else base_scopes
                if by_content is not None and 0 < n <= len(by_content):
                    scopes.extend(by_content[n - 1])
                hit = rx.search(stripped)
                if hit is not None:
                    reasons.append(f"line {n} changes code mentioning {hit.group(0)!r}")
                    return reasons
                for name in scopes:
                    hit = rx.search(name)
                    if hit is not None:
                        reasons.append(f"line {n} is inside {name.split('(')[0]!r}")
                        return reasons
            if m is not None:
                stack.append((indent, m.group("name") or stripped))
            min_indent = indent if min_indent is None else min(min_indent, indent)
    return reasons


def added_line_no(hunks: tuple[Hunk, ...], index: int) -> int:
    """The new-file line number of the index-th added line."""
    for h in hunks:
        for ln in h.lines:
            if ln.kind == ADDED:
                if index == 0:
                    return ln.new_no
                index -= 1
    return 0

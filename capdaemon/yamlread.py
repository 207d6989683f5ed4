"""Read YAML input (config, repo policies, task files) with key lines and one error type.

Every failure, including scalars the loader cannot build (`!!bool maybe`, a 5,000-digit
integer, `2020-13-45`), nesting past a depth bound and, where refused, aliases, is a
YamlInputError carrying the line and the key path; nothing raw escapes (docs/threat-model.md,
Y1, Y2 and TF1).
"""

from __future__ import annotations

from typing import Any

from capdaemon.quoting import printable_short, quote_value

MAX_DEPTH = 64  # levels of nested mappings and lists; real inputs use fewer than ten
_KEY_LIMIT = 80  # characters of a key path shown in a message


class LDict(dict[str, Any]):
    """A mapping from YAML that remembers its own line and the line of each key (1-based)."""

    line: int = 0
    lines: dict[str, int]


class LList(list[Any]):
    """A sequence from YAML that remembers its own line and the line of each item (1-based)."""

    line: int = 0
    lines: list[int]


class YamlInputError(ValueError):
    """YAML that cannot be read; `line` (1-based) and `key` (dotted path) when known."""

    def __init__(self, reason: str, line: int | None = None, key: str = "") -> None:
        self.reason = reason
        self.line = line
        self.key = key
        super().__init__(reason)

    def under(self, part: str | int) -> YamlInputError:
        """Prefix the key path with the mapping key or list index the error sits under."""
        if isinstance(part, int) or not self.key or self.key.startswith("["):
            head = f"[{part}]" if isinstance(part, int) else part
            self.key = f"{head}{self.key}"
        else:
            self.key = f"{part}.{self.key}"
        if len(self.key) > _KEY_LIMIT:  # the outer keys name the place; drop the inner tail
            self.key = self.key[: _KEY_LIMIT - 1] + "…"
        return self


# Exceptions PyYAML's constructors raise on values they cannot build (int(), datetime(),
# a missing bool word, a regex that did not match).
_VALUE_ERRORS = (ValueError, KeyError, AttributeError, TypeError, OverflowError, IndexError)
_LOADERS: dict[tuple[bool, int], type] = {}


def _loader(aliases: bool, max_depth: int) -> type:
    cached = _LOADERS.get((aliases, max_depth))
    if cached is not None:
        return cached
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        depth = 0

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            line = node.start_mark.line + 1
            if node in self.constructed_objects or node in self.recursive_objects:
                if not aliases:
                    raise YamlInputError(
                        "YAML aliases are not allowed here (the anchored value starts at "
                        f"line {line}); write the value out",
                        line,
                    )
                return super().construct_object(node, deep=deep)
            if self.depth >= max_depth:
                raise YamlInputError(f"nested more than {max_depth} levels deep", line)
            self.depth += 1
            try:
                return super().construct_object(node, deep=deep)
            except YamlInputError:
                raise
            except _VALUE_ERRORS as exc:
                tag = str(node.tag).rsplit(":", 1)[-1]
                value = quote_value(node.value) if isinstance(node.value, str) else "value"
                detail = "" if isinstance(exc, KeyError) else f" ({quote_value(str(exc), 60)})"
                raise YamlInputError(f"{value} is not a valid {tag}{detail}", line) from None
            finally:
                self.depth -= 1

    def mapping(loader: Any, node: Any) -> LDict:
        loader.flatten_mapping(node)
        out = LDict()
        out.line = node.start_mark.line + 1
        out.lines = {}
        for k_node, v_node in node.value:
            key = loader.construct_object(k_node, deep=True)
            line = k_node.start_mark.line + 1
            if not isinstance(key, str) or key in out:
                if not isinstance(key, str):
                    raise YamlInputError(f"key {quote_value(key)} is not a string", line)
                raise YamlInputError(
                    f"duplicate key {quote_value(key)} (lines {out.lines[key]} and {line})", line
                )
            try:
                out[key] = loader.construct_object(v_node, deep=True)
            except YamlInputError as exc:
                raise exc.under(key) from None
            out.lines[key] = line
        return out

    def sequence(loader: Any, node: Any) -> LList:
        out = LList()
        for i, child in enumerate(node.value):
            try:
                out.append(loader.construct_object(child, deep=True))
            except YamlInputError as exc:
                raise exc.under(i) from None
        out.line = node.start_mark.line + 1
        out.lines = [c.start_mark.line + 1 for c in node.value]
        return out

    Loader.add_constructor("tag:yaml.org,2002:map", mapping)
    Loader.add_constructor("tag:yaml.org,2002:seq", sequence)
    _LOADERS[(aliases, max_depth)] = Loader
    return Loader


def read_yaml(text: str, *, aliases: bool = True, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one YAML document into LDict/LList/scalars; YamlInputError on any failure.

    Duplicate and non-string keys are refused. With `aliases=False` any alias (`*name`,
    including a `<<: *name` merge) is refused: the caller quotes values in its messages.
    """
    import yaml

    try:
        if not aliases:
            _refuse_aliases(text)
        return yaml.load(text, Loader=_loader(aliases, max_depth))  # a SafeLoader subclass
    except YamlInputError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["invalid"])[0]
        raise YamlInputError(f"not valid YAML: {problem}", line) from None
    except RecursionError:  # the pure-Python parser (no libyaml) recurses while composing
        raise YamlInputError(f"nested more than {max_depth} levels deep") from None


def _refuse_aliases(text: str) -> None:
    """Raise at the first alias event (`*name`, also in `<<: *name`), with its own position."""
    import yaml

    for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        if isinstance(event, yaml.AliasEvent):
            mark = event.start_mark
            column, line = (mark.column + 1, mark.line + 1) if mark is not None else (0, 0)
            raise YamlInputError(
                f"YAML alias *{printable_short(event.anchor or '', 40)} at column "
                f"{column} is not allowed here; write the value out",
                line or None,
            )


def key_line(data: Any, key: str) -> int | None:
    """The line of a dotted key path such as `allowed_resources.paths[2]` in `data`, if known."""
    import re

    line: int | None = getattr(data, "line", None) or None
    node = data
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", key):
        if name and isinstance(node, LDict) and name in node:
            line, node = node.lines.get(name, line), node[name]
        elif index and isinstance(node, LList) and int(index) < len(node):
            line, node = node.lines[int(index)], node[int(index)]
        else:
            break
    return line

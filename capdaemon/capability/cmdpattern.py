"""Allow-list entries with typed arguments: `pytest {path-in-scope}...`, `git checkout {word}`.

A pattern entry matches a command only as a whole: each literal word equal, each `{type}`
one word of that type, each `{type}...` one or more. The types:

- `{path-in-scope}`: a path inside the task's scope (allowed, not forbidden), which the
  program may write;
- `{path}`: a path in scope, or an existing, non-forbidden file or folder of the repository,
  which the program reads;
- `{word}`: a plain word that does not start with `-` (never an option);
- `{int}`: digits.
"""

from __future__ import annotations

from capdaemon.capability.cmdopts import READ, WRITE

TYPES = {"path-in-scope": WRITE, "path": READ, "word": "word", "int": "int"}
REPEAT = "..."


class PatternError(ValueError):
    """An allow-list entry with a `{…}` word that is not a known type."""


def is_pattern(entry: str) -> bool:
    """True when the entry has typed arguments."""
    return "{" in entry


def parse_pattern(entry: str) -> tuple[tuple[str, str, bool], ...]:
    """The entry's words as (literal or type, kind, repeated); PatternError for a bad type.

    kind is "literal" for a plain word, else the type's kind (READ, WRITE, "word", "int").
    """
    import shlex  # only for pattern entries (task files store entries shlex-joined)

    try:
        words = shlex.split(entry)
    except ValueError as exc:
        raise PatternError(f"cannot read {entry!r}: {exc}") from None
    out = []
    for w in words:
        if "{" not in w and "}" not in w:
            out.append((w, "literal", False))
            continue
        body, repeated = (w[: -len(REPEAT)], True) if w.endswith(REPEAT) else (w, False)
        name = body[1:-1] if body.startswith("{") and body.endswith("}") else ""
        if name not in TYPES:
            raise PatternError(
                f"{w!r} is not a typed argument; use one of "
                + ", ".join("{" + t + "}" for t in TYPES)
                + " (optionally followed by ...)"
            )
        out.append((name, TYPES[name], repeated))
    if not out or out[0][1] != "literal":
        raise PatternError(f"{entry!r} must start with a program")
    return tuple(out)


def _fits(kind: str, word: str) -> bool:
    if kind == "literal":
        return False
    if kind == "int":
        return word.isascii() and word.isdigit()
    return bool(word) and not word.startswith("-")


def match_pattern(
    pattern: tuple[tuple[str, str, bool], ...], argv: tuple[str, ...]
) -> list[tuple[int, str, str]] | None:
    """The path words of `argv` as (index, READ/WRITE, word) when it matches, else None."""

    def go(p: int, a: int) -> list[tuple[int, str, str]] | None:
        if p == len(pattern):
            return [] if a == len(argv) else None
        text, kind, repeated = pattern[p]
        if a >= len(argv):
            return None
        if kind == "literal":
            return go(p + 1, a + 1) if argv[a] == text else None
        if not _fits(kind, argv[a]):
            return None
        last = a + 1
        if repeated:
            while last < len(argv) and _fits(kind, argv[last]):
                last += 1
        for end in range(last, a, -1):  # longest run first, then shorter
            rest = go(p + 1, end)
            if rest is not None:
                here = [(k, kind, argv[k]) for k in range(a, end) if kind in (READ, WRITE)]
                return here + rest
        return None

    return go(0, 0)

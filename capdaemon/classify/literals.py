"""Required literals of a regex: strings one of which every match must contain (a prefilter)."""

from __future__ import annotations

import re
from itertools import product
from typing import Any

try:  # Python 3.11+
    from re import _constants as sre_c  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older layouts
    import sre_constants as sre_c
    import sre_parse

MAX_ALTERNATIVES = 64
_INLINE_I = re.compile(r"\(\?[a-zA-Z-]*i[a-zA-Z-]*[:)]")
MIN_LENGTH = 2


def _small_set(av: Any) -> set[str] | None:
    chars: set[str] = set()
    for op, arg in av:
        if op is not sre_c.LITERAL:
            return None
        chars.add(chr(arg))
    return chars if 0 < len(chars) <= 8 else None


def _exact(seq: Any) -> set[str] | None:
    """The exact strings a purely literal sequence matches, or None."""
    out = {""}
    for op, av in seq:
        nxt: set[str] | None
        if op is sre_c.LITERAL:
            nxt = {chr(av)}
        elif op is sre_c.IN:
            nxt = _small_set(av)
        elif op is sre_c.SUBPATTERN and not av[1] and not av[2]:
            nxt = _exact(av[3])
        elif op is sre_c.BRANCH:
            union: set[str] = set()
            for branch in av[1]:
                sub = _exact(branch)
                if sub is None:
                    return None
                union |= sub
            nxt = union
        else:
            return None
        if nxt is None:
            return None
        out = {a + b for a, b in product(out, nxt)}
        if len(out) > MAX_ALTERNATIVES:
            return None
    return out


_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None))


def _inner_required(op: Any, av: Any) -> set[str] | None:
    """Alternatives required inside a group or branch that cannot be spelled out whole."""
    if op is sre_c.SUBPATTERN:
        return _required(av[3])
    subs = [_required(b) for b in av[1]]
    return None if any(s is None for s in subs) else set().union(*subs)  # type: ignore[arg-type]


def _item(op: Any, av: Any) -> tuple[set[str] | None, set[str] | None]:
    """One sequence item as (its exact alternatives, None) when it extends the literal run,
    else (None, alternatives required inside it, or None)."""
    if op is sre_c.LITERAL:
        return {chr(av)}, None
    if op is sre_c.IN:
        return _small_set(av), None
    if op in (sre_c.SUBPATTERN, sre_c.BRANCH):
        if op is sre_c.SUBPATTERN and (av[1] or av[2]):
            return None, None
        piece = _exact([(op, av)])
        if piece is None:
            return None, _inner_required(op, av)
        return piece, None
    if op in _REPEATS and av[0] >= 1:
        return None, _required(av[2])
    return None, None


def _required(seq: Any) -> set[str] | None:
    """Alternatives one of which appears in every match of the sequence, or None."""
    candidates: list[set[str]] = []
    run = {""}

    def close() -> None:
        nonlocal run
        if run != {""} and all(run):
            candidates.append(run)
        run = {""}

    for op, av in seq:
        piece, inner = _item(op, av)
        if piece is None:
            close()
            if inner:
                candidates.append(inner)
            continue
        grown = {a + b for a, b in product(run, piece)}
        if len(grown) > MAX_ALTERNATIVES:
            close()
            run = set(piece)
        else:
            run = grown
    close()
    if not candidates:
        return None
    best = max(candidates, key=lambda c: (min(len(s) for s in c), -len(c)))
    return best if min(len(s) for s in best) >= MIN_LENGTH else None


def required_literals(pattern: str) -> frozenset[str] | None:
    """Strings one of which must occur in any text the pattern matches; None when unknown.

    Case-insensitive patterns (any IGNORECASE flag) get None: case folding in `re` is not
    the same as `str.lower`, and a prefilter must never miss.
    """
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError):
        return None
    if parsed.state.flags & re.IGNORECASE or _INLINE_I.search(pattern):
        return None
    alts = _required(list(parsed))
    return frozenset(alts) if alts else None

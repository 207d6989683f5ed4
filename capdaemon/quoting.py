"""Quote untrusted input in one-line messages: bounded in length and in the work to build it."""

from __future__ import annotations

QUOTE_LIMIT = 80  # characters of untrusted text quoted in one message


def printable(text: str) -> str:
    """Control and format characters (a newline in a path, a U+202E bidi override in a PR
    title) shown escaped (`\\u202e`), so one item stays on one line and reads as it is stored."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in str(text))


def printable_short(text: str, limit: int = QUOTE_LIMIT) -> str:
    """One line of at most `limit` characters, for quoting bad input in a message."""
    text = str(text)
    s = " ".join(text[: limit * 4].split())
    return s if len(s) <= limit and len(text) <= limit * 4 else s[: limit - 1] + "…"


def quote_value(value: object, limit: int = QUOTE_LIMIT) -> str:
    """`repr(value)` cut to one line of at most `limit` characters.

    Strings are cut before `repr` and containers are shown a few items and levels deep, so
    a huge or deeply shared value (a YAML alias tree) costs no more than a short one.
    """
    if isinstance(value, str):
        return printable_short(repr(value[:limit]) + ("…" if len(value) > limit else ""), limit)
    import reprlib

    r = reprlib.Repr()
    r.maxlevel = 3
    r.maxstring = r.maxother = r.maxlong = limit
    r.maxlist = r.maxtuple = r.maxdict = r.maxset = r.maxfrozenset = 6
    return printable_short(r.repr(value), limit)

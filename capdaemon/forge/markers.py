"""Hidden `<!-- capdaemon: {json} -->` markers: how capdaemon finds its own writes again."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from capdaemon.state import canonical_json

_OPEN, _CLOSE = "<!--", "-->"
_PREFIX = re.compile(r"\s*capdaemon:\s*")
# A marker capdaemon writes is a few hundred bytes; longer ones are never parsed (bounded
# time and memory for json.loads, whose nesting also raises RecursionError when deep).
MAX_MARKER_CHARS = 16384


def _marker_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, JSON text) of each `<!-- capdaemon: {...} -->` comment, in one linear pass.

    HTML comments do not nest: a comment runs to the first `-->` after its `<!--`, and the
    next search starts after it, so every character is looked at a bounded number of times
    (a regex with a lazy `.*?` re-scans the rest of the text from every `<!--`).
    """
    pos = 0
    while True:
        start = text.find(_OPEN, pos)
        if start < 0:
            return
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            return  # no later comment can close either
        pos = end + len(_CLOSE)
        # an unclosed `<!--` earlier in a body must not hide the marker the bot appended
        start = text.rfind(_OPEN, start, end)
        m = _PREFIX.match(text, start + len(_OPEN), end)
        if m is None or end - m.end() > MAX_MARKER_CHARS:
            continue  # not a marker, or one too long to be ours (never copied, never parsed)
        inner = text[m.end() : end].rstrip()
        if inner.startswith("{") and inner.endswith("}"):
            yield start, pos, inner


def render_marker(d: Mapping[str, Any]) -> str:
    """The HTML comment carrying `d` as canonical JSON (`<`, `>`, `&` escaped: cannot end early)."""
    if "kind" not in d:
        raise ValueError("a marker needs a 'kind'")
    text = canonical_json(dict(d))
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    if len(text) > MAX_MARKER_CHARS:
        raise ValueError(f"a marker over {MAX_MARKER_CHARS} characters would not be read back")
    return f"<!-- capdaemon: {text} -->"


def parse_marker(text: str | None) -> dict[str, Any] | None:
    """The first well-formed marker object in `text`, or None."""
    if not text:
        return None
    for _start, _end, inner in _marker_spans(text):
        try:
            obj = json.loads(inner)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and isinstance(obj.get("kind"), str):
            return obj
    return None


def marker_key(d: Mapping[str, Any]) -> str:
    """An issue marker's identity: its `kind` plus `key` (or else `pr`); other fields may change.

    Put volatile facts (head sha, round) in other fields: an issue is found again by kind+key only.
    With neither `key` nor `pr`, the whole marker is the identity.
    """
    if "key" in d:
        ident: Any = d["key"]
    elif "pr" in d:
        ident = d["pr"]
    else:
        ident = {k: v for k, v in d.items() if k != "kind"}
    return canonical_json([d.get("kind"), ident])


def with_marker(body: str, d: Mapping[str, Any]) -> str:
    """`body` with the marker appended on its own line (any earlier capdaemon marker removed)."""
    body = body or ""
    parts: list[str] = []
    pos = 0
    for start, end, _inner in _marker_spans(body):
        parts.append(body[pos:start])
        pos = end
    parts.append(body[pos:])
    clean = "".join(parts).rstrip()
    return f"{clean}\n\n{render_marker(d)}" if clean else render_marker(d)

"""Hidden `<!-- capdaemon: {json} -->` markers: how capdaemon finds its own writes again."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from capdaemon.state import canonical_json

_MARKER_RE = re.compile(r"<!--\s*capdaemon:\s*(\{.*?\})\s*-->", re.DOTALL)


def render_marker(d: Mapping[str, Any]) -> str:
    """The HTML comment carrying `d` as canonical JSON (`<`, `>`, `&` escaped: cannot end early)."""
    if "kind" not in d:
        raise ValueError("a marker needs a 'kind'")
    text = canonical_json(dict(d))
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return f"<!-- capdaemon: {text} -->"


def parse_marker(text: str | None) -> dict[str, Any] | None:
    """The first well-formed marker object in `text`, or None."""
    if not text:
        return None
    for m in _MARKER_RE.finditer(text):
        try:
            obj = json.loads(m.group(1))
        except ValueError:
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
    clean = _MARKER_RE.sub("", body or "").rstrip()
    return f"{clean}\n\n{render_marker(d)}" if clean else render_marker(d)

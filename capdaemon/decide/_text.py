"""Markdown helpers for text that comes from outside (PR titles, paths, logins): never markup."""

from __future__ import annotations

import re
from datetime import timedelta

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#])")
_LIST_MARKER = re.compile(r"^([-+=]|\d+[.)])")


def md(text: object) -> str:
    """Escape untrusted text for Markdown: no markup, no HTML, no @mentions, one line.

    `<` and `>` become entities, so a PR title can never smuggle a hidden
    `<!-- capdaemon: ... -->` marker into an issue the bot later reads back.
    """
    s = " ".join(str(text).split())
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_SPECIAL.sub(r"\\\1", s)
    s = _LIST_MARKER.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1], s)
    return s.replace("@", "@\u2060")  # word joiner: renders as "@" but never mentions


def short_sha(sha: str) -> str:
    """The first 12 characters of a sha (escaped)."""
    return md(sha[:12])


def format_age(delta: timedelta) -> str:
    """A duration as "3 d 4 h", "5 h 12 min" or "7 min" (negative durations count as 0)."""
    minutes = max(0, int(delta.total_seconds() // 60))
    days, rem = divmod(minutes, 24 * 60)
    hours, mins = divmod(rem, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {mins} min"
    return f"{mins} min"


_REF = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[0-9]+$")


def ref(text: str) -> str:
    """An `owner/repo#N` reference left raw (GitHub autolinks it); anything else is escaped."""
    return text if _REF.match(text) else md(text)


def link(label: str, url: str) -> str:
    """A Markdown link when `url` is a plain http(s) URL, else just the escaped label."""
    if re.match(r"^https?://[^\s()<>\[\]]+$", url or ""):
        return f"[{ref(label)}]({url})"
    return md(label)

"""Where each dashboard page lives: story page names, and links to a PR on GitHub."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from capdaemon.config import Config

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_REF = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+)#([0-9]+)$")
STORY_DIR = "pr"


def story_slug(ref: str) -> str:
    """`owner/repo#N` → a file-name-safe slug (`owner_repo_N`)."""
    repo, _, number = ref.rpartition("#")
    owner, _, name = repo.partition("/")
    return _UNSAFE.sub("-", f"{owner}_{name}_{number}").lstrip(".") or "pr"


def story_href(ref: str) -> str:
    """The story page of a PR, relative to the dashboard's root."""
    return f"{STORY_DIR}/{story_slug(ref)}.html"


def web_base(config: Config) -> str:
    """github.com (or a GitHub Enterprise host) for web links; "" when the API has no web UI."""
    base = config.github.base_url.rstrip("/")
    if base == "https://api.github.com":
        return "https://github.com"
    parts = urlsplit(base)
    if parts.scheme == "https" and parts.path.rstrip("/") == "/api/v3":
        return f"https://{parts.netloc}"
    return ""


def web_url(config: Config, ref: str, kind: str = "pull") -> str:
    """The web page of `owner/repo#N` (kind "pull" or "issues"); "" when there is none."""
    m = _REF.match(ref)
    base = web_base(config)
    if not m or not base:
        return ""
    return f"{base}/{m.group(1)}/{kind}/{m.group(2)}"

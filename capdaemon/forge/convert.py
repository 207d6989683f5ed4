"""The Forge's constants and pure helpers: GitHub JSON to domain types, blob hashes, an LRU."""

from __future__ import annotations

import base64
import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog

from capdaemon.config import DEFAULT_SOURCE_ROOT
from capdaemon.forge.types import (
    Comment,
    PRStatus,
)
from capdaemon.globs import GlobSet
from capdaemon.model import (
    CheckRun,
    Commit,
    FileStatus,
)
from capdaemon.timefmt import parse_utc

log = structlog.get_logger("capdaemon.forge.client")  # one logger for the whole Forge

CHECK_NAME = "L1.C3"
FILES_CAP = 3000  # GitHub lists at most 3,000 files of a PR
COMMITS_CAP = 250  # ... and at most 250 commits
COMPARE_MAX_FILES = 300  # the compare API returns at most 300 files
CONTENT_MAX_BYTES = 2 * 1024 * 1024
DEFAULT_CONTENT_GLOBS: tuple[str, ...] = (
    "config/**/*.yml",
    "config/**/*.yaml",
    "config/**/*.json",
    "config/**/*.toml",
    f"{DEFAULT_SOURCE_ROOT}/**",
)
USER_AGENT = "capdaemon/0.1 (+PyGithub)"
LABEL_COLOR = "ededed"

Entry = tuple[str, str, str]  # (mode, type, sha) of a tree entry


@functools.lru_cache(maxsize=8)
def default_contents_for(globs: tuple[str, ...] = DEFAULT_CONTENT_GLOBS) -> Callable[[str], bool]:
    """Which changed files get base/head content: config files and the bot's source root."""
    return GlobSet.of(globs).match


def _dt(value: Any) -> datetime | None:
    if not value:
        return None
    return parse_utc(str(value), "GitHub timestamp")


def _login(obj: Any) -> str:
    return (obj or {}).get("login") or ""


def _next_link(link: str | None) -> str | None:
    if not link:
        return None
    for part in link.split(","):
        section = part.split(";")
        if len(section) >= 2 and 'rel="next"' in section[1].strip():
            return section[0].strip().strip("<>")
    return None


def _status(value: str) -> FileStatus:
    try:
        return FileStatus(value)
    except ValueError:
        return FileStatus.CHANGED  # unknown kinds of change are treated as type/mode changes


def _decode(content_b64: str | None) -> str | None:
    if content_b64 is None:
        return None
    raw = base64.b64decode(content_b64)
    if len(raw) > CONTENT_MAX_BYTES:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


K = TypeVar("K")
V = TypeVar("V")


class Lru(OrderedDict[K, V]):
    """A tiny LRU for immutable (content-addressed) results (safe across gather threads)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self._lock = threading.Lock()

    def get_(self, key: K) -> V | None:
        """The value kept for `key` (now the most recent), or None."""
        return self.find(key)[1]

    def find(self, key: K) -> tuple[bool, V | None]:
        """(found, value): for caches where None is a valid answer."""
        with self._lock:
            try:
                self.move_to_end(key)
            except KeyError:
                return False, None
            return True, self[key]

    def put(self, key: K, value: V) -> None:
        """Keep `value` for `key`, dropping the least recently used beyond `size`."""
        with self._lock:
            self[key] = value
            self.move_to_end(key)
            while len(self) > self.size:
                self.popitem(last=False)


# ==================================================================== helpers
def protection_ok(prot: dict[str, Any], check_name: str, app_id: int | None) -> bool:
    """Does `prot` require `check_name` (from `app_id`) and PRs, and forbid force pushes?"""
    rsc = prot.get("required_status_checks") or {}
    checks = rsc.get("checks") or [{"context": c} for c in rsc.get("contexts") or ()]
    has_check = any(
        c.get("context") == check_name and (app_id is None or c.get("app_id") == app_id)
        for c in checks
    )
    force = prot.get("allow_force_pushes")
    force_on = bool(force.get("enabled")) if isinstance(force, dict) else bool(force)
    return has_check and not force_on and prot.get("required_pull_request_reviews") is not None


def review_count(prot: Mapping[str, Any] | None) -> int:
    """The approving reviews a protection document requires (0 when none or no document)."""
    reviews = (prot or {}).get("required_pull_request_reviews") or {}
    try:
        return int(reviews.get("required_approving_review_count") or 0)
    except (TypeError, ValueError):
        return 0


def git_blob_sha(data: bytes) -> str:
    """Git's object id of a blob with this content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's id, not for security


def _from_patch(patch: str | None, sign: str, blob_sha: str) -> str | None:
    """The whole text of an added (`+`) or removed (`-`) file rebuilt from its patch.

    Only trusted when the rebuilt bytes hash to the blob sha git has for the file; else None
    (the caller fetches the blob). Saves a request per added config file.
    """
    if patch is None:
        return None
    lines: list[str] = []
    no_eol = False
    for line in patch.split("\n"):
        if line.startswith("@@"):
            continue
        if line.startswith("\\"):
            no_eol = True
            continue
        if line.startswith(sign):
            lines.append(line[1:])
        elif line:
            return None
    text = "\n".join(lines) + ("" if no_eol or not lines else "\n")
    try:
        ok = git_blob_sha(text.encode("utf-8")) == blob_sha
    except UnicodeEncodeError:
        return None
    return text if ok else None


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _join(a: str | None, b: str) -> str:
    return f"{a}; {b}" if a else b


def _commit(c: dict[str, Any]) -> Commit:
    cm = c.get("commit") or {}
    a = cm.get("author") or {}
    k = cm.get("committer") or {}
    return Commit(
        sha=c["sha"],
        parents=tuple(p["sha"] for p in c.get("parents") or ()),
        message=cm.get("message") or "",
        author_name=a.get("name") or "",
        author_email=a.get("email") or "",
        authored_at=_dt(a.get("date")),
        committer_name=k.get("name") or "",
        committer_email=k.get("email") or "",
        committed_at=_dt(k.get("date")),
        author_login=_login(c.get("author")) or None,
        committer_login=_login(c.get("committer")) or None,
    )


def _check_run(r: dict[str, Any]) -> CheckRun:
    app = r.get("app") or {}
    out = r.get("output") or {}
    return CheckRun(
        name=r.get("name", ""),
        status=r.get("status", ""),
        conclusion=r.get("conclusion"),
        app_slug=app.get("slug"),
        app_id=app.get("id"),
        output_title=out.get("title") or "",
        output_summary=out.get("summary") or "",
        output_text=out.get("text") or "",
        started_at=_dt(r.get("started_at")),
        completed_at=_dt(r.get("completed_at")),
        id=r.get("id"),
    )


def _comment(c: dict[str, Any]) -> Comment:
    created = _dt(c.get("created_at"))
    assert created is not None
    updated = _dt(c.get("updated_at")) or created
    return Comment(
        id=int(c["id"]),
        user=_login(c.get("user")),
        body=c.get("body") or "",
        created_at=created,
        updated_at=updated,
        edited=True if updated > created else None,  # whole seconds: a quick edit is unseen
    )


def pr_status(repo: str, p: Mapping[str, Any]) -> PRStatus:
    """A REST PR as where it stands: open, merged (and at which merge commit) or closed."""
    merged = bool(p.get("merged"))
    return PRStatus(
        repo=repo,
        number=int(p["number"]),
        state=str(p.get("state", "open")),
        merged=merged,
        merge_sha=p.get("merge_commit_sha") if merged else None,
        head_sha=p["head"]["sha"],
        mergeable=p.get("mergeable"),
        base_ref=str((p.get("base") or {}).get("ref") or ""),
    )

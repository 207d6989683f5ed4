"""Git plumbing's shared parts: object ids, people and commit specs, the memo, the environment."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

ZERO = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

PRE_RECEIVE_HOOK = """#!/bin/sh
# capdaemon sandbox: branch protection for pushes (see ghsandbox/protection.py).
exec "{python}" -I -S "{script}"
"""


class GitError(RuntimeError):
    """A git command failed."""


@dataclass(frozen=True)
class Person:
    """An author or committer identity."""

    name: str
    email: str


@dataclass
class CommitSpec:
    """One commit for :meth:`GitRepo.fast_import`.

    ``files`` maps a path to text/bytes (a regular file), ``None`` (delete) or a dict
    ``{"content": ..., "mode": "100644"|"100755"|"120000"|"160000"}`` (160000: a commit sha).
    """

    branch: str
    files: Mapping[str, Any]
    message: str
    author: Person
    when: datetime
    parent: str | None = None
    committer: Person | None = None
    extra_parents: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CommitInfo:
    """A parsed commit object."""

    sha: str
    tree: str
    parents: list[str]
    author: Person
    author_date: datetime
    committer: Person
    committer_date: datetime
    message: str


def quote_path(path: str) -> str:
    """A path as git quotes it in diff headers (only when it needs quoting)."""
    if any(c in path for c in '"\\\n') or path.startswith(" "):
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return path


def epoch(dt: datetime) -> int:
    """Seconds since the epoch (git's author and committer dates)."""
    return int(dt.timestamp())


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
        }
    )
    return env


_SHA = re.compile(r"^[0-9a-f]{40}$")
SHA_RANGE = re.compile(r"^\^?[0-9a-f]{40}(?:\.\.[0-9a-f]{40})?$")
PLAIN_REF = re.compile(r"^refs/[A-Za-z0-9._/+-]+$")
# git subcommands that may move refs: the in-memory ref table is dropped when one runs.
REF_WRITERS = frozenset(
    {
        "update-ref",
        "fast-import",
        "symbolic-ref",
        "pack-refs",
        "gc",
        "branch",
        "tag",
        "fetch",
        "receive-pack",
        "push",
        "replace",
        "reflog",
        "prune",
    }
)
MEMO_LIMIT = 20_000


def is_sha(text: str) -> bool:
    """Is ``text`` a full (40 hex digits) object id? Such names are immutable cache keys."""
    return _SHA.match(text) is not None


class Memo:
    """A thread-safe, size-bounded memo for results keyed by immutable object ids."""

    def __init__(self, limit: int = MEMO_LIMIT) -> None:
        self._data: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self.limit = limit

    def get(self, key: Any, default: Any = None) -> Any:
        """The stored value or ``default``."""
        with self._lock:
            return self._data.get(key, default)

    def put(self, key: Any, value: Any) -> Any:
        """Store ``value`` (dropping the oldest half when full) and return it."""
        with self._lock:
            if len(self._data) >= self.limit:
                for old in list(self._data)[: self.limit // 2]:
                    del self._data[old]
            self._data[key] = value
        return value

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


_ENV_LOCK = threading.Lock()
_ENV: dict[str, str] | None = None


def git_env() -> dict[str, str]:
    """The environment git subprocesses run with (computed once, lazily)."""
    global _ENV
    with _ENV_LOCK:
        if _ENV is None:
            _ENV = _base_env()
        return dict(_ENV)


UNKNOWN = object()

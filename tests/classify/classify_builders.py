"""Builders for classifier tests: snapshots, file changes and real unified diffs (difflib).

Imported by the test modules as `classify_builders` (tests/classify/conftest.py holds the fixtures).
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from capdaemon.config import Config
from capdaemon.model import (
    CheckRun,
    Commit,
    FileChange,
    FileStatus,
    LabelEvent,
    PRSnapshot,
)

NOW = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)
HEAD = "h" * 40
HEAD_TIME = NOW - timedelta(hours=2)


def make_patch(old_lines: Sequence[str], new_lines: Sequence[str], *, context: int = 3) -> str:
    """A GitHub-style patch (hunks only, no file header) between two line lists."""
    diff = difflib.unified_diff(list(old_lines), list(new_lines), lineterm="", n=context)
    lines = list(diff)[2:]  # drop the ---/+++ header, as GitHub's `patch` field does
    return "\n".join(lines)


def with_header(patch: str, header: str) -> str:
    """Put a function-context header after the first `@@ ... @@` (as git does)."""
    first, _, rest = patch.partition("\n")
    return f"{first} {header}\n{rest}"


def modified(path: str, old: Sequence[str], new: Sequence[str], **kw: object) -> FileChange:
    """A modified file with a real patch from old → new lines."""
    return FileChange(path=path, status=FileStatus.MODIFIED, patch=make_patch(old, new), **kw)  # type: ignore[arg-type]


def added(path: str, lines: Sequence[str] = ("x = 1",), **kw: object) -> FileChange:
    """An added file."""
    return FileChange(
        path=path,
        status=FileStatus.ADDED,
        patch=make_patch([], lines),
        additions=len(lines),
        **kw,  # type: ignore[arg-type]
    )


def removed(path: str, lines: Sequence[str] = ("x = 1",), **kw: object) -> FileChange:
    """A removed file."""
    return FileChange(
        path=path,
        status=FileStatus.REMOVED,
        patch=make_patch(lines, []),
        deletions=len(lines),
        **kw,  # type: ignore[arg-type]
    )


def renamed(old: str, new: str, **kw: object) -> FileChange:
    """A pure rename (no content change)."""
    return FileChange(path=new, status=FileStatus.RENAMED, previous_path=old, patch="", **kw)  # type: ignore[arg-type]


def commit(
    message: str = "Do a thing",
    sha: str = HEAD,
    committed_at: datetime | None = HEAD_TIME,
) -> Commit:
    """A commit (the head by default)."""
    return Commit(sha=sha, parents=("p" * 40,), message=message, committed_at=committed_at)


def snapshot(
    *files: FileChange,
    commits: Sequence[Commit] | None = None,
    labels: Sequence[str] = (),
    label_events: Sequence[LabelEvent] = (),
    check_runs: Sequence[CheckRun] = (),
    repo: str = "acme/widgets",
    author: str = "coder-bot",
    **kw: object,
) -> PRSnapshot:
    """A PR snapshot with sensible defaults (one head commit)."""
    return PRSnapshot(
        repo=repo,
        number=7,
        base_ref="main",
        base_sha="b" * 40,
        head_sha=HEAD,
        author=author,
        files=tuple(files),
        commits=tuple(commits) if commits is not None else (commit(),),
        labels=tuple(labels),
        label_events=tuple(label_events),
        check_runs=tuple(check_runs),
        **kw,  # type: ignore[arg-type]
    )


def base_config(**kw: object) -> Config:
    """The default config with an owner, a bot repo and a canonical App."""
    defaults: dict[str, object] = {
        "owners": ("alice",),
        "own_repo": "acme/capdaemon-config",
        "canonical_app": "capdaemon-judge",
        "canonical_app_id": 4242,
    }
    defaults.update(kw)
    return Config(**defaults)  # type: ignore[arg-type]


def need_tool(name: str) -> str:
    """A tool's path; in CI a missing tool fails the test (.ci/run installs it), else skips."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is required in CI (.ci/run installs it)")
        pytest.skip(f"{name} not installed")
    return path

"""Paths an agent names on disk → repository-relative paths to check (absolute, `..`, symlinks).

String-based os.path is used on purpose (ruff PTH ignored below): realpath/normpath on
text keep `..`-after-symlink semantics exact and avoid Path object churn on the hot path.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from capdaemon.capability.model import Capability, Violation, ViolationKind
from capdaemon.capability.scope import check_path
from capdaemon.globs import PathError, normalize_path


def _relative_to(root: str, path: str) -> str | None:
    if path == root:
        return ""
    prefix = root.rstrip(os.sep) + os.sep
    return path[len(prefix) :] if path.startswith(prefix) else None


@functools.lru_cache(maxsize=8)
def _roots(repo: str) -> tuple[str, str]:
    """(lexical absolute, real) forms of the repository root, computed once per process."""
    return os.path.abspath(repo), os.path.realpath(repo)


def check_disk_path(cap: Capability, repo: Path, raw: str) -> list[Violation]:
    """Check a path as an agent names it, relative to the repository root (or absolute inside it).

    The lexical form must be in scope, and so must the real file it reaches: a parent
    folder that is a symlink, or a path that is itself a symlink, is resolved against the
    repository and the target checked too; anything resolving outside the repository fails.
    """
    if "\x00" in raw or not raw:
        return [Violation(ViolationKind.INVALID_PATH, raw, "empty path or NUL byte")]
    repo_abs, repo_real = _roots(os.fspath(repo))
    rel: str | None = None
    is_abs = os.path.isabs(raw)
    if is_abs:
        absolute = os.path.normpath(raw)
        rel = _relative_to(repo_abs, absolute)
        if rel is None:
            rel = _relative_to(repo_real, absolute)
        if rel is None:
            return [
                Violation(
                    ViolationKind.OUTSIDE_REPO,
                    raw,
                    f"absolute path outside the repository {repo_abs}",
                )
            ]
        # the non-normalised tail keeps `..` after symlinks meaningful for realpath below
        tail = rel
    else:
        tail = raw
    try:
        norm = normalize_path(rel if rel is not None else raw)
    except PathError as exc:
        return [Violation(ViolationKind.INVALID_PATH, raw, str(exc))]
    out: list[Violation] = []
    v = check_path(cap, norm)
    if v is not None:
        out.append(v)
    real = os.path.realpath(os.path.join(repo_real, tail))
    real_rel = _relative_to(repo_real, real)
    if not real_rel:
        out.append(
            Violation(
                ViolationKind.OUTSIDE_REPO,
                norm,
                f"resolves through a symlink to {real}, outside the repository",
            )
        )
        return out
    real_rel = real_rel.replace(os.sep, "/")
    if real_rel != norm:
        t = check_path(cap, real_rel)
        if t is not None:
            out.append(
                Violation(
                    ViolationKind.SYMLINK_TARGET,
                    norm,
                    f"resolves through a symlink to {real_rel!r}: {t.reason}",
                    t.pattern,
                )
            )
    return out

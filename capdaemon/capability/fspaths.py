"""Paths an agent names on disk → repository-relative paths to check (absolute, `..`, symlinks).

String-based os.path is used on purpose (ruff PTH ignored below): realpath/normpath on
text keep `..`-after-symlink semantics exact and avoid Path object churn on the hot path.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from capdaemon.capability.model import Capability, Violation, ViolationKind
from capdaemon.capability.scope import check_path, looks_like_path
from capdaemon.globs import PathError, normalize_path

TYPE_CHECKING = False  # typing costs ~2 ms to import: scope-guard imports this module
if TYPE_CHECKING:
    from collections.abc import Callable


def _relative_to(root: str, path: str) -> str | None:
    if path == root:
        return ""
    prefix = root.rstrip(os.sep) + os.sep
    return path[len(prefix) :] if path.startswith(prefix) else None


@functools.lru_cache(maxsize=8)
def _roots(repo: str) -> tuple[str, str]:
    """(lexical absolute, real) forms of the repository root, computed once per process."""
    return os.path.abspath(repo), os.path.realpath(repo)


def _resolve(path: str) -> str:
    """The real path; OSError when it cannot be resolved (not when it does not exist yet)."""
    try:
        return os.path.realpath(path, strict=True)
    except FileNotFoundError:
        pass
    except NotADirectoryError:
        pass
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    while folder and not os.path.lexists(folder):  # the deepest folder that exists
        folder = os.path.dirname(folder)
    if folder:
        os.stat(folder)  # a loop or an unsearchable folder above raises here
    return real


def repo_root(start: Path) -> Path:
    """The work tree root of the git checkout holding `start`, found as
    `git rev-parse --show-toplevel` finds it (the nearest folder upward with a `.git` folder
    holding HEAD, or a `.git` file), without starting git (~10 ms): scope-guard runs before
    every agent action. No `.git` below the root can be made through scope-guard: a `.git`
    component is forbidden in every path.

    Raises NotACheckoutError naming `start` when no checkout holds it.
    """
    here = os.path.realpath(start)
    if not os.path.isdir(here):
        raise NotACheckoutError(f"{start} is not a directory")
    folder = here
    while True:
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot) and os.path.exists(os.path.join(dot, "HEAD")):
            return Path(folder)
        if os.path.isfile(dot):  # a linked work tree or submodule: `gitdir: …`
            return Path(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            raise NotACheckoutError(
                f"{start} is not inside a git checkout (no .git found above it); "
                "give --repo the task's work tree"
            )
        folder = parent


class NotACheckoutError(ValueError):
    """The folder scope-guard was given (or started in) is not inside a git checkout."""


def here_in(root: Path, cwd: Path) -> str | None:
    """The current folder relative to the checkout's root, when it is a folder below it."""
    rel = _relative_to(os.path.realpath(root), os.path.realpath(cwd))
    return rel or None


def check_named_path(
    cap: Capability, root: Path, raw: str, here: str | None, *, reading: bool = False
) -> list[Violation]:
    """A path as named, from the checkout's root; when named from a folder `here` below the
    root, the path as read from that folder must pass too (a program run there, or an
    editor, reads it so): both readings are checked, never the current folder's alone."""
    out = check_disk_path(cap, root, raw, reading=reading)
    if here and not os.path.isabs(raw):
        for v in check_disk_path(cap, root, f"{here}/{raw}", reading=reading):
            if v not in out:
                out.append(v)
    return out


def word_checker(
    cap: Capability, root: Path, here: str | None = None
) -> Callable[[str, str], list[Violation]]:
    """The `paths` callback of check_command: a command's path word checked on disk against
    the repository root ("read", "write", or "rev-or-read": a git revision unless a file
    of that name exists), and from `here` too when given (see check_named_path)."""

    def check(word: str, kind: str) -> list[Violation]:
        if kind == "rev-or-read":
            if not looks_like_path(word) and not os.path.lexists(os.path.join(root, word)):
                return []  # a revision, not a file
            kind = "read"
        if kind == "read" and word.rstrip("/") in (".", ""):
            return []  # the repository root, read
        return check_named_path(cap, root, word, here, reading=kind == "read")

    return check


def check_disk_path(
    cap: Capability, repo: Path, raw: str, *, reading: bool = False
) -> list[Violation]:
    """Check a path as an agent names it, relative to the repository root (or absolute inside it).

    The lexical form must be in scope, and so must the real file it reaches: a parent
    folder that is a symlink, or a path that is itself a symlink, is resolved against the
    repository and the target checked too; anything resolving outside the repository fails.
    With `reading` (a program's input), a path outside the allowed globs passes when it
    exists and neither it nor its target is forbidden. A path that cannot be resolved
    (a symlink loop, a folder that cannot be searched) is a violation naming the reason.
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
    try:
        real = _resolve(os.path.join(repo_real, tail))
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return [Violation(ViolationKind.INVALID_PATH, raw, f"cannot be resolved: {why}")]
    exists = reading and os.path.lexists(real)

    def check(path: str) -> Violation | None:
        found = check_path(cap, path)
        if found is not None and exists and found.kind is ViolationKind.NOT_ALLOWED:
            return None  # an existing input the program reads
        return found

    out: list[Violation] = []
    v = check(norm)
    if v is not None:
        out.append(v)
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
        t = check(real_rel)
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

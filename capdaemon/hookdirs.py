"""The folders git hooks run from in a checkout, and the named paths that fall in them.

`.husky/` and `.githooks/` (hook managers' folders) and the folder `core.hooksPath` names: the
next `git commit` runs what is there, outside any sandbox, so a task writes them only when it
says `hooks_writable: true`. git is asked for its configuration (every level, includes
too); nothing is run from the checkout.
"""

from __future__ import annotations

import os

from capdaemon.capability.fspaths import _relative_to, _resolve, _roots
from capdaemon.capability.model import HOOK_FOLDERS, Capability, Violation, ViolationKind

TYPE_CHECKING = False  # typing costs ~2 ms to import: scope-guard imports this module
if TYPE_CHECKING:
    from pathlib import Path


GIT_HOOKS = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
    "post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
    "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite",
    "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
    "p4-post-changelist", "p4-pre-submit", "post-index-change",
)  # fmt: skip


def hook_folders(root: str) -> list[str]:
    """Repository-relative folders (or, for hooks in the root itself, hook names) the next
    `git commit` in the checkout at `root` may run hooks from: `.husky`, `.githooks`, and
    what `core.hooksPath` names when inside the checkout. git reads its configuration (every
    level, includes too); nothing is run."""
    out = list(HOOK_FOLDERS)
    value = _git_config(root, "core.hooksPath")
    if not value:
        return out
    real_root = os.path.realpath(root)
    rel = _relative_to(real_root, os.path.realpath(os.path.join(real_root, value)))
    if rel == "":
        out += GIT_HOOKS
    elif rel is not None:
        out.append(rel)
    return out


def _git_config(root: str, key: str) -> str:
    """`git config --path --get KEY` in `root` ("" when unset or git fails), started with
    posix_spawn: scope-guard does not pay for importing subprocess (~20 ms)."""
    read, write = os.pipe()
    try:
        null = os.open(os.devnull, os.O_RDWR)
        try:
            actions = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, write, 1),
                       (os.POSIX_SPAWN_DUP2, null, 2)]  # fmt: skip
            argv = ["git", "-C", root, "config", "--path", "--get", key]
            pid = os.posix_spawnp("git", argv, os.environ, file_actions=actions)
        finally:
            os.close(null)
        os.close(write)
        write = -1
        chunks = []
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    except OSError:
        return ""
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    if os.waitstatus_to_exitcode(status) != 0:
        return ""
    return b"".join(chunks).decode(errors="surrogateescape").strip()


def hook_violations(
    cap: Capability, root: Path, raws: list[str], here: str | None
) -> list[Violation]:
    """The named paths (as read from the root, and from `here`) that lie in a folder git
    hooks run from (`hook_folders`), resolved through symlinks too; none when the task
    says `hooks_writable: true`."""
    if cap.hooks_writable or not raws:
        return []
    folders = tuple(f.lower() + "/" for f in hook_folders(os.fspath(root)))
    _, real_root = _roots(os.fspath(root))
    out: list[Violation] = []
    for raw in raws:
        for named in (raw, f"{here}/{raw}") if here and not os.path.isabs(raw) else (raw,):
            full = named if os.path.isabs(named) else os.path.join(real_root, named)
            try:
                real = _resolve(full)
            except OSError:
                continue  # check_disk_path names that failure
            seen = (_relative_to(real_root, os.path.normpath(full)), _relative_to(real_root, real))
            if any(r and (r.lower() + "/").startswith(folders) for r in seen):
                out.append(
                    Violation(
                        ViolationKind.FORBIDDEN,
                        raw,
                        "in a folder git hooks run from (.husky, .githooks or core.hooksPath); "
                        "the task may write it only with `hooks_writable: true`",
                    )
                )
                break
    return out

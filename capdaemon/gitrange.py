"""The git folders capdaemon runs git in instead of a checkout's own: empty configuration, no
hooks, no info/ (grafts, attributes, exclude), no shallow file; a checkout's refs and objects
are reached only as data."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from capdaemon.gitobjects import Objects, TreeDiff, find_git_dir, merge_base, tree_diff
from capdaemon.gitrun import GitError

__all__ = ["PristineRange", "objects_dirs", "pristine_range", "ref_view"]

_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"


def objects_dirs(repo: Path, extra: Sequence[Path] = ()) -> list[Path]:
    """The object folder of the checkout `repo`, then those of the `extra` repositories that
    exist (a folder that is gone is skipped: its objects are then simply not found)."""
    dirs = [find_git_dir(repo)[1] / "objects"]
    for other in extra:
        try:
            dirs.append(find_git_dir(other)[1] / "objects")
        except GitError:
            continue
    return dirs


def _bare(root: Path) -> Path:
    gitdir = root / "git"
    (gitdir / "objects" / "info").mkdir(parents=True)
    (gitdir / "refs").mkdir()
    (gitdir / "config").write_text(_CONFIG, encoding="utf-8")
    (gitdir / "HEAD").write_text("ref: refs/heads/capdaemon-none\n", encoding="utf-8")
    return gitdir


@contextmanager
def ref_view(repo: Path, extra: Sequence[Path] = ()) -> Iterator[Path]:
    """A git dir naming the checkout's HEAD, refs and objects with nothing else of it: refs
    resolve as in the checkout, while its config, hooks, shallow file and grafts are absent."""
    gitdir, common = find_git_dir(repo)
    with tempfile.TemporaryDirectory(prefix="capdaemon-refs-") as tmp:
        view = _bare(Path(tmp))
        (view / "refs").rmdir()
        (view / "refs").symlink_to(common / "refs", target_is_directory=True)
        if (common / "packed-refs").is_file():
            (view / "packed-refs").symlink_to(common / "packed-refs")
        head = (gitdir / "HEAD").read_bytes()[:4096] if (gitdir / "HEAD").is_file() else b""
        (view / "HEAD").write_bytes(head or b"ref: refs/heads/capdaemon-none\n")
        alternates = "".join(f"{d}\n" for d in objects_dirs(repo, extra))
        (view / "objects" / "info" / "alternates").write_text(alternates, encoding="utf-8")
        yield view


@dataclass(frozen=True)
class PristineRange:
    """A base...head range read from objects: the tree diff, and a git dir holding exactly the
    objects read for it (hash-checked) in which git may be run on the two trees."""

    merge_base: str
    diff: TreeDiff
    git_dir: Path


@contextmanager
def pristine_range(
    repo: Path, base_sha: str, head_sha: str, extra: Sequence[Path] = ()
) -> Iterator[PristineRange]:
    """The range `base_sha...head_sha` of the checkout `repo`: merge base by the commits' own
    parents, every changed entry (gitlinks included) and a private git dir to diff them in."""
    objs = Objects(Path(repo), objects_dirs(repo, extra))
    mb = merge_base(objs, base_sha, head_sha)
    diff = tree_diff(objs, objs.commit(mb).tree, objs.commit(head_sha).tree)
    with tempfile.TemporaryDirectory(prefix="capdaemon-objects-") as tmp:
        gitdir = _bare(Path(tmp))
        objs.copy_to(gitdir / "objects")
        yield PristineRange(mb, diff, gitdir)


def read_blob_at(repo: Path, commit: str, path: str) -> bytes | None:
    """The bytes of `path` in `commit` read from the objects (hash-checked); None when the
    path is absent or not a file."""
    objs = Objects(Path(repo), objects_dirs(repo))
    sha = objs.commit(commit).tree
    parts = os.fsencode(path).split(b"/")
    for i, part in enumerate(parts):
        entry = next((e for e in objs.tree(sha) if e[1] == part), None)
        if entry is None:
            return None
        mode, _, sha = entry
        last = i == len(parts) - 1
        if last and mode.startswith(b"10"):
            return objs.blob(sha)
        if last or mode != b"40000":
            return None
    return None

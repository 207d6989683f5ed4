"""Read a local git range as a PR shows it: the changed files (modes, counts, patches).

The range is read from the objects (gitrange): a checkout's configuration, hooks, shallow file,
grafts, replace refs and attributes steer nothing, and submodule pointers are always compared.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from capdaemon.gitobjects import Objects, TreeDiff
from capdaemon.gitobjects import merge_base as _objects_merge_base
from capdaemon.gitrange import objects_dirs, pristine_range, ref_view
from capdaemon.gitrun import GitError, git_env, run_git
from capdaemon.languages import wants_whole_files
from capdaemon.model import MODE_SUBMODULE, FileChange, FileStatus

__all__ = [
    "GitError",
    "diff_range",
    "git_env",
    "merge_base",
    "resolve",
    "resolve_many",
    "run_git",
]

ZERO_SHA = "0" * 40
_NULL_MODE = "000000"
# Options that make git's output independent of the user's configuration.
_DIFF_FIXED = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--ignore-submodules=none",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "-M",
    "-C",
)


def _check_ref(repo: Path, ref: str) -> None:
    if not ref or ref.startswith("-") or "\0" in ref or "\n" in ref:
        raise GitError(f"invalid revision {ref!r} in {repo}")


# Commits that resolved once stay commits: a full sha already seen needs no second git call.
_KNOWN_COMMITS: set[tuple[str, str]] = set()
_HEX = frozenset("0123456789abcdef")


def _known(repo: Path, ref: str) -> bool:
    return len(ref) in (40, 64) and set(ref) <= _HEX and (str(repo), ref) in _KNOWN_COMMITS


def resolve(repo: Path, ref: str, *, extra: Sequence[Path] = ()) -> str:
    """The commit sha `ref` names in `repo`; GitError when it is missing or repo is no git repo."""
    return resolve_many(repo, [ref], extra=extra)[0]


def resolve_many(repo: Path, refs: Sequence[str], *, extra: Sequence[Path] = ()) -> list[str]:
    """The commit shas of several refs from one git process (GitError names the first bad ref).

    Refs are read in a view of the checkout with none of its configuration, grafts or shallow
    file; `extra` repositories' objects may hold the commits too (a base recorded elsewhere)."""
    repo = Path(repo)
    for ref in refs:
        _check_ref(repo, ref)
    todo = [r for r in dict.fromkeys(refs) if not _known(repo, r)]
    found: dict[str, str] = {}
    if todo:
        with ref_view(repo, extra) as view:
            proc = run_git(
                repo,
                ["rev-parse", "--end-of-options", *(f"{r}^{{commit}}" for r in todo)],
                ref=todo[0],
                ok_codes=(0, 1, 128),
                git_dir=view,
            )
            shas = proc.stdout.decode("ascii", "replace").split()
            if proc.returncode == 0 and len(shas) == len(todo):
                found = dict(zip(todo, shas, strict=True))
            else:  # names the bad ref exactly
                found = {r: _resolve_one(repo, view, r) for r in todo}
        for sha in found.values():
            if len(sha) not in (40, 64):
                raise GitError(f"unexpected git rev-parse output {sha!r} in {repo}")
            _KNOWN_COMMITS.add((str(repo), sha))
    return [found.get(r, r) for r in refs]


def _resolve_one(repo: Path, view: Path, ref: str) -> str:
    proc = run_git(
        repo,
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        ref=ref,
        ok_codes=(0, 1, 128),
        git_dir=view,
    )
    if proc.returncode != 0:
        raise GitError(f"unknown revision {ref!r} in {repo}")
    return proc.stdout.decode("ascii", "replace").strip()


def merge_base(repo: Path, base: str, head: str) -> str:
    """The merge base of `base` and `head` (the newest, when there are several), walking the
    parents the commit objects list (no grafts, shallow file or commit-graph)."""
    base_sha, head_sha = resolve_many(repo, [base, head])
    objs = Objects(Path(repo), objects_dirs(repo))
    return _objects_merge_base(objs, base_sha, head_sha)


# ---------------------------------------------------------------------------
# diff


@dataclass(frozen=True)
class _Git:
    """git run on a private git dir, errors naming the checkout it stands for."""

    repo: Path
    git_dir: Path

    def run(
        self, args: Sequence[str | bytes], *, ref: str | None = None, input: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        return run_git(self.repo, args, ref=ref, input=input, git_dir=self.git_dir)


def _fsdecode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


# one `git diff --raw` entry: (old_mode, new_mode, old_sha, new_sha, letter, path, previous)
RawEntry = tuple[str, str, str, str, str, str, str | None]


def _parse_raw(out: bytes) -> list[RawEntry]:
    """Parse `git diff --raw -z`: (old_mode, new_mode, old_sha, new_sha, letter, path, previous)."""
    parts = out.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    entries: list[RawEntry] = []
    i = 0
    while i < len(parts):
        meta = parts[i]
        if not meta.startswith(b":"):
            raise GitError(f"unexpected git diff --raw output near {meta[:60]!r}")
        old_mode, new_mode, old_sha, new_sha, status = meta[1:].decode("ascii").split(" ")
        letter = status[:1]
        if letter in ("R", "C"):
            previous: str | None = _fsdecode(parts[i + 1])
            path = _fsdecode(parts[i + 2])
            i += 3
        else:
            previous = None
            path = _fsdecode(parts[i + 1])
            i += 2
        entries.append((old_mode, new_mode, old_sha, new_sha, letter, path, previous))
    return entries


def _parse_numstat(out: bytes) -> list[tuple[int | None, int | None, str]]:
    """Parse `git diff --numstat -z`: (additions, deletions, new path); None counts mean binary."""
    parts = out.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    result = []
    i = 0
    while i < len(parts):
        added, deleted, path_raw = parts[i].split(b"\t", 2)
        if path_raw == b"":  # rename/copy: old and new path follow as separate fields
            path_raw = parts[i + 2]
            i += 3
        else:
            i += 1
        a = None if added == b"-" else int(added)
        d = None if deleted == b"-" else int(deleted)
        result.append((a, d, _fsdecode(path_raw)))
    return result


def _status_of(letter: str, old_mode: str, new_mode: str, old_sha: str, new_sha: str) -> FileStatus:
    if letter == "A":
        return FileStatus.ADDED
    if letter == "D":
        return FileStatus.REMOVED
    if letter == "R":
        return FileStatus.RENAMED
    if letter == "C":
        return FileStatus.COPIED
    if letter == "T":
        return FileStatus.CHANGED
    if letter == "M":
        if old_sha == new_sha and old_mode != new_mode:
            return FileStatus.CHANGED  # mode-only change
        return FileStatus.MODIFIED
    # U (unmerged), X (unknown), B (broken pair) should not occur between two commits.
    return FileStatus.MODIFIED


def _split_patches(out: bytes) -> list[bytes]:
    """Split `git diff -p` output into one chunk per `diff --git` header."""
    if not out:
        return []
    marker = b"\ndiff --git "
    if not out.startswith(b"diff --git "):
        raise GitError("unexpected git diff -p output")
    chunks = []
    start = 0
    while True:
        nxt = out.find(marker, start)
        if nxt == -1:
            chunks.append(out[start:])
            break
        chunks.append(out[start : nxt + 1])
        start = nxt + 1
    return chunks


def _hunks(chunk: bytes) -> str | None:
    """The hunk text of one file's chunk (GitHub's `patch` form); None for a binary file."""
    # Header lines never contain a raw newline inside a path (git quotes such paths).
    at = chunk.find(b"\n@@ ")
    if at == -1:
        if b"\nBinary files " in chunk or b"\nGIT binary patch" in chunk:
            return None
        return ""  # pure rename / mode change / empty file: no hunks
    body = chunk[at + 1 :]
    if body.endswith(b"\n"):
        body = body[:-1]
    return body.decode("utf-8", "replace")


def _patches_one_run(
    g: _Git, mb: str, head_sha: str, entries: list[RawEntry]
) -> list[str | None] | None:
    """Patches for every entry from ONE git process; None when the chunks don't line up."""
    proc = g.run(["diff", "-p", "-U3", *_DIFF_FIXED, mb, head_sha], ref=head_sha)
    chunks = _split_patches(proc.stdout)
    expected = sum(2 if e[4] == "T" else 1 for e in entries)
    if len(chunks) != expected:
        return None
    out: list[str | None] = []
    i = 0
    for e in entries:
        if e[4] == "T":  # git shows a type change as a deletion then a creation
            first, second = _hunks(chunks[i]), _hunks(chunks[i + 1])
            i += 2
            if first is None or second is None:
                out.append(None)
            else:
                out.append("\n".join(p for p in (first, second) if p))
        else:
            out.append(_hunks(chunks[i]))
            i += 1
    return out


def _patch_for_path(g: _Git, mb: str, head_sha: str, entry: RawEntry) -> str | None:
    """The patch of one entry (fallback path: one git process per file)."""
    path, previous = entry[5], entry[6]
    paths = [path] if previous is None else [previous, path]
    proc = g.run(
        ["diff", "-p", "-U3", *_DIFF_FIXED, mb, head_sha, "--", *[os.fsencode(p) for p in paths]],
        ref=head_sha,
    )
    chunks = _split_patches(proc.stdout)
    if not chunks:
        return ""
    parts = [_hunks(c) for c in chunks]
    if any(p is None for p in parts):
        return None
    return "\n".join(p for p in parts if p)


def _count(patch: str) -> tuple[int, int]:
    """(added, removed) lines of a hunk text, as `git diff --numstat` counts them."""
    added = removed = 0
    for line in patch.split("\n"):
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:8000]


def _cat_blobs(g: _Git, shas: list[str]) -> dict[str, str | None]:
    """Blob texts by sha from one `git cat-file --batch` process; None for binary/missing."""
    wanted = list(dict.fromkeys(s for s in shas if s and s != ZERO_SHA))
    if not wanted:
        return {}
    proc = g.run(["cat-file", "--batch"], input="".join(f"{s}\n" for s in wanted).encode())
    out = proc.stdout
    result: dict[str, str | None] = {}
    pos = 0
    for sha in wanted:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode("ascii", "replace").split()
        pos = nl + 1
        if len(header) < 3 or header[1] == "missing":
            result[sha] = None
            continue
        size = int(header[2])
        data = out[pos : pos + size]
        pos += size + 1  # trailing newline after the contents
        result[sha] = (
            None if header[1] != "blob" or _is_binary(data) else data.decode("utf-8", "replace")
        )
    return result


def _wanted(
    entries: Sequence[RawEntry],
    patch_list: Sequence[str | None] | None,
    contents_for: Callable[[str], bool] | None,
) -> list[bool]:
    """Which entries get base/head contents: `contents_for`'s paths, and modified files where
    the comment-only carve-out may apply (their patch looks like comment edits)."""
    want = [contents_for is not None and contents_for(e[5]) for e in entries]
    if patch_list is not None:
        for idx, e in enumerate(entries):
            if not want[idx] and e[4] == "M" and wants_whole_files(e[5], patch_list[idx]):
                want[idx] = True
    return want


def _contents(g: _Git, entries: Sequence[RawEntry], want: list[bool]) -> dict[str, str | None]:
    """The texts of the wanted entries' old and new blobs, by sha."""
    if not any(want):
        return {}
    wanted = []
    for (old_mode, new_mode, old_sha, new_sha, *_rest), w in zip(entries, want, strict=True):
        if w:
            if old_mode != MODE_SUBMODULE:
                wanted.append(old_sha)
            if new_mode != MODE_SUBMODULE:
                wanted.append(new_sha)
    return _cat_blobs(g, wanted)


def diff_range(
    repo: Path,
    base: str,
    head: str,
    *,
    patches: bool = True,
    contents_for: Callable[[str], bool] | None = None,
    extra: Sequence[Path] = (),
) -> list[FileChange]:
    """The files changed by `base...head` (from the merge base to head), as a PR lists them.

    Renames/copies carry both paths; modes are git's octal strings (None on the absent side);
    `patch` is the hunk text (None for binary files); base/head contents are read only for
    paths where `contents_for(path)` is true (the previous path's blob for the base side).
    The range is read from hash-checked objects (`extra` repositories may hold some) and git
    runs only on a private copy of them; GitError when git would leave out a changed path.
    """
    repo = Path(repo)
    base_sha, head_sha = resolve_many(repo, [base, head], extra=extra)
    with pristine_range(repo, base_sha, head_sha, extra) as rng:
        g = _Git(repo, rng.git_dir)
        old, new = rng.diff.old_tree, rng.diff.new_tree
        raw = g.run(["diff", "-z", "--raw", "--no-abbrev", *_DIFF_FIXED, old, new], ref=head).stdout
        entries = _parse_raw(raw)
        _check_complete(repo, rng.diff, entries)
        if not entries:
            return []
        counts: list[tuple[int | None, int | None]]
        patch_list: list[str | None] | None = None
        if patches:
            patch_list = _patches_one_run(g, old, new, entries)
            if patch_list is None:
                patch_list = [_patch_for_path(g, old, new, e) for e in entries]
            counts = [(None, None) if p is None else _count(p) for p in patch_list]
        else:
            counts = _numstat_counts(g, old, new, head, entries)
        want = _wanted(entries, patch_list, contents_for)
        contents = _contents(g, entries, want)
    return [
        _file_change(entry, counts[idx], patch_list, idx, contents if want[idx] else None)
        for idx, entry in enumerate(entries)
    ]


def _check_complete(repo: Path, diff: TreeDiff, entries: Sequence[RawEntry]) -> None:
    """Every path whose entry differs between the trees is in git's list (as a path, or as
    the source of a rename); GitError naming the first one left out."""
    listed = {e[5] for e in entries} | {e[6] for e in entries if e[4] == "R" and e[6]}
    missing = sorted(p for p in map(_fsdecode, diff.paths()) if p not in listed)
    if missing:
        raise GitError(
            f"git's diff of {repo} left out {len(missing)} changed path(s), first "
            f"{missing[0]!r}; the range is not read"
        )


def _numstat_counts(
    g: _Git, mb: str, head_sha: str, head: str, entries: Sequence[RawEntry]
) -> list[tuple[int | None, int | None]]:
    """Added/deleted line counts per entry from `git diff --numstat` (None for binary)."""
    by_path: dict[str, tuple[int | None, int | None]] = {}
    numstat = g.run(["diff", "-z", "--numstat", *_DIFF_FIXED, mb, head_sha], ref=head)
    for a, d, p in _parse_numstat(numstat.stdout):
        if p in by_path:  # same path twice (should not happen): add up, binary wins
            pa, pd = by_path[p]
            a = None if a is None or pa is None else a + pa
            d = None if d is None or pd is None else d + pd
        by_path[p] = (a, d)
    return [by_path.get(e[5], (0, 0)) for e in entries]


def _file_change(
    entry: RawEntry,
    count: tuple[int | None, int | None],
    patch_list: list[str | None] | None,
    idx: int,
    contents: dict[str, str | None] | None,
) -> FileChange:
    """One FileChange of a raw diff entry; `contents` is None when its blobs were not read."""
    old_mode, new_mode, old_sha, new_sha, letter, path, previous = entry
    a, d = count
    binary = a is None or d is None
    patch = None if patch_list is None or binary else patch_list[idx]
    return FileChange(
        path=path,
        status=_status_of(letter, old_mode, new_mode, old_sha, new_sha),
        previous_path=previous,
        old_mode=None if old_mode == _NULL_MODE else old_mode,
        new_mode=None if new_mode == _NULL_MODE else new_mode,
        additions=a or 0,
        deletions=d or 0,
        patch=patch,
        base_content=contents.get(old_sha) if contents is not None else None,
        head_content=contents.get(new_sha) if contents is not None else None,
    )

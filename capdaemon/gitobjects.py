"""A repository's history read from its objects alone: every object's hash checked on read, no
configuration, shallow file, grafts, replace refs or commit-graph consulted, nothing run."""

from __future__ import annotations

import hashlib
import heapq
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from capdaemon.gitrun import GitError

__all__ = ["Change", "Objects", "TreeDiff", "find_git_dir", "merge_base", "tree_diff"]

MODE_TREE = b"40000"
MODE_GITLINK = b"160000"
_TYPES = {pygit2.GIT_OBJECT_COMMIT: "commit", pygit2.GIT_OBJECT_TREE: "tree",
          pygit2.GIT_OBJECT_BLOB: "blob", pygit2.GIT_OBJECT_TAG: "tag"}  # fmt: skip
_NO_SHA = b"\0" * 20


def find_git_dir(repo: Path) -> tuple[Path, Path]:
    """(git dir, common dir) of the work tree, bare repository or linked worktree at `repo` or
    above it, as git finds them; GitError 'not a git repository: DIR' otherwise."""
    repo = Path(repo)
    if not repo.is_dir():
        raise GitError(f"not a git repository: {repo} (no such directory)")
    for here in (repo.absolute(), *repo.absolute().parents):
        dot = here / ".git"
        if dot.is_file():
            text = dot.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                raise GitError(f"not a git repository: {repo} ({dot} names no git dir)")
            gitdir = (here / text[len("gitdir:") :].strip()).resolve()
        elif dot.is_dir():
            gitdir = dot
        elif (here / "HEAD").is_file() and (here / "objects").is_dir():
            gitdir = here
        else:
            continue
        common = gitdir
        if (gitdir / "commondir").is_file():
            rel = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
            common = (gitdir / rel).resolve()
        if not (common / "objects").is_dir():
            raise GitError(f"not a git repository: {repo} ({common} has no objects)")
        return gitdir, common
    raise GitError(f"not a git repository: {repo}")


@dataclass(frozen=True)
class Commit:
    """The fields of a commit object the range reading needs."""

    tree: str
    parents: tuple[str, ...]
    time: int


class Objects:
    """Objects of one repository (and any further object folders), each checked against its
    hash as it is read; what was read can be copied into another object store."""

    def __init__(self, repo: Path, objects_dirs: Iterable[Path]) -> None:
        pygit2.option(pygit2.enums.Option.ENABLE_STRICT_HASH_VERIFICATION, True)
        dirs = list(objects_dirs)
        self.repo = repo
        try:
            self._odb = pygit2.Odb(str(dirs[0]))
            for extra in dirs[1:]:
                self._odb.add_disk_alternate(str(extra))
        except (pygit2.GitError, OSError) as exc:
            raise GitError(f"cannot read the objects of {repo}: {exc}") from None
        self._commits: dict[str, Commit] = {}
        self.read_raw: dict[str, tuple[int, bytes]] = {}  # trees and blobs read, by sha

    def read(self, sha: str, want: int) -> bytes:
        """The raw data of object `sha`, which must be of type `want` (GitError otherwise)."""
        try:
            kind, data = self._odb.read(sha)
        except KeyError:
            hint = " (a shallow clone? the history down to the merge base is needed)"
            what = "commit" if want == pygit2.GIT_OBJECT_COMMIT else "object"
            raise GitError(
                f"{what} {sha} is missing from {self.repo}{hint if what == 'commit' else ''}"
            ) from None
        except (pygit2.GitError, ValueError) as exc:
            raise GitError(f"object {sha} in {self.repo} cannot be read: {exc}") from None
        if int(kind) != want:
            raise GitError(
                f"object {sha} in {self.repo} is a {_TYPES.get(int(kind), kind)}, "
                f"not a {_TYPES[want]}"
            )
        return data

    def has(self, sha: str) -> bool:
        """True when `sha` is in one of the object folders (its content is not checked yet)."""
        try:
            return bool(self._odb.exists(sha))
        except ValueError:
            return False

    def commit_raw(self, sha: str) -> bytes:
        """The raw bytes of commit `sha` (hash checked)."""
        return self.read(sha, pygit2.GIT_OBJECT_COMMIT)

    def commit(self, sha: str) -> Commit:
        """The commit `sha`, its parents as the object lists them (never grafted)."""
        found = self._commits.get(sha)
        if found is None:
            found = _parse_commit(self.commit_raw(sha), sha, self.repo)
            self._commits[sha] = found
        return found

    def tree(self, sha: str) -> list[tuple[bytes, bytes, str]]:
        """The entries (mode, name, sha) of tree `sha`, kept for a later copy."""
        data = self.read(sha, pygit2.GIT_OBJECT_TREE)
        self.read_raw[sha] = (pygit2.GIT_OBJECT_TREE, data)
        return _parse_tree(data, sha, self.repo)

    def blob(self, sha: str) -> bytes:
        """The bytes of blob `sha` (hash checked)."""
        return self.read(sha, pygit2.GIT_OBJECT_BLOB)

    def keep_blob(self, sha: str) -> None:
        """Read blob `sha` (hash checked) to be copied later."""
        if sha not in self.read_raw:
            self.read_raw[sha] = (pygit2.GIT_OBJECT_BLOB, self.blob(sha))

    def copy_to(self, objects_dir: Path) -> None:
        """Write every tree and blob read so far into the object folder `objects_dir`, as one
        pack (a single file pair: far cheaper than a loose file per object)."""
        write_pack(objects_dir / "pack", self.read_raw)


def write_pack(pack_dir: Path, objects: dict[str, tuple[int, bytes]]) -> None:
    """A version-2 pack of `objects` (sha -> (type, data), no deltas) and its index."""
    body = bytearray(b"PACK" + struct.pack(">II", 2, len(objects)))
    entries: list[tuple[bytes, int, int]] = []  # (sha, crc32, offset)
    for sha, (kind, data) in objects.items():
        size = len(data)
        head = bytearray([(kind << 4) | (size & 0x0F)])
        size >>= 4
        while size:
            head[-1] |= 0x80
            head.append(size & 0x7F)
            size >>= 7
        packed = bytes(head) + zlib.compress(data, 1)
        entries.append((bytes.fromhex(sha), zlib.crc32(packed), len(body)))
        body += packed
    pack_sum = hashlib.sha1(body, usedforsecurity=False).digest()
    body += pack_sum
    entries.sort()
    fanout = [0] * 256
    for raw, _, _ in entries:
        fanout[raw[0]] += 1
    total = 0
    for i in range(256):
        total += fanout[i]
        fanout[i] = total
    small, large = bytearray(), bytearray()
    for _, _, off in entries:
        if off < 0x80000000:
            small += struct.pack(">I", off)
        else:
            small += struct.pack(">I", 0x80000000 | len(large) // 8)
            large += struct.pack(">Q", off)
    idx = bytearray(b"\377tOc" + struct.pack(">I", 2) + struct.pack(">256I", *fanout))
    idx += b"".join(e[0] for e in entries)
    idx += b"".join(struct.pack(">I", e[1]) for e in entries)
    idx += small + large + pack_sum
    idx += hashlib.sha1(idx, usedforsecurity=False).digest()
    name = pack_dir / f"pack-{pack_sum.hex()}"
    pack_dir.mkdir(parents=True, exist_ok=True)
    name.with_suffix(".pack").write_bytes(body)
    name.with_suffix(".idx").write_bytes(idx)


def _parse_commit(data: bytes, sha: str, repo: Path) -> Commit:
    head = data.split(b"\n\n", 1)[0]
    tree = ""
    parents: list[str] = []
    when = 0
    for line in head.split(b"\n"):
        key, _, value = line.partition(b" ")
        if key == b"tree":
            tree = value.decode("ascii", "replace")
        elif key == b"parent":
            parents.append(value.decode("ascii", "replace"))
        elif key == b"committer":
            stamp = value.rsplit(b" ", 2)
            when = int(stamp[1]) if len(stamp) == 3 and stamp[1].isdigit() else 0
    if len(tree) != 40 or any(len(p) != 40 for p in parents):
        raise GitError(f"commit {sha} in {repo} is malformed")
    return Commit(tree, tuple(parents), when)


def _parse_tree(data: bytes, sha: str, repo: Path) -> list[tuple[bytes, bytes, str]]:
    entries = []
    pos, end = 0, len(data)
    while pos < end:
        sp = data.find(b" ", pos)
        nul = data.find(b"\0", sp + 1)
        if sp == -1 or nul == -1 or nul + 21 > end:
            raise GitError(f"tree {sha} in {repo} is malformed")
        raw = data[nul + 1 : nul + 21]
        entries.append((data[pos:sp], data[sp + 1 : nul], raw.hex()))
        pos = nul + 21
    return entries


# ---------------------------------------------------------------------------
# merge base: git's paint-down walk over the commits' own parents

_P1, _P2, _STALE = 1, 2, 4


def merge_base(objs: Objects, one: str, two: str) -> str:
    """The best common ancestor of two commits (the newest when there are several), walking
    the parents each commit object lists; GitError when they share no history."""
    if one == two:
        return one
    flags: dict[str, int] = {one: _P1, two: _P2}
    queue: list[tuple[int, int, str]] = []
    counter = 0
    for sha in (one, two):
        heapq.heappush(queue, (-objs.commit(sha).time, counter, sha))
        counter += 1
    found: list[str] = []
    while any(not flags[s] & _STALE for _, _, s in queue):
        _, _, sha = heapq.heappop(queue)
        mark = flags[sha] & (_P1 | _P2 | _STALE)
        if mark & (_P1 | _P2) == (_P1 | _P2):
            if sha not in found and not mark & _STALE:
                found.append(sha)
            mark |= _STALE
        for parent in objs.commit(sha).parents:
            old = flags.get(parent, 0)
            if old & mark == mark:
                continue
            flags[parent] = old | mark
            heapq.heappush(queue, (-objs.commit(parent).time, counter, parent))
            counter += 1
    best = [s for s in found if not any(_reaches(objs, o, s) for o in found if o != s)]
    if not best:
        raise GitError(f"no merge base between {one[:12]} and {two[:12]} in {objs.repo}")
    return best[0]


def _reaches(objs: Objects, start: str, target: str) -> bool:
    """True when `target` is an ancestor of `start` (only asked with several merge bases)."""
    floor = objs.commit(target).time
    seen = {start}
    todo = [start]
    while todo:
        sha = todo.pop()
        for parent in objs.commit(sha).parents:
            if parent == target:
                return True
            if parent not in seen and objs.commit(parent).time >= floor:
                seen.add(parent)
                todo.append(parent)
    return False


# ---------------------------------------------------------------------------
# tree diff: every entry whose mode or object differs, gitlinks included


@dataclass(frozen=True)
class Change:
    """One path whose entry differs between two trees (empty mode: absent on that side)."""

    path: bytes
    old_mode: bytes
    new_mode: bytes
    old_sha: str
    new_sha: str


@dataclass
class TreeDiff:
    """The changed entries between two trees, the trees' own shas and the paths changed."""

    old_tree: str
    new_tree: str
    changes: list[Change] = field(default_factory=list)

    def paths(self) -> set[bytes]:
        """Every path the diff touches."""
        return {c.path for c in self.changes}


def tree_diff(objs: Objects, old_tree: str, new_tree: str) -> TreeDiff:
    """Compare two trees entry by entry; blobs of changed files are read (and checked) too."""
    diff = TreeDiff(old_tree, new_tree)
    diff.changes.extend(_walk(objs, old_tree, new_tree, b""))
    for c in diff.changes:
        for mode, sha in ((c.old_mode, c.old_sha), (c.new_mode, c.new_sha)):
            if mode and mode != MODE_GITLINK:
                objs.keep_blob(sha)
    return diff


def _entries(objs: Objects, sha: str | None) -> dict[bytes, tuple[bytes, str]]:
    return {} if sha is None else {name: (mode, s) for mode, name, s in objs.tree(sha)}


def _walk(objs: Objects, old: str | None, new: str | None, prefix: bytes) -> Iterator[Change]:
    a, b = _entries(objs, old), _entries(objs, new)
    for name in sorted(a.keys() | b.keys()):
        am, asha = a.get(name, (b"", ""))
        bm, bsha = b.get(name, (b"", ""))
        if (am, asha) != (bm, bsha):
            yield from _entry_changes(objs, prefix + name, (am, asha), (bm, bsha))


def _entry_changes(
    objs: Objects, path: bytes, old: tuple[bytes, str], new: tuple[bytes, str]
) -> Iterator[Change]:
    """One differing entry: a tree on either side is walked; a non-tree side is a change."""
    a_tree, b_tree = old[0] == MODE_TREE, new[0] == MODE_TREE
    if a_tree or b_tree:
        yield from _walk(objs, old[1] if a_tree else None, new[1] if b_tree else None, path + b"/")
    old_mode, old_sha = (b"", "") if a_tree else old
    new_mode, new_sha = (b"", "") if b_tree else new
    if old_mode or new_mode:
        yield Change(path, old_mode, new_mode, old_sha, new_sha)

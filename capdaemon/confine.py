"""A task's scope as Landlock rules: which folders and files of a checkout a command may write.

Landlock only grants, and a right granted on a folder holds for everything beneath it,
names created later included. So the checkout is walked once and each folder gets the
finest grant that is still true for every path it would cover:

- **whole folder** (create, write, remove, rename, link): every possible path below it is
  allowed and none can be forbidden (proved on the glob text, `capability.subtree`), and
  no file below it has a second hard link;
- **existing files** (remove, write, truncate; no create, rename in or link): every path
  that exists below it now is in scope, but a new name might not be (e.g. `*.pem` is
  forbidden at any depth), and every file below is regular with one link (or a symlink).
  The program can add no name there, so what it can write is what was checked; one rule
  for the folder instead of one per file. (A name that another, unconfined process adds
  there during the run is writable too, as a hard link is below a whole folder: a process
  outside the sandbox is not what the sandbox holds);
- **remove only** (plus write on its files): as above, but some file below is not
  writable as it is (a second hard link, a fifo, a device);
- **single file** (write, truncate): an existing regular file in scope with one link
  (a second hard link could be a forbidden name for the same file);
- nothing otherwise. Symlinks are never granted: a write through one is judged by the
  kernel at its target.

The walk judges a folder's files once per folder, against only the globs that may reach
that folder (`capability.subtree.may_reach`, narrowed from its parent's). The proof of no
second hard link stays one `lstat` per file: a link's other name may be anywhere on the
file system (a file outside the checkout), and a new link changes the file's inode, not its
folder, so no cheaper sign (a folder's times, a cache) would show it.

Outside the checkout: a private temporary folder, and writing to the harmless devices.
Reading, listing and running stay unrestricted. The repository's `.git` and the state
directory (when inside the checkout) are never writable.
"""

from __future__ import annotations

import os
import stat

from capdaemon import landlock
from capdaemon.capability.scope import check_path
from capdaemon.capability.subtree import covers_below, may_reach
from capdaemon.globs import RegexGlobSet, fold_path, is_plain_ascii

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from collections.abc import Callable

    from capdaemon.capability.model import Capability

    _Reach = tuple[tuple[str, ...], tuple[str, ...]]  # (forbidden, allowed) globs
    _FileOk = Callable[[str, str], bool]  # (name, repository-relative path) -> in scope

WHOLE, EXISTING, REMOVE, FILE = "whole", "existing", "remove", "file"
# Character devices every program may write to (the terminal, the bit bucket).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/random",
           "/dev/urandom")  # fmt: skip
TERMINALS = "/dev/pts"


class Grant:
    """One rule: `kind` (WHOLE, EXISTING, REMOVE, FILE) on `path` (absolute), `rel` (in the
    repo or "")."""

    __slots__ = ("kind", "path", "rel")

    def __init__(self, kind: str, path: str, rel: str = "") -> None:
        self.kind = kind
        self.path = path
        self.rel = rel

    def __repr__(self) -> str:
        return f"Grant({self.kind!r}, {self.rel or self.path!r})"


class Plan:
    """The grants for one checkout, and what was refused on purpose (`held_back`)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.grants: list[Grant] = []
        self.held_back: list[str] = []  # in-scope files not granted (hard links)

    def writable(self) -> list[str]:
        """Repository-relative grants, as `path/**` (whole), `path/` (remove) and `path`."""
        shown = {
            WHOLE: "{}/**",
            EXISTING: "{}/ (existing files only)",
            REMOVE: "{}/ (remove only)",
            FILE: "{}",
        }
        return [shown[g.kind].format(g.rel) for g in self.grants if g.rel]


def _refuse_file(_name: str, _rel: str) -> bool:
    return False


def _narrow(reach: _Reach, segs: tuple[str, ...]) -> _Reach:
    """The globs of `reach` (which may reach the parent folder) that may reach `segs`: a
    glob that cannot reach a folder cannot reach its subfolders either."""
    return (
        tuple(g for g in reach[0] if may_reach((g,), segs, folded=True)),
        tuple(g for g in reach[1] if may_reach((g,), segs, folded=False)),
    )


# What a walked folder proved about everything that exists below it (ordered: min() joins).
_NO, _SOME, _PLAIN = 0, 1, 2  # not all in scope; all in scope; all in scope and writable as is


class _Walker:
    def __init__(self, cap: Capability, root: str, never: tuple[str, ...]) -> None:
        self.cap = cap
        self.root = root
        never = (".git", *never)
        self.never = tuple(fold_path(n) + "/" for n in never)
        self.forbidden = (*cap.forbidden_paths, *(f"/{n}" for n in never))
        self.allowed = ("**",) if cap.legacy else cap.paths
        self.plan = Plan(root)

    def _never(self, rel: str) -> bool:
        return (fold_path(rel) + "/").startswith(self.never)

    def _path_ok(self, rel: str) -> bool:
        return not self._never(rel) and check_path(self.cap, rel) is None

    def _path_ok_here(self, _name: str, rel: str) -> bool:
        return self._path_ok(rel)

    def _file_check(self, segs: tuple[str, ...], rel: str, reach: _Reach) -> _FileOk:
        """`_path_ok` for the files of the folder `segs` (called with name and path), set up
        once per folder: only the globs that may reach the folder (`reach`) are matched, as
        `check_path` matches a printable ASCII path (its own normal form, lower-cased for
        forbidden globs). Other names, folders and matchers (pathspec's, for snapshots
        from before stored regexes) get `_path_ok` itself."""
        cap = self.cap
        if not segs or not is_plain_ascii(rel) or (len(rel) > 1 and rel[1] == ":"):
            return self._path_ok_here  # (`c:x` is refused as absolute by normalize_path)
        forbidden = allowed = None
        if isinstance(cap.forbidden, RegexGlobSet) and isinstance(cap.allowed, RegexGlobSet):
            forbidden = cap.forbidden.searchers(set(reach[0]).__contains__)
            allowed = cap.allowed.searchers(set(reach[1]).__contains__)
        if cap.legacy or forbidden is None or allowed is None:
            return self._path_ok_here
        low = rel.lower() + "/"
        if ".git" in low.split("/") or low.startswith(self.never):
            return _refuse_file
        # names that are `.git` or a never-writable folder here (as `_never` folds them)
        refused = {".git", *(n[len(low) : -1] for n in self.never if n.startswith(low))}
        prefix = rel + "/"
        everywhere = covers_below(self.allowed, segs)  # every path below is allowed

        def ok(name: str, child: str) -> bool:
            if not (name.isascii() and name.isprintable()):
                return self._path_ok(child)
            lname = name.lower()
            if lname in refused:
                return False
            lowered = low + lname
            for rx in forbidden:
                if rx.search(lowered) is not None:
                    return False
            if everywhere:
                return True
            path = prefix + name
            return any(rx.search(path) is not None for rx in allowed)

        return ok

    def _whole_or_none(
        self, segs: tuple[str, ...], path: str, rel: str, reach: _Reach
    ) -> bool | None:
        """True: granted whole; False: nothing below can be granted; None: look inside."""
        if self._never(rel):
            return False
        if covers_below(self.allowed, segs) and not reach[0] and not _has_hard_links(path):
            self.plan.grants.append(Grant(WHOLE, path, rel))
            return True
        if not reach[1]:
            return False
        return None

    def walk(self, segs: tuple[str, ...], path: str, reach: _Reach) -> int:
        """Grant what the folder `segs` may get; what it proved about the paths below it.
        `reach`: the (forbidden, allowed) globs that may reach its parent folder."""
        rel = "/".join(segs)
        if segs:
            reach = _narrow(reach, segs)
            decided = self._whole_or_none(segs, path, rel, reach)
            if decided is not None:
                return _PLAIN if decided else _NO
        try:  # files are stat'ed by name relative to the open folder
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return _NO
        try:
            with os.scandir(fd) as it:
                entries = list(it)
            mark = len(self.plan.grants)
            proved, files = self._entries(segs, rel, (path, fd), entries, reach)
        except OSError:
            return _NO
        finally:
            os.close(fd)
        if proved == _PLAIN and segs:  # one folder rule instead of one per file and subfolder
            self.plan.grants[mark:] = [g for g in self.plan.grants[mark:] if g.kind == WHOLE]
            self.plan.grants.append(Grant(EXISTING, path, rel))
            return _PLAIN
        self.plan.grants += [Grant(FILE, f"{path}/{name}", r) for name, r in files]
        if not segs or proved == _NO:
            return _NO
        self.plan.grants.append(Grant(REMOVE, path, rel))
        return proved

    def _entries(
        self,
        segs: tuple[str, ...],
        rel: str,
        where: tuple[str, int],
        entries: list[os.DirEntry[str]],
        reach: _Reach,
    ) -> tuple[int, list[tuple[str, str]]]:
        """Walk a folder's entries (`where`: its path and open descriptor): what they
        proved, and its files that may be granted."""
        path, fd = where
        proved = _PLAIN
        files: list[tuple[str, str]] = []
        file_ok = self._file_check(segs, rel, reach)
        for entry in entries:
            name = entry.name
            child_rel = f"{rel}/{name}" if rel else name
            if entry.is_dir(follow_symlinks=False):  # walked even when itself out of scope:
                got = self.walk((*segs, name), f"{path}/{name}", reach)  # `src/**`: below src
                if got and not self._path_ok(child_rel):
                    got = _NO
            elif file_ok(name, child_rel):
                got = self._file(fd, name, child_rel, files)
            else:
                got = _NO
            if got < proved:
                proved = got
        return proved, files

    def _file(self, fd: int, name: str, rel: str, files: list[tuple[str, str]]) -> int:
        """An in-scope file (`name` in the open folder `fd`): into `files` when it may be
        granted; _PLAIN when a folder rule may cover it instead."""
        try:
            st = os.lstat(name, dir_fd=fd)
        except OSError:
            return _SOME  # gone meanwhile: nothing to grant
        if stat.S_ISLNK(st.st_mode):
            return _PLAIN  # never granted: a write through it is judged at its target
        if not stat.S_ISREG(st.st_mode):
            return _SOME  # sockets, fifos, devices: never granted
        if st.st_nlink != 1:
            self.plan.held_back.append(rel)
            return _SOME
        files.append((name, rel))
        return _PLAIN


def _has_hard_links(path: str) -> bool:
    """True when a regular file below `path` has another name (which may be forbidden):
    the folder is then granted file by file, and that file not at all. One lstat per file,
    by name relative to its open folder."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return True  # unreadable: do not grant it whole
    try:
        folders = []
        lstat = os.lstat
        with os.scandir(fd) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
                elif (
                    entry.is_file(follow_symlinks=False)
                    and lstat(entry.name, dir_fd=fd).st_nlink != 1
                ):
                    return True
    except OSError:
        return True
    finally:
        os.close(fd)
    return any(_has_hard_links(f"{path}/{name}") for name in folders)


def plan_for(cap: Capability, root: str, *, never: tuple[str, ...] = ()) -> Plan:
    """The grants inside the checkout at `root` (a real, absolute path) for `cap`.

    `never` lists repository-relative folders that stay unwritable whatever the scope
    says (the state directory when it lives inside the checkout).
    """
    w = _Walker(cap, root, never)
    w.walk((), root, (w.forbidden, w.allowed))
    return w.plan


def build_ruleset(
    plan: Plan,
    abi: int,
    tmpdir: str,
    network: bool | tuple[int, ...],
    *,
    host_terminals: bool = True,
) -> landlock.Ruleset:
    """The Landlock ruleset of a plan, the private temporary folder and the devices (the
    host's terminals in /dev/pts only when `host_terminals`: a sandbox with a /dev of its
    own grants its own devpts instead).

    `network` False: no TCP bind or connect (ABI ≥ 4) and abstract unix sockets scoped to
    the sandbox (ABI ≥ 6); a tuple: connect to those TCP ports only; True: unrestricted.
    Signals to processes outside the sandbox are always scoped (ABI ≥ 6).
    """
    scope = landlock.SCOPE_SIGNAL
    if network is False:
        scope |= landlock.SCOPE_ABSTRACT_UNIX_SOCKET
    rs = landlock.Ruleset(abi, net=network is not True, scope=scope)
    try:
        every = landlock.handled_fs(abi)
        rights = {
            WHOLE: every,
            EXISTING: landlock.remove_rights() | landlock.file_rights(abi),
            REMOVE: landlock.remove_rights(),
            FILE: landlock.file_rights(abi),
        }
        for g in plan.grants:
            try:
                rs.allow_path(g.path, rights[g.kind], directory=g.kind != FILE)
            except FileNotFoundError:  # gone since the walk: nothing to grant
                continue
        rs.allow_path(tmpdir, every, directory=True)
        for dev in DEVICES:
            if os.path.exists(dev):
                rs.allow_path(dev, landlock.file_rights(abi), directory=False)
        if host_terminals and os.path.isdir(TERMINALS):
            rs.allow_path(TERMINALS, landlock.file_rights(abi), directory=True)
        if isinstance(network, tuple):
            for port in network:
                rs.allow_port(port)
    except BaseException:
        rs.close()
        raise
    return rs

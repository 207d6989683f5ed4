"""State files under bot-state/: atomic JSON writes, strict reads, and the single-instance lock."""

from __future__ import annotations

import _thread  # built in (threading costs an import on scope-guard's path)
import contextlib
import errno
import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from capdaemon.canon import canonical_json as canonical_json  # re-exported (hashing core)

TYPE_CHECKING = False  # scope-guard imports this module: keep typing (and tempfile) out of it
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


class StateError(RuntimeError):
    """A state file is corrupt or unreadable; the operator must look (it is never overwritten)."""


class LockedError(RuntimeError):
    """Another process holds the state directory's lock."""


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename inside it is durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_data(fd: int) -> None:
    """Flush a file's data and the metadata needed to read it back (its size) to disk:
    `fdatasync`, which skips timestamps (fsync where the platform has no fdatasync)."""
    getattr(os, "fdatasync", os.fsync)(fd)


class AtomicWrite:
    """An atomic write of `text` to `path` in two steps: made, it writes a temporary file
    beside `path` and syncs its data (with `meanwhile`, in a thread of its own, so that
    another file's sync can run at the same time); `finish` waits for that sync, renames
    the file over `path` and fsyncs the folder; `abort` removes it. `path` changes only in
    `finish`, from its old content to the whole new one."""

    def __init__(self, path: Path, text: str, *, mode: int = 0o644, meanwhile: bool = False):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.mode = path, mode
        fd, self.tmp = _create_temp(path)
        self._failed: list[BaseException] = []
        self._synced = _thread.allocate_lock()
        self._synced.acquire()
        try:
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(fd, data) :]
        except BaseException:
            os.close(fd)
            self._synced.release()
            self.abort()
            raise
        if meanwhile:
            _thread.start_new_thread(self._sync, (fd,))
        else:
            self._sync(fd)

    def _sync(self, fd: int) -> None:
        try:
            sync_data(fd)
        except BaseException as exc:
            self._failed.append(exc)
        finally:
            os.close(fd)
            self._synced.release()

    def finish(self) -> None:
        """Wait for the data's sync, then rename over `path` and fsync the folder."""
        with self._synced:
            pass
        try:
            if self._failed:
                raise self._failed[0]
            os.chmod(self.tmp, self.mode)
            os.replace(self.tmp, self.path)
        except BaseException:
            self.abort()
            raise
        fsync_dir(self.path.parent)

    def abort(self) -> None:
        """Remove the temporary file (after its sync has ended); `path` is left as it was."""
        with self._synced:
            pass
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)


def atomic_write_text(path: Path, text: str, *, mode: int = 0o644) -> None:
    """Write a file atomically: temp file in the same folder, its data synced, rename, fsync
    folder."""
    AtomicWrite(path, text, mode=mode).finish()


def _create_temp(path: Path) -> tuple[int, str]:
    """A new, empty, private (0600) file beside `path`: (fd, name). As tempfile.mkstemp, without
    importing tempfile (shutil, random, lzma: ~10 ms under load, on scope-guard run's path)."""
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", str(path.parent))


def json_text(obj: Any) -> str:
    """A state file's JSON text: pretty, sorted keys, trailing newline."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def atomic_write_json(path: Path, obj: Any, *, mode: int = 0o644) -> None:
    """Write JSON atomically (pretty, sorted keys, trailing newline)."""
    atomic_write_text(path, json_text(obj), mode=mode)


def write_new_json(path: Path, obj: Any, *, mode: int = 0o444) -> bool:
    """Create a JSON file that must not exist yet (immutable records). False if it exists."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        try:
            os.link(tmp, path)  # fails if path exists: no overwrite, even in a race
        except FileExistsError:
            return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(path.parent)
    return True


def set_aside(path: Path, now: datetime) -> Path:
    """Rename a file that cannot be used to `<name>.corrupt-<UTC time>[-n]`: kept, never
    overwritten, never deleted. Returns the new path."""
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, target)
    return target


def read_json(path: Path, default: Any = None) -> Any:
    """Read a JSON state file; a missing file gives `default`, a corrupt one raises StateError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return default
    except OSError as exc:
        raise StateError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StateError(
            f"{path}: corrupt JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; "
            "fix or move the file away (it is never overwritten)"
        ) from exc


class StateLock:
    """An exclusive, non-blocking flock on `<state>/capdaemon.lock` (one daemon per state dir)."""

    def __init__(self, state_dir: Path, name: str = "capdaemon.lock") -> None:
        self.path = Path(state_dir) / name
        self._fd: int | None = None

    def acquire(self) -> StateLock:
        """Take the lock or raise LockedError naming the holder's pid."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = ""
            with contextlib.suppress(OSError):
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise LockedError(
                    f"state directory {self.path.parent} is locked by another capdaemon"
                    + (f" (pid {holder})" if holder else "")
                ) from exc
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Release the lock (the file stays)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """A blocking exclusive flock on a side file (used by single-writer logs across processes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

"""The sandbox's JSON store: one state file under the root, written atomically after each change."""

from __future__ import annotations

import json
import marshal
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

STATE_VERSION = 1


class StoreError(RuntimeError):
    """The state file is unreadable or corrupt; the sandbox refuses to start."""


def empty_state() -> dict[str, Any]:
    """A fresh, empty state document."""
    return {
        "version": STATE_VERSION,
        "next_id": 1000,
        "users": {},
        "tokens": {},
        "apps": {},
        "installations": {},
        "rate_limit": {"core": 5000, "secondary_per_minute": 0},
        "repos": {},
    }


class Store:
    """In-memory state guarded by one re-entrant lock and persisted as ``state.json``.

    By default every :meth:`save` writes the file. After :meth:`start_writer` (the running
    server) saves are coalesced by a background thread (at most one write per ``delay``);
    :meth:`flush` writes now (before a git push, whose pre-receive hook reads the file) and
    :meth:`close` stops the thread and writes what is pending.

    A write takes a cheap snapshot (``marshal``) under the lock and does the expensive part
    (JSON encoding, fsync, rename) outside it, under a separate I/O lock, so requests are not
    held up by the disk; a newer snapshot is never overwritten by an older one.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.file = root / "state.json"
        self.lock = threading.RLock()
        self._batch = 0
        self._dirty = False
        self._wake = threading.Condition(self.lock)
        self._writer: threading.Thread | None = None
        self._stopping = False
        self._delay = 0.05
        self.writes = 0  # state.json writes so far
        self._io = threading.Lock()  # one writer at a time; taken after self.lock, never before
        self._seq = 0  # snapshots taken
        self._written = 0  # newest snapshot on disk
        self._last: tuple[int, bytes] | None = None  # newest snapshot taken
        self.data = self._load()

    def _load(self) -> dict[str, Any]:
        if not self.file.exists():
            return empty_state()
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreError(f"sandbox state {self.file} is unreadable or corrupt: {exc}") from exc
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise StoreError(
                f"sandbox state {self.file}: unknown format (expected version {STATE_VERSION})"
            )
        return data

    def new_id(self) -> int:
        """A fresh, globally unique numeric id."""
        with self.lock:
            self.data["next_id"] += 1
            return int(self.data["next_id"])

    def save(self) -> None:
        """Persist the state (deferred while inside :meth:`batch`, coalesced with a writer)."""
        with self.lock:
            self._dirty = True
            if self._batch:
                return
            if self._writer is not None:
                self._wake.notify()
                return
            self._write()

    def flush(self) -> None:
        """Write pending changes now (outside a batch), including a snapshot the background
        writer took but has not finished writing: on return the file holds every save."""
        with self.lock:
            if self._batch:
                return
            snap = self._snapshot() if self._dirty else self._last
            if snap is not None and snap[0] > self._written:
                self._persist(*snap)

    def start_writer(self, delay: float = 0.05) -> None:
        """Coalesce saves in a background thread from now on (idempotent)."""
        with self.lock:
            if self._writer is not None:
                return
            self._delay = delay
            self._stopping = False
            self._writer = threading.Thread(
                target=self._write_loop, name=f"sandbox-store-{self.root.name}", daemon=True
            )
            self._writer.start()

    def close(self) -> None:
        """Stop the background writer (if any) and write what is pending."""
        with self.lock:
            writer, self._writer = self._writer, None
            self._stopping = True
            self._wake.notify_all()
        if writer is not None and writer is not threading.current_thread():
            writer.join(timeout=5)
        with self.lock:
            self._stopping = False
            if not self._batch:
                self._write()

    def _write_loop(self) -> None:
        while True:
            with self.lock:
                while not self._dirty and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
            time.sleep(self._delay)
            with self.lock:
                if self._stopping:
                    return
                if not self._dirty or self._batch:
                    continue
                snap = self._snapshot()
            self._persist(*snap)  # encoding and fsync without the request lock

    def _snapshot(self) -> tuple[int, bytes]:
        """A consistent copy of the state (call with the lock held)."""
        self._seq += 1
        self._dirty = False
        self._last = (self._seq, marshal.dumps(self.data))
        return self._last

    def _persist(self, seq: int, snap: bytes) -> None:
        """Write snapshot ``seq`` atomically unless a newer one is already on disk."""
        with self._io:
            if seq <= self._written:
                return
            payload = json.dumps(marshal.loads(snap), separators=(",", ":"), sort_keys=False)
            tmp = self.file.with_name(f".state.{os.getpid()}.{threading.get_ident()}.tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(self.file)
            self._written = seq
            self.writes += 1

    def _write(self) -> None:
        """Snapshot and write now (the caller holds the lock)."""
        self._persist(*self._snapshot())

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Hold the lock and write the state once at the end (for bulk seeding)."""
        with self.lock:
            self._batch += 1
            try:
                yield
            finally:
                self._batch -= 1
                if self._batch == 0 and self._dirty:
                    self._write()

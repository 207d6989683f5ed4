"""The sandbox's JSON store: one state file under the root, written atomically after each change."""

from __future__ import annotations

import json
import os
import threading
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
    """In-memory state guarded by one re-entrant lock and persisted as ``state.json``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.file = root / "state.json"
        self.lock = threading.RLock()
        self._batch = 0
        self._dirty = False
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
        """Persist the state (deferred while inside :meth:`batch`)."""
        with self.lock:
            if self._batch:
                self._dirty = True
                return
            self._write()

    def _write(self) -> None:
        tmp = self.file.with_name(f".state.{os.getpid()}.{threading.get_ident()}.tmp")
        payload = json.dumps(self.data, separators=(",", ":"), sort_keys=False)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(self.file)
        self._dirty = False

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

"""The conditional-request cache under the Transport: ETag + body per GET, sized from the work."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

# GETs whose body is fixed by the shas in the URL: the forge keeps them in its own
# content-addressed caches, so they never take a slot in the conditional-request cache.
_CONTENT_ADDRESSED = re.compile(
    r"/repos/[^/]+/[^/]+/(git/(blobs|trees|commits)/[0-9a-f]{40}"
    r"|commits/[0-9a-f]{40}|compare/[0-9a-f]{40}\.\.\.[0-9a-f]{40})(\?|$)"
)


def content_addressed(url: str) -> bool:
    """True for a GET whose answer can never change (a git object or a compare by sha)."""
    return bool(_CONTENT_ADDRESSED.search(urlsplit(url).path + "?"))


@dataclass(frozen=True)
class CacheEntry:
    """One stored GET answer: its ETag, headers and body."""

    etag: str
    headers: dict[str, str]
    body: bytes


CacheKey = tuple[str, str, str]


class EtagCache:
    """An LRU of GET responses: (URL+query, auth, Accept) → (ETag, headers, body), sized from
    the work.

    `max_entries` is a starting size, not a ceiling: when the least recently used entry was
    still used in this tick or the one before (the working set is larger than the cache), the
    cache grows instead of evicting it, up to `max_bytes` of bodies (the hard bound). Entries
    idle for two ticks are evicted first. Call `new_tick()` at the start of each tick.
    """

    def __init__(self, max_entries: int = 4096, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.evictions = 0
        self._data: OrderedDict[CacheKey, CacheEntry] = OrderedDict()
        self._used: dict[CacheKey, int] = {}  # key → the tick it was last used in
        self._tick = 0
        self._bytes = 0
        self._lock = threading.Lock()

    def new_tick(self) -> None:
        """A tick starts: entries not used since the previous tick become evictable."""
        with self._lock:
            self._tick += 1

    def get(self, key: CacheKey) -> CacheEntry | None:
        """The entry, marked most recently used."""
        with self._lock:
            e = self._data.get(key)
            if e is not None:
                self._data.move_to_end(key)
                self._used[key] = self._tick
            return e

    def put(self, key: CacheKey, entry: CacheEntry) -> None:
        """Store, evicting the least recently used past the bounds (growing for the work)."""
        size = len(entry.body)
        if size > self.max_bytes // 4:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= len(old.body)
            self._data[key] = entry
            self._used[key] = self._tick
            self._bytes += size
            while self._data and self._bytes > self.max_bytes:
                self._evict()
            while len(self._data) > self.max_entries:
                lru = next(iter(self._data))
                if self._used.get(lru, 0) >= self._tick - 1:
                    self.max_entries *= 2  # the work needs more slots than the cache has
                    break
                self._evict()

    def _evict(self) -> None:
        k, ev = self._data.popitem(last=False)
        self._used.pop(k, None)
        self._bytes -= len(ev.body)
        self.evictions += 1

    def items(self) -> list[tuple[CacheKey, CacheEntry]]:
        """A copy of the entries, least recently used first (for persisting)."""
        with self._lock:
            return list(self._data.items())

    def __len__(self) -> int:
        return len(self._data)

    @property
    def nbytes(self) -> int:
        """Bytes of bodies held."""
        return self._bytes


def auth_identity(headers: Mapping[str, Any]) -> str:
    """A short hash of the Authorization header: ETags are per token; a new token starts afresh."""
    value = headers.get("Authorization") or ""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:16] if value else "anonymous"

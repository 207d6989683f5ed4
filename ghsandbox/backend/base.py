"""The sandbox backend's state: the store, the clock, the bare repositories, the limiters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..clock import Clock, iso
from ..errors import not_found
from ..events import EventFeed
from ..fidelity import MergeabilityClock, SecondaryLimits, settings
from ..git import GitRepo
from ..gittypes import Person
from ..http import RateLimiter
from ..store import Store


class BackendState:
    """The state every backend layer shares; thread-safe through the store's lock."""

    def __init__(self, root: Path, clock: Clock) -> None:
        self.root = root
        self.clock = clock
        root.mkdir(parents=True, exist_ok=True)
        (root / "git").mkdir(exist_ok=True)
        self.store = Store(root)
        self.lock = self.store.lock
        self._gits: dict[str, GitRepo] = {}
        self.limiter = RateLimiter()
        self.secondary = SecondaryLimits()
        self.merge_clock = MergeabilityClock()
        self.events = EventFeed()

    @property
    def data(self) -> dict[str, Any]:
        """The raw state document."""
        return self.store.data

    def now(self) -> str:
        """The sandbox time as a GitHub timestamp."""
        return iso(self.clock.now())

    def feed(self, full: str, kind: str, actor: str, payload: dict[str, Any]) -> None:
        """Record one event in the repository's events feed."""
        cfg = settings(self.data)
        self.events.record(full, kind, actor, payload, self.now(), self.clock.window_time(), cfg)

    def git(self, full: str) -> GitRepo:
        """The bare repository of ``owner/name``."""
        g = self._gits.get(full)
        if g is None:
            g = GitRepo(self.root / "git" / f"{full}.git")
            self._gits[full] = g
        return g

    def repo(self, full: str) -> dict[str, Any]:
        """A repo record or a 404 error."""
        repos: dict[str, dict[str, Any]] = self.data["repos"]
        repo = repos.get(full)
        if repo is None:
            # GitHub matches owner and name case-insensitively.
            for name, rec in repos.items():
                if name.lower() == full.lower():
                    return rec
            raise not_found()
        return repo

    def person(self, login: str | None) -> Person:
        """A git identity for a login."""
        if login is None:
            return Person("GitHub", "noreply@github.com")
        u = self.data["users"].get(login)
        if u is None:
            return Person(login, f"{login}@users.noreply.github.com")
        return Person(
            u.get("name") or login, u.get("email") or f"{u['id']}+{login}@users.noreply.github.com"
        )

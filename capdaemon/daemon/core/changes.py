"""The repos a change detector saw change that no tick has taken yet, shared by its thread and
the tick's under one lock (`TickDeps.changed`): the detector adds them, a targeted tick or a
full tick's safe point takes them. With no detector running it stays empty."""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable

from capdaemon.logging import get_logger

log = get_logger("capdaemon.detect")


class ChangedRepos:
    """A thread-safe set of repo names waiting for a tick to serve them."""

    def __init__(self) -> None:
        self._repos: set[str] = set()
        self._lock = threading.Lock()

    def add(self, repos: Iterable[str]) -> list[str]:
        """Keep `repos`; every repo now waiting, sorted."""
        with self._lock:
            self._repos |= set(repos)
            return sorted(self._repos)

    def served(self, repos: Iterable[str]) -> None:
        """`repos` were served by a targeted tick."""
        with self._lock:
            self._repos.difference_update(repos)

    def take(self, among: Collection[str] | None = None) -> frozenset[str]:
        """The hand-over to a running full tick: take, of `among` (None: all), the repos
        waiting; the tick serves them."""
        with self._lock:
            got = frozenset(self._repos if among is None else self._repos & set(among))
            self._repos -= got
        if got:
            log.info("detect.handed_over", repos=sorted(got))
        return got

    def waiting(self) -> set[str]:
        """A copy of the repos waiting."""
        with self._lock:
            return set(self._repos)

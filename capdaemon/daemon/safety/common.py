"""What the safety-net parts share: issue kinds and the report they write to."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Protocol

from capdaemon.capability.model import CapabilitySnapshot
from capdaemon.config import RepoConfig
from capdaemon.decide.labels import IssueKind
from capdaemon.decide.merge import RequiredCheck
from capdaemon.forge.types import IssueActivity
from capdaemon.logging import get_logger
from capdaemon.report import Report as Report  # the safety net's modules name it here
from capdaemon.stores.botstate import PRRecord

API_FAIL_TICKS = 3  # consecutive ticks with API errors → one incident
ONE_TAP = IssueKind.ONE_TAP.value
INCIDENT = IssueKind.INCIDENT.value
# A ballot or one-tap whose issue activity (issue list) did not change is still read in full
# this often: the activity cannot show one reaction swapped for another of the same kind.
QUIET_REREAD = timedelta(minutes=30)

log = get_logger("capdaemon.safety")


class SeenPR(Protocol):
    """One open PR of this tick, as the tick hands it over."""

    @property
    def rec(self) -> PRRecord:
        """The PR's record."""
        ...


class TickReads(Protocol):
    """What the safety net reads through the tick now running (its per-tick caches): the
    tick passes it to each part's step; nothing one tick read is seen by the next."""

    def load_cap(self, task_id: str) -> CapabilitySnapshot:
        """A task's verified capability snapshot (CapabilityError when there is none)."""
        ...

    def owners(self, repo: str, users: Iterable[str]) -> set[str]:
        """The owners among `users` under the repo's policy this tick."""
        ...

    def required_checks(self, rc: RepoConfig) -> Sequence[RequiredCheck]:
        """The checks the repo's base branch protection requires (with their App pins)."""
        ...

    def issue_activity(self, report: Report | None = None) -> Mapping[int, IssueActivity]:
        """The decision repo's issue list this tick, by issue number."""
        ...

"""What the safety-net parts share: issue kinds and the report they write to."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Protocol

from capdaemon.decide.labels import IssueKind
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


OwnersFn = Callable[[str, Iterable[str]], set[str]]  # (repo, users) → the owners among them
ActivityFn = Callable[..., Mapping[int, IssueActivity]]  # (report) → this tick's issue list

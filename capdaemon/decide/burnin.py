"""L4 burn-in clocks per agent identity "tool/model" (SPEC 6.4): 60 quiet days → hard-block."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from capdaemon.decide._common import Action, audit, aware, dt_to_json, reader
from capdaemon.model import Severity

BURN_IN_DAYS = 60.0
_AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}/[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def check_agent_id(agent_id: str) -> str:
    """Return a valid "tool/model" id (SPEC 2.6 grammar), else raise ValueError."""
    if not isinstance(agent_id, str) or not _AGENT_ID.match(agent_id):
        raise ValueError(f"agent id must be 'tool/model', got {agent_id!r}")
    return agent_id


class BurnInStatus(enum.StrEnum):
    """Where an agent identity stands."""

    BURN_IN = "burn_in"  # registry findings advisory (P2)
    HARD_BLOCK = "hard_block"  # registry findings block (P0)


@dataclass(frozen=True)
class AgentClock:
    """One identity's clock: first seen, clock start (reset by rejections), status."""

    agent_id: str
    first_seen: datetime
    clock_start: datetime
    status: BurnInStatus = BurnInStatus.BURN_IN
    rejections: int = 0
    promoted_at: datetime | None = None

    def __post_init__(self) -> None:
        check_agent_id(self.agent_id)
        aware(self.first_seen, "first_seen")
        aware(self.clock_start, "clock_start")
        if self.promoted_at is not None:
            aware(self.promoted_at, "promoted_at")
        # Tampering tells: a promotion that was undone, a clock before the first sighting.
        if (self.status is BurnInStatus.HARD_BLOCK) != (self.promoted_at is not None):
            raise ValueError(
                f"l4_burn_in[{self.agent_id!r}]: status {self.status.value} and promoted_at "
                f"{self.promoted_at} disagree"
            )
        if self.clock_start < self.first_seen:
            raise ValueError(f"l4_burn_in[{self.agent_id!r}]: clock_start before first_seen")

    def days_left(self, now: datetime, days: float = BURN_IN_DAYS) -> float:
        """Days until promotion (0 when promoted or due)."""
        if self.status is BurnInStatus.HARD_BLOCK:
            return 0.0
        left = timedelta(days=days) - (now - self.clock_start)
        return max(0.0, left.total_seconds() / 86400)

    def to_json(self) -> dict[str, Any]:
        """JSON form (one value of tick_metrics.l4_burn_in)."""
        return {
            "first_seen": dt_to_json(self.first_seen),
            "clock_start": dt_to_json(self.clock_start),
            "status": self.status.value,
            "rejections": self.rejections,
            "promoted_at": dt_to_json(self.promoted_at),
        }

    @classmethod
    def from_json(cls, agent_id: str, data: Any) -> AgentClock:
        """Parse the JSON form; malformed → ValueError naming the field."""
        r = reader(data, f"l4_burn_in[{agent_id!r}]")
        try:
            check_agent_id(agent_id)
        except ValueError as exc:
            raise ValueError(f"l4_burn_in: {exc}") from None
        return cls(
            agent_id=agent_id,
            first_seen=r.when("first_seen"),
            clock_start=r.when("clock_start"),
            status=r.choice("status", BurnInStatus),
            rejections=r.integer("rejections", minimum=0),
            promoted_at=r.when("promoted_at", optional=True),
        )


@dataclass(frozen=True)
class BurnInState:
    """All known agent identities, sorted by id."""

    agents: tuple[AgentClock, ...] = ()

    def get(self, agent_id: str) -> AgentClock | None:
        """The clock of one identity."""
        return next((a for a in self.agents if a.agent_id == agent_id), None)

    def _with(self, clock: AgentClock) -> BurnInState:
        others = [a for a in self.agents if a.agent_id != clock.agent_id]
        return BurnInState(tuple(sorted([*others, clock], key=lambda a: a.agent_id)))

    def to_json(self) -> dict[str, Any]:
        """JSON form: {agent_id: clock} (tick_metrics.l4_burn_in)."""
        return {a.agent_id: a.to_json() for a in self.agents}

    @classmethod
    def from_json(cls, data: Any) -> BurnInState:
        """Parse the JSON form; malformed → ValueError naming the field."""
        reader(data, "l4_burn_in")
        clocks = [AgentClock.from_json(k, v) for k, v in data.items()]
        return cls(tuple(sorted(clocks, key=lambda a: a.agent_id)))


def burn_in_raw(safety: Any, metrics: Any) -> Any:
    """The burn-in clocks' JSON form: safety.json's `burn_in`, else the copy mirrored to
    tick_metrics.json's `l4_burn_in` (older state), else none."""
    ours = safety.get("burn_in") if isinstance(safety, dict) else None
    mirrored = metrics.get("l4_burn_in") if isinstance(metrics, dict) else None
    return ours or mirrored or {}


def observe(
    state: BurnInState, agent_ids: Iterable[str], now: datetime
) -> tuple[BurnInState, list[Action]]:
    """Start a clock for every identity not seen before (first_seen = clock_start = now)."""
    aware(now, "now")
    actions: list[Action] = []
    for agent_id in sorted(set(agent_ids)):
        if state.get(check_agent_id(agent_id)) is None:
            state = state._with(AgentClock(agent_id, now, now))
            actions.append(audit("burn_in.observed", agent=agent_id, at=dt_to_json(now)))
    return state, actions


def record_rejection(
    state: BurnInState, agent_id: str, now: datetime
) -> tuple[BurnInState, list[Action]]:
    """A quadrant-D rejection of the agent's PR: restart its clock (promotion is never undone)."""
    aware(now, "now")
    clock = state.get(check_agent_id(agent_id)) or AgentClock(agent_id, now, now)
    clock = replace(clock, clock_start=now, rejections=clock.rejections + 1)
    return state._with(clock), [
        audit(
            "burn_in.rejection",
            agent=agent_id,
            at=dt_to_json(now),
            rejections=clock.rejections,
            status=clock.status.value,
        )
    ]


def advance(
    state: BurnInState, now: datetime, days: float = BURN_IN_DAYS
) -> tuple[BurnInState, list[Action]]:
    """Promote every identity whose clock has run `days` (exactly 60 d counts) to hard-block."""
    aware(now, "now")
    actions: list[Action] = []
    for clock in state.agents:
        if clock.status is BurnInStatus.BURN_IN and now - clock.clock_start >= timedelta(days=days):
            state = state._with(replace(clock, status=BurnInStatus.HARD_BLOCK, promoted_at=now))
            actions.append(
                audit(
                    "burn_in.promoted",
                    agent=clock.agent_id,
                    at=dt_to_json(now),
                    clock_start=dt_to_json(clock.clock_start),
                )
            )
    return state, actions


def agent_severities(state: BurnInState) -> dict[str, Severity]:
    """Registry-check severity per identity: P2 in burn-in, P0 once hard-blocked.

    The classifier takes the higher of this and the configured `validator_agent_registry`
    severity (an owner's P0 override stays P0).
    """
    return {
        a.agent_id: Severity.P0 if a.status is BurnInStatus.HARD_BLOCK else Severity.P2
        for a in state.agents
    }

"""The circuit breaker (SPEC 6.3): incidents in a rolling window trip it; owners reset it."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from capdaemon.config import BreakerConfig
from capdaemon.decide._common import Action, ActionKind, audit, aware, dt_to_json, reader
from capdaemon.decide._text import md
from capdaemon.decide.labels import Label
from capdaemon.model import Quadrant


class IncidentKind(enum.StrEnum):
    """What went wrong."""

    PROBE_FAILED = "probe_failed"
    REVERT = "revert"
    API_FAILURES = "api_failures"
    AUDIT_INTEGRITY = "audit_integrity"
    PROTECTION_DRIFT = "protection_drift"
    WRONG_BASE = "wrong_base"  # a merge landed on another branch than the approved base
    OTHER = "other"


# incidents that trip the breaker at once, whatever the threshold
TRIPS_AT_ONCE = frozenset({IncidentKind.WRONG_BASE})


@dataclass(frozen=True)
class Incident:
    """One incident: when, what kind, and a one-line detail (never a secret)."""

    at: datetime
    kind: IncidentKind
    detail: str = ""
    ref: str = ""  # e.g. "o/r#12" or a merge sha

    def __post_init__(self) -> None:
        aware(self.at, "incident at")

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "at": dt_to_json(self.at),
            "kind": self.kind.value,
            "detail": self.detail,
            "ref": self.ref,
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "incident") -> Incident:
        """Parse the JSON form; malformed → ValueError naming the field."""
        r = reader(data, where)
        return cls(
            at=r.when("at"),
            kind=r.choice("kind", IncidentKind),
            detail=r.text("detail", optional=True) or "",
            ref=r.text("ref", optional=True) or "",
        )


@dataclass(frozen=True)
class BreakerState:
    """Incidents in the window, and whether (and since when) the breaker is tripped."""

    incidents: tuple[Incident, ...] = ()
    tripped: bool = False
    tripped_at: datetime | None = None
    reset_by: str | None = None
    reset_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.tripped and self.tripped_at is None:
            raise ValueError("breaker.tripped_at: required when tripped")
        for name in ("tripped_at", "reset_at"):
            value = getattr(self, name)
            if value is not None:
                aware(value, f"breaker.{name}")

    @property
    def incident_key(self) -> str | None:
        """The marker key of the current incident issue (one per trip), None when closed."""
        return f"breaker-{dt_to_json(self.tripped_at)}" if self.tripped else None

    def in_window(self, now: datetime, window: timedelta) -> tuple[Incident, ...]:
        """Incidents no older than `window` at `now`."""
        aware(now, "now")
        return tuple(i for i in self.incidents if now - i.at <= window)

    def to_json(self) -> dict[str, Any]:
        """JSON form for bot-state."""
        return {
            "incidents": [i.to_json() for i in self.incidents],
            "tripped": self.tripped,
            "tripped_at": dt_to_json(self.tripped_at),
            "reset_by": self.reset_by,
            "reset_at": dt_to_json(self.reset_at),
        }

    @classmethod
    def from_json(cls, data: Any) -> BreakerState:
        """Parse the JSON form; malformed → ValueError naming the field."""
        r = reader(data, "breaker")
        incidents = tuple(
            Incident.from_json(item, f"breaker.incidents[{n}]")
            for n, item in enumerate(r.items("incidents"))
        )
        return cls(
            incidents=incidents,
            tripped=r.flag("tripped"),
            tripped_at=r.when("tripped_at", optional=True),
            reset_by=r.text("reset_by", optional=True),
            reset_at=r.when("reset_at", optional=True),
        )


def _window(cfg: BreakerConfig) -> timedelta:
    return timedelta(hours=cfg.window_hours)


def record_incident(
    state: BreakerState, incident: Incident, now: datetime, cfg: BreakerConfig
) -> tuple[BreakerState, list[Action]]:
    """Record an incident; trip when the window holds `threshold` incidents.

    Incidents older than the window are dropped. Tripping opens an incident issue;
    incidents while tripped are added to it as comments. Never resets anything.
    """
    aware(now, "now")
    kept = BreakerState(
        (*state.in_window(now, _window(cfg)), incident),
        state.tripped,
        state.tripped_at,
        state.reset_by,
        state.reset_at,
    )
    count = len(kept.in_window(now, _window(cfg)))
    actions = [
        audit(
            "breaker.incident",
            incident_kind=incident.kind.value,
            detail=incident.detail,
            ref=incident.ref,
            at=dt_to_json(incident.at),
            in_window=count,
        )
    ]
    if state.tripped:
        actions.append(
            Action(
                ActionKind.UPDATE_INCIDENT_ISSUE,
                {"key": state.incident_key, "comment": f"Another incident: {_line(incident)}"},
            )
        )
        return kept, actions
    if count < cfg.threshold and incident.kind not in TRIPS_AT_ONCE:
        return kept, actions
    tripped = replace(kept, tripped=True, tripped_at=now)
    actions.append(
        audit(
            "breaker.tripped",
            at=dt_to_json(now),
            incidents=count,
            threshold=cfg.threshold,
            window_hours=cfg.window_hours,
        )
    )
    actions.append(
        Action(
            ActionKind.OPEN_INCIDENT_ISSUE,
            {
                "key": tripped.incident_key,
                "title": f"Circuit breaker tripped: {count} incidents in {cfg.window_hours:g} h",
                "body": incident_issue_body(tripped, now, cfg),
                "labels": [Label.INCIDENT.value],
            },
        )
    )
    return tripped, actions


def _line(incident: Incident) -> str:
    ref = f" ({md(incident.ref)})" if incident.ref else ""
    return f"{dt_to_json(incident.at)} {incident.kind.value}{ref}: {md(incident.detail)}"


def incident_issue_body(state: BreakerState, now: datetime, cfg: BreakerConfig) -> str:
    """The incident issue: what tripped the breaker and how an owner resets it."""
    lines = "\n".join(f"- {_line(i)}" for i in state.in_window(now, _window(cfg)))
    return (
        "## Circuit breaker tripped\n\n"
        f"Tripped at {dt_to_json(state.tripped_at)} after {cfg.threshold} or more incidents "
        f"within {cfg.window_hours:g} h. **No auto-merges** until an owner resets it; the only "
        "exception is a verified `decision:auto-revert` PR of quadrant C or lower.\n\n"
        f"### Incidents\n\n{lines}\n\n"
        "### Reset\n\nAn owner comments `/breaker reset` on this issue, or runs "
        "`capdaemon breaker reset`. It never resets by itself.\n"
    )


def reset(
    state: BreakerState, actor: str, owners: Iterable[str], now: datetime
) -> tuple[BreakerState, list[Action]]:
    """An owner resets a tripped breaker (incidents cleared); anyone else is refused, with why."""
    aware(now, "now")
    if actor.lower() not in {o.lower() for o in owners}:
        reason = f"{actor} is not an owner: only an owner can reset the breaker"
        return state, [
            audit("breaker.reset_refused", actor=actor, reason=reason),
            Action(ActionKind.REPLY, {"body": f"Refused: {reason}.", "refused": True}),
        ]
    if not state.tripped:
        return state, [audit("breaker.reset_noop", actor=actor, reason="breaker is not tripped")]
    key = state.incident_key
    new = BreakerState((), False, None, actor, now)
    return new, [
        audit(
            "breaker.reset",
            actor=actor,
            at=dt_to_json(now),
            tripped_at=dt_to_json(state.tripped_at),
        ),
        Action(
            ActionKind.CLOSE_INCIDENT_ISSUE,
            {"key": key, "comment": f"Breaker reset by {actor} at {dt_to_json(now)}."},
        ),
    ]


def allows_merge(
    state: BreakerState, quadrant: Quadrant, verified_auto_revert: bool
) -> tuple[bool, str]:
    """Closed: yes. Tripped: only a verified auto-revert PR of quadrant C or lower."""
    if not state.tripped:
        return True, "breaker closed"
    since = dt_to_json(state.tripped_at)
    if verified_auto_revert and quadrant.rank <= Quadrant.C.rank:
        return True, f"breaker tripped since {since}; verified auto-revert ({quadrant}) may land"
    if verified_auto_revert:
        return False, f"breaker tripped since {since}; auto-revert PR is {quadrant}, not C or lower"
    return False, f"breaker tripped since {since}: no auto-merges until an owner resets it"

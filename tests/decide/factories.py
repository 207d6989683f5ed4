"""Small frozen stand-ins for forge comments and reactions, and a fixed clock, for decide tests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

T0 = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)


def at(minutes: float = 0, *, hours: float = 0, days: float = 0) -> datetime:
    """T0 plus an offset."""
    return T0 + timedelta(minutes=minutes, hours=hours, days=days)


@dataclass(frozen=True)
class Comment:
    """Same shape as capdaemon.forge.types.Comment."""

    id: int
    user: str
    body: str
    created_at: datetime
    updated_at: datetime
    edited: bool | None = False


@dataclass(frozen=True)
class Reaction:
    """Same shape as capdaemon.forge.types.Reaction."""

    id: int
    user: str
    content: str
    created_at: datetime


_ids = iter(range(1000, 10**9))


def comment(
    user: str,
    body: str,
    when: datetime,
    edited: datetime | None = None,
    *,
    edit_record: bool = True,
) -> Comment:
    """A comment; `edited` marks it edited (GitHub's edit record) at that time (updated_at);
    without `edit_record` (a REST read) its edit state is unknown unless updated_at shows it."""
    if not edit_record:
        return Comment(next(_ids), user, body, when, edited or when, True if edited else None)
    return Comment(next(_ids), user, body, when, edited or when, edited is not None)


def reaction(user: str, content: str, when: datetime) -> Reaction:
    """A reaction."""
    return Reaction(next(_ids), user, content, when)

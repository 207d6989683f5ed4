"""The one home of timestamp text: aware datetimes to `...Z` and ISO-8601 text back (aware only).

Import-light on purpose (only datetime): `capdaemon scope-guard` runs before every edit.
"""

from __future__ import annotations

from datetime import UTC, datetime


class TimestampError(ValueError):
    """A timestamp that is not ISO 8601 or has no time zone; the message names the field."""


def utc_iso(dt: datetime) -> str:
    """An aware datetime as `YYYY-MM-DDTHH:MM:SSZ` (microseconds kept when present)."""
    if dt.tzinfo is None:
        raise ValueError("naive datetime in audit entry")
    dt = dt.astimezone(UTC)
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if dt.microsecond else "%Y-%m-%dT%H:%M:%SZ"
    return dt.strftime(fmt)


def parse_utc(text: str, field: str = "timestamp") -> datetime:
    """ISO-8601 text (a trailing `Z` allowed) as an aware datetime; TimestampError naming
    `field` when it is not ISO 8601 or carries no time zone (a naive time is never guessed)."""
    if not isinstance(text, str):
        raise TimestampError(f"{field}: expected an ISO 8601 time, got {type(text).__name__}")
    try:
        dt = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise TimestampError(f"{field}: {text!r} is not an ISO 8601 time") from None
    if dt.tzinfo is None:
        raise TimestampError(f"{field}: {text!r} has no time zone (e.g. 2026-05-25T12:00:00Z)")
    return dt

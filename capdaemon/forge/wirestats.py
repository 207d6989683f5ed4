"""Counts of what went over the wire to the forge, as the HTTP transport saw it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class WireCounts:
    """The transport's running counters a caller reads before and after a piece of work:
    requests sent, of them answered 304 Not Modified, writes, and seconds waited (retries,
    rate limits)."""

    sent: int
    not_modified: int
    writes: int
    waited: float


@dataclass
class TransportStats:
    """What went over the wire, as the client saw it."""

    sent: int = 0
    writes: int = 0  # non-GET requests other than token minting (content-creating, mostly)
    not_modified: int = 0
    stored: int = 0
    retries: int = 0
    rate_waits: int = 0
    paced: int = 0  # requests held back by the governor until their points fit the minute
    waited: float = 0.0
    by_method: dict[str, int] = field(default_factory=dict)

    def counts(self) -> WireCounts:
        """The running counters, as they are now."""
        return WireCounts(self.sent, self.not_modified, self.writes, self.waited)

    def as_dict(self) -> dict[str, Any]:
        """A plain copy."""
        return {
            "sent": self.sent,
            "writes": self.writes,
            "not_modified": self.not_modified,
            "stored": self.stored,
            "retries": self.retries,
            "rate_waits": self.rate_waits,
            "paced": self.paced,
            "waited": round(self.waited, 3),
            "by_method": dict(self.by_method),
        }

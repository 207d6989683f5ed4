"""Counts of what went over the wire to the forge, as the HTTP transport saw it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TransportStats:
    """What went over the wire, as the client saw it."""

    sent: int = 0
    writes: int = 0  # non-GET requests other than token minting (content-creating, mostly)
    not_modified: int = 0
    stored: int = 0
    retries: int = 0
    rate_waits: int = 0
    waited: float = 0.0
    by_method: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A plain copy."""
        return {
            "sent": self.sent,
            "writes": self.writes,
            "not_modified": self.not_modified,
            "stored": self.stored,
            "retries": self.retries,
            "rate_waits": self.rate_waits,
            "waited": round(self.waited, 3),
            "by_method": dict(self.by_method),
        }

"""`bot-state/telegram.json`: the getUpdates offset, the one-tap requests posted, and until
when a 429 asked the bot to wait. Written atomically and owner-only, like the other state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capdaemon.filenames import TELEGRAM_FILE
from capdaemon.state import StateError, atomic_write_json, read_json

VERSION = 1
LIVE = "live"  # its buttons count
APPROVED = "approved"  # decided by a tap; the message says "merged" once the PR is
CLOSED = "closed"  # its message says the outcome; taps are refused


class TelegramStore:
    """`bot-state/telegram.json`: {"version", "offset", "requests": {id: request},
    "paused_until" (epoch seconds a 429 asked to wait until)}."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / TELEGRAM_FILE
        raw = read_json(self.path, None) or {"version": VERSION, "offset": 0, "requests": {}}
        ok = (
            isinstance(raw, dict)
            and raw.get("version") == VERSION
            and isinstance(raw.get("offset"), int)
            and isinstance(raw.get("requests"), dict)
            and all(isinstance(r, dict) for r in raw["requests"].values())
            and isinstance(raw.get("paused_until", 0), int | float)
        )
        if not ok:
            raise StateError(f"{self.path}: not a capdaemon telegram.json (version {VERSION})")
        self.offset: int = raw["offset"]
        self.requests: dict[str, dict[str, Any]] = raw["requests"]
        self.paused_until = float(raw.get("paused_until", 0))

    def save(self) -> None:
        """Write it atomically, readable by the daemon's user only."""
        body: dict[str, Any] = {
            "version": VERSION,
            "offset": self.offset,
            "requests": self.requests,
        }
        if self.paused_until:
            body["paused_until"] = self.paused_until
        atomic_write_json(self.path, body, mode=0o600)

    def live(self) -> list[tuple[str, dict[str, Any]]]:
        """Requests whose buttons still count (sorted by id)."""
        snapshot = self.requests.copy()  # one C-level copy: safe against the tick's writes
        return sorted((k, r) for k, r in snapshot.items() if r.get("state") == LIVE)

    def by_message(self, chat_id: int | None, message_id: int | None) -> str | None:
        """The id of the request posted as this message (None: not one of ours)."""
        if chat_id is None or message_id is None:
            return None
        for rid, r in self.requests.copy().items():
            if r.get("chat_id") == chat_id and r.get("message_id") == message_id:
                return rid
        return None

    def for_head(self, pr: str, head_sha: str) -> dict[str, Any] | None:
        """The request (live or not) opened for one PR head."""
        for r in self.requests.values():
            if r.get("pr") == pr and r.get("head_sha") == head_sha:
                return r
        return None

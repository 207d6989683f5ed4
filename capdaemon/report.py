"""What a tick's report offers the parts it is handed to: its error and opened-issue lists."""

from __future__ import annotations

from typing import Protocol


class Report(Protocol):
    """What a tick's report offers the safety net and the channels: errors and opened issues."""

    errors: list[str]
    issues: list[str]

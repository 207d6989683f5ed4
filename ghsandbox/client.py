"""Drive the /_sandbox admin API of a sandbox in another process (faults, counters, clock)."""

from __future__ import annotations

import json
import urllib.request
from datetime import datetime
from typing import Any

from .clock import iso


class SandboxAdmin:
    """The Sandbox fault/counter/clock methods, over HTTP (for ``capdaemon sandbox serve``)."""

    def __init__(self, base_url: str, admin_token: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.admin_token = admin_token

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.base_url}/_sandbox/{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.admin_token:
            req.add_header("Authorization", f"token {self.admin_token}")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")

    def faults(
        self,
        method: str,
        path_regex: str,
        status: int = 502,
        count: int = 1,
        kind: str = "status",
        retry_after: int = 60,
        delay: float = 0.0,
    ) -> None:
        """Script faults (see Sandbox.faults)."""
        self._call(
            "POST",
            "faults",
            {
                "method": method,
                "path": path_regex,
                "status": status,
                "count": count,
                "kind": kind,
                "retry_after": retry_after,
                "delay": delay,
            },
        )

    def clear_faults(self) -> None:
        """Drop pending faults."""
        self._call("DELETE", "faults")

    def counters(self) -> dict[str, Any]:
        """Request counters (see Sandbox.counters)."""
        return dict(self._call("GET", "counters"))

    def reset_counters(self) -> None:
        """Zero the counters."""
        self._call("POST", "counters/reset", {})

    def reset_rate_limits(self) -> None:
        """Fresh rate-limit windows."""
        self._call("POST", "ratelimit/reset", {})

    def set_clock(self, when: datetime | None) -> dict[str, Any]:
        """Freeze the clock at ``when`` (aware) or return to real time with None."""
        return dict(self._call("POST", "clock", {"now": iso(when) if when else None}))

    def advance_clock(self, seconds: float) -> dict[str, Any]:
        """Move the clock forward."""
        return dict(self._call("POST", "clock", {"advance": seconds}))

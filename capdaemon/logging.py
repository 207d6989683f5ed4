"""structlog setup: one JSON event per line in production, readable in a terminal, no secrets."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

# Keys whose values are never logged (matched case-insensitively against the whole key).
_SECRET_KEY = re.compile(
    r"(?:^|_)(?:token|secret|password|passwd|authorization|private_key|key_pem|pem|jwt|"
    r"credential|credentials|cookie)(?:$|_)",
    re.IGNORECASE,
)
# Values that look like a token even under an innocent key.
_SECRET_VALUE = re.compile(
    r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|x-access-token:[^@\s]+@|[Bb]earer\s+[A-Za-z0-9._-]{16,}"
)
REDACTED = "[redacted]"


def redact_secrets(
    _logger: Any, _name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: blank out values of secret-named keys and token-looking strings."""
    for key, value in list(event_dict.items()):
        if key != "event" and _SECRET_KEY.search(key):
            event_dict[key] = REDACTED
        elif isinstance(value, str) and _SECRET_VALUE.search(value):
            event_dict[key] = _SECRET_VALUE.sub(REDACTED, value)
    return event_dict


def configure_logging(fmt: str = "auto", level: str = "info", stream: TextIO | None = None) -> None:
    """Configure structlog once for the process: `json`, `console`, or `auto` (console on a TTY)."""
    out = stream if stream is not None else sys.stderr
    if fmt == "auto":
        fmt = "console" if out.isatty() else "json"
    if fmt not in ("json", "console"):
        raise ValueError(f"log format must be json, console or auto, not {fmt!r}")
    lvl = logging.getLevelName(level.upper())
    if not isinstance(lvl, int):
        raise ValueError(f"unknown log level {level!r}")
    renderer: Any = (
        structlog.processors.JSONRenderer(sort_keys=False)
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact_secrets,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str = "capdaemon") -> Any:
    """A structlog logger bound to a component name."""
    return structlog.get_logger(name).bind(component=name)

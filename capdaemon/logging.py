"""structlog setup: one JSON event per line in production, readable in a terminal, no secrets."""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, TextIO, cast

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


LOG_LEVELS = ("debug", "info", "warning", "error", "critical")  # --log-level's choices


def configure_logging(fmt: str = "auto", level: str = "info", stream: TextIO | None = None) -> str:
    """Configure structlog once for the process: `json`, `console`, or `auto` (console on a TTY).

    Returns the format chosen ("json" or "console")."""
    # a duck-typed stream: the loggers below only write, flush and ask isatty
    out = cast(TextIO, _WholeLines((lambda: stream) if stream is not None else _stderr))
    if fmt == "auto":
        fmt = "console" if out.isatty() else "json"
    if fmt not in ("json", "console"):
        raise ValueError(f"log format must be json, console or auto, not {fmt!r}")
    lvl = logging.getLevelName(level.upper()) if level.lower() in LOG_LEVELS else None
    if not isinstance(lvl, int):
        raise ValueError(f"unknown log level {level!r} (one of: {', '.join(LOG_LEVELS)})")
    renderer: Any = (
        structlog.processors.JSONRenderer(sort_keys=False)
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[Any] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    route_stdlib_logging(out, lvl, shared, renderer)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *shared,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    return fmt


def _stderr() -> TextIO:
    """Whatever `sys.stderr` is at the moment (it may be replaced after set-up)."""
    return sys.stderr


class _WholeLines:
    """The log stream, passed on a whole line at a time under one lock: structlog's print
    writes a message and its newline separately, and the stdlib handler writes from other
    threads (the scheduler's, the detector's), so without it two events could share a line
    and a JSON log would no longer be one event per line."""

    _lock = threading.Lock()

    def __init__(self, target: Callable[[], TextIO]) -> None:
        self._target = target
        self._partial = threading.local()  # this thread's text since its last newline

    def write(self, text: str) -> int:
        pending = getattr(self._partial, "text", "") + text
        lines, newline, rest = pending.rpartition("\n")
        self._partial.text = rest
        if newline:
            with self._lock:
                self._target().write(lines + newline)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._target().flush()

    def isatty(self) -> bool:
        return self._target().isatty()


@contextlib.contextmanager
def logging_for_command(fmt: str = "auto", level: str = "info") -> Iterator[str]:
    """Logging set up for one command run in-process, restored afterwards (the previous
    structlog configuration, root handlers and level); yields the format chosen."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, root_level = list(root.handlers), root.level
    try:
        yield configure_logging(fmt, level)
    finally:
        structlog.configure(**saved)
        root.handlers[:] = handlers
        root.setLevel(root_level)


def get_logger(name: str = "capdaemon") -> Any:
    """A structlog logger bound to a component name, resolved at each use: a module-level
    `log = get_logger(...)` follows the configuration (format, stream) set up later."""
    return structlog.get_logger(name, component=name)


# Messages of the libraries we drive that we report ourselves as one structured event
# (the scheduler's "skipped: maximum number of running instances" becomes `tick.overrun`).
_REPORTED_ELSEWHERE = ("skipped: maximum number of running instances",)
_HANDLER_NAME = "capdaemon.structlog"


class _Quieten(logging.Filter):
    """Drops the library records that capdaemon reports itself as a structured event."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in _REPORTED_ELSEWHERE)


def _component(
    _logger: Any, _name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A stdlib record's logger name as the event's `component`."""
    record = event_dict.get("_record")
    if record is not None and "component" not in event_dict:
        event_dict["component"] = record.name
    return event_dict


def route_stdlib_logging(out: TextIO, level: int, shared: list[Any], renderer: Any) -> None:
    """Send every stdlib `logging` record (APScheduler, urllib3, …) through the same processors
    and renderer as structlog's, on the same stream: JSON stays one JSON event per line.

    APScheduler's per-run chatter stays below `level` unless the level is debug.
    """
    handler = logging.StreamHandler(out)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[_component, *shared, structlog.processors.format_exc_info],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    handler.addFilter(_Quieten())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("apscheduler").setLevel(max(level, logging.WARNING))

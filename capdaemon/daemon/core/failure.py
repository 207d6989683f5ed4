"""How one item of a tick fails: the one error reporter, and the guard around one item's work."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from capdaemon.forge.errors import ForgeError
from capdaemon.logging import get_logger

TICK_LOG = get_logger("capdaemon.tick")


class Report(Protocol):
    """What a tick's report offers an error: its list of errors."""

    errors: list[str]


def report_error(
    report: Report | None, event: str, message: str, *, log: Any = TICK_LOG, **kv: Any
) -> None:
    """One tick error: in the report's errors (when there is a report) and in the log."""
    if report is not None:
        report.errors.append(message)
    log.warning(event, error=message, **kv)


@dataclass
class Item:
    """What `per_item` saw: the ForgeError it reported (None: the work went through)."""

    error: ForgeError | None = None

    @property
    def failed(self) -> bool:
        """True when the item's work stopped on a ForgeError (reported already)."""
        return self.error is not None


@contextmanager
def per_item(
    report: Report | None, event: str, what: str, *, log: Any = TICK_LOG, **kv: Any
) -> Iterator[Item]:
    """Run one item's work (a PR, an issue, an escalation): a ForgeError is reported as
    "`what`: error" under `event` and the tick goes on to the next item; a TickAbort (a rate
    limit, a stop request) is not a ForgeError and ends the tick; anything else is a bug and
    propagates too. After the block, `item.failed` says whether the work stopped early."""
    item = Item()
    try:
        yield item
    except ForgeError as exc:
        item.error = exc
        report_error(report, event, f"{what}: {exc}", log=log, **kv)

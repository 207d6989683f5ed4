"""Where a tick spends its time: per step, wall seconds and what went over the wire meanwhile.

The figures come from the forge transport's own counters (requests sent, 304s, writes, seconds
waited for pacing and rate limits) and the seconds the tick waited for mergeability, read
before and after each step; a change detector looking meanwhile on its own thread is counted
in the step it overlaps, and so is a change served apart between two repos of steps 1-2
(capdaemon.daemon.core.handover; it logs its own figures too). The tick logs them with its
`tick.done` line (`steps`), so a slow tick can be read from the log.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields

from capdaemon.daemon.merging.mergewait import MergeabilityWaits
from capdaemon.forge.port import ForgePort
from capdaemon.forge.wirestats import WireCounts

# the forge's counters (requests sent, 304s, writes, seconds waited) and the tick's own wait
WIRE_FIELDS = (*(f.name for f in fields(WireCounts)), "mergeability_waited")
SECONDS_FIELDS = ("seconds", "waited", "mergeability_waited")


def wire_counters(
    forge: ForgePort, merge_waits: MergeabilityWaits | None = None
) -> dict[str, float]:
    """The forge's running wire counters and the seconds this tick waited for GitHub to
    compute mergeability."""
    out = {k: float(v) for k, v in asdict(forge.wire_counts()).items()}
    out["mergeability_waited"] = merge_waits.waited if merge_waits is not None else 0.0
    return out


@dataclass
class StepTimes:
    """One tick's per-step figures, in the order the steps ran."""

    forge: ForgePort
    merge_waits: MergeabilityWaits | None = None  # the tick's
    steps: dict[str, dict[str, float]] = field(default_factory=dict)
    _open: tuple[str, float, dict[str, float]] | None = None

    def start(self, name: str) -> None:
        """A step begins."""
        self._open = (name, time.monotonic(), wire_counters(self.forge, self.merge_waits))

    def stop(self) -> None:
        """The step begun last ended (normally or not)."""
        if self._open is None:
            return
        name, started, before = self._open
        self._open = None
        after = wire_counters(self.forge, self.merge_waits)
        row = self.steps.setdefault(name, dict.fromkeys(("seconds", *WIRE_FIELDS), 0.0))
        row["seconds"] += time.monotonic() - started
        for k in WIRE_FIELDS:
            row[k] += after[k] - before[k]

    def summary(self) -> dict[str, dict[str, float]]:
        """Rounded figures for the log: seconds and waits to 0.1 s, counts as integers."""
        out: dict[str, dict[str, float]] = {}
        for name, row in self.steps.items():
            out[name] = {k: round(v, 1) if k in SECONDS_FIELDS else int(v) for k, v in row.items()}
        return out

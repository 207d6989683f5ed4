"""One line of `capdaemon doctor`'s report: a status, what was checked, and what was found."""

from __future__ import annotations

from dataclasses import dataclass

OK, WARN, FAIL, SKIP = "ok", "warn", "FAIL", "skip"


@dataclass(frozen=True)
class Finding:
    """One line of the report: status, what was checked, and what was found or what to do."""

    status: str
    check: str
    detail: str
    config: bool = False  # a failure the config must fix (doctor exits 2, as `run` would)

    def line(self, width: int = 22) -> str:
        """`ok    config               /etc/capdaemon: 2 repos, mode enforce`."""
        return f"{self.status:<5} {self.check:<{width}} {self.detail}"

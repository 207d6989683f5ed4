"""Attack-suite fixtures: the daemon and safety harnesses of tests/daemon and tests/safety."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ghsandbox import Sandbox
from tests.daemon.conftest import Harness
from tests.safety.conftest import SafetyHarness


@pytest.fixture
def daemon(sandbox: Sandbox, tmp_path: Path) -> Iterator[Harness]:
    """A live daemon (real Ticker, App auth) over the shared sandbox, clock frozen at T0."""
    h = Harness(sandbox, tmp_path)
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture
def safe(sandbox: Sandbox, tmp_path: Path) -> Iterator[SafetyHarness]:
    """The daemon harness with safety-net helpers (breaker, tasks, CI statuses)."""
    h = SafetyHarness(sandbox, tmp_path)
    try:
        yield h
    finally:
        h.stop()


def quadrant(h: Harness, number: int) -> str:
    """The quadrant of the PR's newest classification audit entry."""
    recs = h.classifications(number)
    assert recs, f"#{number} was never classified"
    return str(recs[-1]["quadrant"])

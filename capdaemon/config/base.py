"""The config's lowest layer: a required check's spec and the add-only union of lists."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CheckSpec:
    """An extra check that must pass before a merge (`repos[].extra_checks`, `.capdaemon.yml`).

    With `app_id` only a check run from that GitHub App counts. Without it, only a check
    run from some GitHub App counts: never a commit status, which anyone with write access
    to the repo (an agent) can post under any name.
    """

    context: str
    app_id: int | None = None


def _check_specs(items: Iterable[Any]) -> tuple[CheckSpec, ...]:
    return tuple(CheckSpec(i) if isinstance(i, str) else i for i in items)


def _union(base: tuple[Any, ...], extra: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys((*base, *extra)))

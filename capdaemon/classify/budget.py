"""Size and time budgets for classifying a PR: a file over budget is critical and irreversible."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from capdaemon.classify.axes import classify_file, fail_closed
from capdaemon.classify.compiled import CompiledClassifier
from capdaemon.model import FileChange, FileVerdict

BUDGET_REASON = "classification budget"


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits on what one PR's classification may read and how long it may take.

    Sizes count the characters of each file's patch plus any base/head content gathered for
    it. Times are checked between files (and a file that took longer than its share is not
    trusted): nothing is cut short mid-file, so the parsers themselves must stay near-linear.
    """

    file_chars: int = 2_000_000
    pr_chars: int = 20_000_000
    file_seconds: float = 5.0
    pr_seconds: float = 30.0
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)


DEFAULT_BUDGET = Budget()


def _size(fc: FileChange) -> int:
    return sum(len(t) for t in (fc.patch, fc.base_content, fc.head_content) if t)


def over_budget(fc: FileChange, why: str) -> FileVerdict:
    """The fail-closed verdict of a file that was not (or not in time) classified."""
    return fail_closed(
        fc,
        f"critical: {BUDGET_REASON}: {why}",
        f"irreversible: {BUDGET_REASON}: {why} (fail closed)",
    )


def classify_files(
    files: Sequence[FileChange], compiled: CompiledClassifier, budget: Budget = DEFAULT_BUDGET
) -> tuple[FileVerdict, ...]:
    """Classify each file within the budget; files past it fail closed, naming the budget."""
    clock = budget.clock
    started = clock()
    read = 0
    out: list[FileVerdict] = []
    for fc in files:
        size = _size(fc)
        if size > budget.file_chars:
            out.append(over_budget(fc, f"{size} characters, over {budget.file_chars} per file"))
            continue
        if read + size > budget.pr_chars:
            out.append(over_budget(fc, f"the PR is over {budget.pr_chars} characters"))
            continue
        if clock() - started > budget.pr_seconds:
            out.append(over_budget(fc, f"the PR took over {budget.pr_seconds:g} s"))
            continue
        read += size
        began = clock()
        verdict = classify_file(fc, compiled)
        if clock() - began > budget.file_seconds:
            verdict = over_budget(fc, f"the file took over {budget.file_seconds:g} s")
        out.append(verdict)
    return tuple(out)

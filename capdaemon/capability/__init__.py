"""The capability system's pure core: task scopes, snapshot hashing and the scope checks.

No file, process or network I/O here (tests/capability/test_cap_pure.py checks): the snapshot
files, dispatch registry, escalation records and task-file reading live in `capdaemon.stores`,
the QC runner in `capdaemon.commands.qc`. Public API: check_paths, check_file_changes,
check_command, parse_task, and the typed errors in `model`. Names are imported lazily so that
`scope-guard` loads only the submodules it uses.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing costs ~2 ms to import: scope-guard imports this package
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "capdaemon.capability.model": (
        "BadTaskIdError", "Capability", "CapabilityError", "CapabilitySnapshot",
        "DispatchConflictError", "ExpiredError", "NoCapabilityError", "SnapshotError",
        "TamperedError", "TaskFileError", "UnknownTaskError", "Violation", "ViolationKind",
        "validate_task_id",
    ),
    "capdaemon.capability.scope": (
        "check_binding", "check_command", "check_file_changes", "check_path", "check_paths",
        "check_symlink", "expiry_violation",
    ),
    "capdaemon.capability.snapshot": ("build_snapshot", "content_hash", "guard_capability"),
    "capdaemon.capability.taskfile": ("parse_task", "parse_task_text"),
}  # fmt: skip
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'capdaemon.capability' has no attribute {name!r}")
    return getattr(importlib.import_module(mod), name)


def __dir__() -> list[str]:
    return __all__

"""The capability system: task scopes, immutable snapshots, scope checks and escalation records.

Public API: load_snapshot, check_paths, check_file_changes,
check_command, list_escalations, mark_notified, and the typed errors in `model`. Names are
imported lazily so that `scope-guard` loads only the submodules it uses.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing costs ~2 ms to import: scope-guard imports this package
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "capdaemon.capability.escalation": (
        "EscalationRecord", "list_escalations", "mark_notified", "mark_resolved",
        "read_escalation", "write_escalation",
    ),
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
    "capdaemon.capability.registry": ("DispatchResult", "TaskState", "dispatch", "list_tasks"),
    "capdaemon.capability.snapshot": ("find_dispatch_records", "guard_capability", "load_snapshot"),
    "capdaemon.capability.taskfile": ("load_task_file", "parse_task", "parse_task_text"),
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

"""Reading a task file from disk (bounded, UTF-8) for the pure parser in capability.taskfile."""

from __future__ import annotations

from pathlib import Path

from capdaemon.capability.model import MAX_TASK_FILE_BYTES, Capability, TaskFileError
from capdaemon.capability.taskfile import parse_task_text


def load_task_file(path: Path, *, allow_no_scope: bool = False) -> Capability:
    """Read and validate a task file. Raises TaskFileError (NoCapabilityError for no scope)."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_TASK_FILE_BYTES + 1)
    except FileNotFoundError:
        raise TaskFileError("", "no such task file") from None
    except OSError as exc:
        raise TaskFileError("", f"cannot read: {exc.strerror}") from None
    if len(raw) > MAX_TASK_FILE_BYTES:
        raise TaskFileError(
            "", f"larger than the limit of {MAX_TASK_FILE_BYTES // 1024} KiB for a task file"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TaskFileError("", "not UTF-8 text") from None
    return parse_task_text(text, allow_no_scope=allow_no_scope)

"""The bot-state directory's format version (`bot-state/format.json`): one number for its layout.

A directory without the file was written before formats were numbered: its layout is format 1,
the current one, and the daemon stamps it (saying so in its log). A directory of a newer
format than this capdaemon knows is refused by the daemon and by every command that opens
it, in one line naming the file and both versions: an older capdaemon never reads, and
never rewrites, state it does not understand. `scope-guard` checks it before every edit an
agent makes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from capdaemon import __version__
from capdaemon.filenames import STATE_FORMAT_FILE
from capdaemon.state import atomic_write_json

STATE_FORMAT = 1  # the layout this capdaemon reads and writes
OLDEST_FORMAT = 1  # the oldest it reads (older ones are migrated to STATE_FORMAT first)


class StateFormatError(RuntimeError):
    """The state directory's format is newer than this capdaemon's, or format.json is
    unreadable; the message names the file."""


def read_format(state_dir: Path) -> int | None:
    """The format written in `state_dir`, or None when there is no format.json."""
    path = Path(state_dir) / STATE_FORMAT_FILE
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except (FileNotFoundError, NotADirectoryError):  # no directory: its readers say so
        return None
    except OSError as exc:
        raise StateFormatError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError:
        raise StateFormatError(
            f'{path}: not JSON; expected {{"format": {STATE_FORMAT}}} (never overwritten)'
        ) from None
    value = raw.get("format") if isinstance(raw, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise StateFormatError(
            f'{path}: expected {{"format": N}} with a whole number N >= 1, got {raw!r}'
        )
    return value


def check_format(state_dir: Path) -> int:
    """The directory's format (1 when it has no format.json); StateFormatError when it is
    newer than this capdaemon reads."""
    found = read_format(state_dir)
    if found is None:
        return OLDEST_FORMAT
    if found > STATE_FORMAT:
        path = Path(state_dir) / STATE_FORMAT_FILE
        raise StateFormatError(
            f"{path}: state format {found} was written by a newer capdaemon; this one"
            f" ({__version__}) reads format {STATE_FORMAT}: upgrade capdaemon (state is"
            " never downgraded)"
        )
    return found


def stamp_format(state_dir: Path) -> str | None:
    """For the writer holding the state lock (the daemon): check the format, and write
    format.json where it is missing or older. Returns what was done, for the log ("stamped
    ..."), or None when the directory was already current."""
    found = read_format(state_dir)
    if found == STATE_FORMAT:
        return None
    check_format(state_dir)
    path = Path(state_dir) / STATE_FORMAT_FILE
    before = (
        "a new state directory"
        if _is_empty(state_dir)
        else (
            f"format {found}"
            if found is not None
            else "no format.json (written before formats were numbered: format 1)"
        )
    )
    atomic_write_json(path, {"format": STATE_FORMAT})
    return f"{path}: {before}; stamped format {STATE_FORMAT}"


def _is_empty(state_dir: Path) -> bool:
    """No state files yet (the lock file and dot-files aside)."""
    try:
        names = os.listdir(state_dir)
    except FileNotFoundError:
        return True
    return all(n.startswith(".") or n == "capdaemon.lock" for n in names)

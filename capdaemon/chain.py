"""Checking a hash chain link by link: one entry, or the lines appended after a known point."""

from __future__ import annotations

import json
import re

from capdaemon.canon import entry_hash

TYPE_CHECKING = False  # scope-guard run imports this module: typing costs ~2 ms to import
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

CHAIN_KEYS = ("seq", "prev", "hash")
HEX64 = re.compile(r"[0-9a-f]{64}")  # an entry hash: sha256, lower-case hex


def entry_problem(rec: Any, expected_seq: int, prev: str) -> str:
    """Why a parsed line is not the next link of a chain ("" when it is)."""
    if not isinstance(rec, dict) or any(k not in rec for k in CHAIN_KEYS):
        return "entry lacks seq/prev/hash"
    if rec["seq"] != expected_seq:
        return f"seq {rec['seq']} where {expected_seq} was expected"
    if rec["prev"] != prev:
        return "prev does not link to the entry before"
    if entry_hash(rec) != rec["hash"]:
        return "hash does not match the content"
    return ""


def check_tail(path: Path, offset: int, seq: int, prev: str) -> tuple[str, tuple[int, int, str]]:
    """Check the complete lines after byte `offset`, whose entry before is `seq` with hash
    `prev`: ("" or the first problem, (offset, seq, hash) of the last good entry)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        data = b""
    for raw in data.split(b"\n")[:-1]:  # the last piece is "" or a torn tail
        try:
            rec = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return f"not JSON: {exc}", (offset, seq, prev)
        problem = entry_problem(rec, seq + 1, prev)
        if problem:
            return problem, (offset, seq, prev)
        seq, prev, offset = seq + 1, rec["hash"], offset + len(raw) + 1
    return "", (offset, seq, prev)


def whole_lines_size(path: Path) -> int:
    """The byte length of a log up to and including its last newline (0: none, or no file)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    with open(path, "rb") as fh:
        back = 0
        while back < size:
            step = min(size - back, 65536)
            fh.seek(size - back - step)
            idx = fh.read(step).rfind(b"\n")
            if idx >= 0:
                return size - back - step + idx + 1
            back += step
    return 0

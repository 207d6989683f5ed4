"""Property: checking a chain piece by piece equals checking it whole, and no edit before the
verified point goes unnoticed (the tail check, or the full check up to the cursor)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.audit import (
    GENESIS,
    ChainCursor,
    resume_cursor,
    verify,
    verify_from,
    verify_prefix,
)
from capdaemon.canon import canonical_json, entry_hash
from capdaemon.state import atomic_write_json

bodies = st.lists(
    st.fixed_dictionaries(
        {"action": st.sampled_from(["merge", "ballot", "tier"]), "note": st.text(max_size=12)}
    ),
    min_size=1,
    max_size=25,
)


def _append(path: Path, entries: list[dict[str, Any]], seq: int, prev: str) -> tuple[int, str]:
    """Append as the audit writer does (canonical JSON, seq/prev/hash, the head pointer)."""
    with open(path, "a", encoding="utf-8") as fh:
        for body in entries:
            seq += 1
            rec = {**body, "ts": "2026-05-25T03:00:00Z", "seq": seq, "prev": prev}
            rec["hash"] = prev = entry_hash(rec)
            fh.write(canonical_json(rec) + "\n")
    if seq:
        atomic_write_json(path.with_name(path.name + ".head"), {"seq": seq, "hash": prev})
    return seq, prev


@settings(max_examples=60, deadline=None)
@given(entries=bodies, cuts=st.lists(st.integers(0, 25), max_size=4), data=st.data())
def test_piecewise_checks_equal_the_whole_and_catch_edits(
    entries: list[dict[str, Any]], cuts: list[int], data: st.DataObject
) -> None:
    """Appending in random pieces and checking each new tail visits every entry once and
    ends where a full check ends. Then one byte changed inside the verified part (same
    file, same length): the cursor is refused when the edit is in the last verified entry,
    and otherwise the full check up to the cursor reports it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "actions.jsonl"
        seq, prev = 0, GENESIS
        cursor: ChainCursor | None = None
        seen: list[int] = []
        bounds = sorted({min(c, len(entries)) for c in cuts} | {len(entries)})
        start = 0
        for end in bounds:
            seq, prev = _append(path, entries[start:end], seq, prev)
            start = end
            assert cursor is None or not cursor.seq or resume_cursor(path, cursor) == cursor
            report, cursor = verify_from(path, cursor, lambda _o, r: seen.append(r["seq"]))
            assert report.ok and cursor is not None
        whole = verify(path)
        assert seen == list(range(1, len(entries) + 1))
        assert (report.count, report.last_hash) == (whole.count, whole.last_hash)
        assert verify_prefix(path, cursor).ok

        raw = bytearray(path.read_bytes())
        at = data.draw(st.integers(0, len(raw) - 2))  # never the last newline
        if raw[at : at + 1] == b"\n":
            return  # joining two lines changes the count: caught, but not this property
        raw[at] = ord("x") if raw[at] != ord("x") else ord("y")
        with open(path, "r+b") as fh:
            fh.write(raw)
        if at >= cursor.last_start:
            assert resume_cursor(path, cursor) is None
        else:
            assert not verify_prefix(path, cursor).ok

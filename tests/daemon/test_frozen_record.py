"""PR records are frozen: a change is a new record made current (and durable) by the store, a
stale copy cannot overwrite a newer one, and the files on disk read and rewrite as before."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from capdaemon.filenames import JOURNAL_FILE, PRS_FILE
from capdaemon.stores.botstate import PRStore, StaleRecordError
from capdaemon.stores.prrecord import IssueRef, Pending, PendingOp, PRRecord, PRState

DATA = Path(__file__).resolve().parents[1] / "data" / "botstate"
# Written by the daemon's store while records were still mutable: the demo's prs.json, and a
# journal of four saves (a pending merge, a review issue with its text and a handled vote, a
# new PR, the merge's outcome) ending in a torn line; the compacted file is what it made of them.
PRS, JOURNAL, COMPACTED = (
    DATA / "prs-v1-demo.json",
    DATA / "prs-v1-demo.journal",
    DATA / "prs-v1-demo-compacted.json",
)


def _store(tmp_path: Path) -> PRStore:
    shutil.copy(PRS, tmp_path / PRS_FILE)
    return PRStore(tmp_path)


def _journal_lines(store: PRStore) -> int:
    return len(store.journal.read_bytes().splitlines()) if store.journal.exists() else 0


def test_a_journal_written_before_records_froze_replays_and_compacts_byte_for_byte(
    tmp_path: Path,
) -> None:
    shutil.copy(PRS, tmp_path / PRS_FILE)
    shutil.copy(JOURNAL, tmp_path / JOURNAL_FILE)
    store = PRStore(tmp_path)  # replays the journal (the torn tail dropped), then compacts
    assert not (tmp_path / JOURNAL_FILE).exists()
    assert (tmp_path / PRS_FILE).read_bytes() == COMPACTED.read_bytes()
    merged = store.records["acme/widgets#6"]
    assert merged.state is PRState.MERGED and merged.pending is None
    assert "vote:reaction:77" in store.records["acme/widgets#5"].handled
    PRStore(tmp_path).compact()  # read and written again: unchanged
    assert (tmp_path / PRS_FILE).read_bytes() == COMPACTED.read_bytes()


def test_assigning_a_field_or_changing_a_container_in_place_raises(tmp_path: Path) -> None:
    rec = _store(tmp_path).records["acme/widgets#5"]
    for name, value in (("state", PRState.CLOSED), ("fingerprint", ""), ("pending", None)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(rec, name, value)
    with pytest.raises(AttributeError):
        rec.handled.append("vote:x")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        rec.issues["review"] = IssueRef(1)  # type: ignore[index]
    assert rec == _store(tmp_path).records["acme/widgets#5"]


def test_a_list_given_to_a_record_is_copied_not_shared() -> None:
    blocking, issues = ["P0: secrets"], {"ballot": IssueRef(3)}
    rec = PRRecord("o/r", 1, blocking=blocking, issues=issues)  # type: ignore[arg-type]
    blocking.clear()
    issues.clear()
    assert rec.blocking == ("P0: secrets",) and rec.issues == {"ballot": IssueRef(3)}


def test_a_change_is_a_new_current_record_with_one_journal_line(tmp_path: Path) -> None:
    store = _store(tmp_path)
    old = store.records["acme/widgets#6"]
    pending = Pending(PendingOp.MERGE, old.head_sha, "2026-01-05T10:00:00Z", base_ref="main")
    new = store.change(old, pending=pending, fingerprint="")
    assert store.records[old.ref] is new and new.pending == pending and new.fingerprint == ""
    assert old.pending is None and old.fingerprint  # the old copy is untouched
    assert _journal_lines(store) == 1  # two fields, one append
    assert PRStore(tmp_path).records[old.ref] == new  # durable: replayed after a restart


def test_a_change_kept_in_memory_writes_nothing_until_the_next_durable_one(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    rec = store.change(store.records["acme/widgets#6"], durable=False, would_merge_head="h")
    assert store.records[rec.ref] is rec and _journal_lines(store) == 0
    rec = store.change(rec, light="l")
    assert _journal_lines(store) == 1
    again = PRStore(tmp_path).records[rec.ref]
    assert again.would_merge_head == "h" and again.light == "l"


def test_a_stale_copy_can_neither_change_nor_overwrite_the_current_record(
    tmp_path: Path,
) -> None:
    """A lost update: a holder of an old copy must not undo the change made since (here the
    merge intent recorded before the merge call)."""
    store = _store(tmp_path)
    stale = store.records["acme/widgets#6"]
    pending = Pending(PendingOp.MERGE, stale.head_sha, "2026-01-05T10:00:00Z")
    current = store.change(stale, pending=pending)
    with pytest.raises(StaleRecordError):
        store.change(stale, fingerprint="")
    with pytest.raises(StaleRecordError):
        store.save(stale)
    assert store.records[stale.ref] is current and _journal_lines(store) == 1
    assert PRStore(tmp_path).records[stale.ref].pending == pending


def test_a_record_built_aside_stays_aside_until_it_is_put(tmp_path: Path) -> None:
    store = _store(tmp_path)
    aside = PRRecord("acme/widgets", 99, first_seen="2026-01-05T10:00:00Z")
    changed = store.change(aside, durable=False, auto_revert_head="h")
    assert changed.auto_revert_head == "h" and aside.ref not in store.records
    assert store.put(changed) is store.records[aside.ref] and _journal_lines(store) == 1

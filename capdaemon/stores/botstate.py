"""The daemon's bot-state files: per-PR records (prs.json) and tick metrics (tick_metrics.json)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from capdaemon.decide.labels import IssueKind
from capdaemon.filenames import JOURNAL_FILE, METRICS_FILE, PRS_FILE
from capdaemon.jsonl import read_after
from capdaemon.logging import get_logger
from capdaemon.state import StateError, atomic_write_json, fsync_dir, read_json
from capdaemon.stores.prrecord import PRRecord as PRRecord  # its one home (typed records)
from capdaemon.stores.prrecord import RecordError, record_of

PRS_VERSION = 1
# The kind of a PR's decision issue: its marker's "kind", its audit entries' "kind" and its
# key in PRRecord.issues are the same word.
BALLOT_KIND, REVIEW_KIND = IssueKind.BALLOT.value, IssueKind.REVIEW.value
SCOPE_KIND = IssueKind.SCOPE_VIOLATION.value


class StaleRecordError(RuntimeError):
    """A record was changed or saved from a copy that is no longer its PR's current record."""


class PRStore:
    """`bot-state/prs.json` plus its journal `prs.journal`.

    `records` is the one home of each PR's current record. Records are frozen:
    `change(rec, **fields)` makes the changed copy the current one and appends it to the
    journal (fsynced: cheap, whatever the number of PRs); `put(rec)` does the same for a
    record built whole; a holder of an older copy takes the returned one or reads it again
    by key. `compact()` rewrites prs.json atomically and drops the journal (once per tick).
    Loading replays the journal over prs.json (the newest state of a record wins) and
    ignores a torn final line — a crash mid-append, whose action had not started yet.
    """

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / PRS_FILE
        self.journal = Path(state_dir) / JOURNAL_FILE
        self.records: dict[str, PRRecord] = {}
        raw = read_json(self.path, None)
        if raw is not None:
            if (
                not isinstance(raw, dict)
                or raw.get("version") != PRS_VERSION
                or not isinstance(raw.get("prs"), dict)
            ):
                raise StateError(
                    f"{self.path}: not a capdaemon prs.json (version {PRS_VERSION}); "
                    "never overwritten"
                )
            for ref, rec in raw["prs"].items():
                self.records[ref] = self._parse(self.path, ref, rec)
        self._replay()

    def _parse(self, where: Path, ref: str, data: Any) -> PRRecord:
        """One record, or a StateError naming the file, the PR and the field."""
        try:
            return record_of(ref, data)
        except RecordError as exc:
            raise StateError(f"{where}: {exc}; never overwritten") from exc

    def _replay(self) -> None:
        if not self.journal.exists():
            return
        # a malformed complete line raises AuditCorruptError (a StateError) naming it
        entries, end = read_after(self.journal, 0)
        torn = self.journal.stat().st_size - end
        if torn:  # a crash mid-append: that update's action had not started (logged, not silent)
            get_logger("capdaemon.state").warning(
                "state.journal_torn_tail", path=str(self.journal), dropped_bytes=torn
            )
        for n, entry in enumerate(entries, 1):  # every complete line is an entry here
            missing = [k for k in ("ref", "record") if k not in entry]
            if missing:
                raise StateError(
                    f"{self.journal}:{n}: malformed journal line (no {', '.join(missing)}); "
                    "never overwritten"
                )
            self.records[entry["ref"]] = self._parse(self.journal, entry["ref"], entry["record"])
        self.compact()

    def get(self, repo: str, number: int) -> PRRecord | None:
        """The record of one PR, if any."""
        return self.records.get(f"{repo}#{number}")

    def setdefault(self, repo: str, number: int, now_iso: str) -> PRRecord:
        """The record of one PR, created on first sight."""
        ref = f"{repo}#{number}"
        rec = self.records.get(ref)
        if rec is None:
            rec = PRRecord(repo=repo, number=number, first_seen=now_iso, updated_at=now_iso)
            self.records[ref] = rec
        return rec

    def change(self, rec: PRRecord, *, durable: bool = True, **fields: Any) -> PRRecord:
        """`rec` with `fields` changed, made the PR's current record and, unless `durable` is
        False, durable (one journal append); the caller goes on with the returned record.

        `durable=False` keeps a change in memory until the record's next durable change (or
        the compaction ending the tick). A record built aside (a new PR not published yet)
        stays aside then. Changing a copy that is no longer the current record raises
        StaleRecordError: the change would drop another one.
        """
        current = self.records.get(rec.ref)
        if current is not None and current is not rec:
            raise StaleRecordError(f"{rec.ref}: changed from a record that is not its current one")
        new = dataclasses.replace(rec, **fields)
        if durable or current is not None:
            return self.put(new, durable=durable)
        return new  # built aside, and stays aside

    def put(self, rec: PRRecord, *, durable: bool = True) -> PRRecord:
        """Make `rec` its PR's current record and, unless `durable` is False, durable (one
        journal append); returns it."""
        self.records[rec.ref] = rec
        if durable:
            self.save(rec)
        return rec

    def save(self, rec: PRRecord) -> None:
        """Append one record's current state to the journal and fsync (`put`/`change` do)."""
        if self.records.get(rec.ref) is not rec:
            raise StaleRecordError(f"{rec.ref}: saved from a record that is not its current one")
        line = json.dumps(
            {"ref": rec.ref, "record": rec.to_dict()}, ensure_ascii=False, separators=(",", ":")
        )
        fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def compact(self) -> None:
        """Rewrite prs.json with every record and drop the journal."""
        body = {
            "version": PRS_VERSION,
            "prs": {ref: r.to_dict() for ref, r in sorted(self.records.items())},
        }
        atomic_write_json(self.path, body)
        try:
            self.journal.unlink()
        except FileNotFoundError:
            return
        fsync_dir(self.path.parent)


QUADRANT_COUNTERS = ("quadrant_a_count", "quadrant_b_count", "quadrant_c_count", "quadrant_d_count")


class Metrics:
    """`bot-state/tick_metrics.json`: counters and last-tick facts (other steps' keys are kept)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / METRICS_FILE
        raw = read_json(self.path, None)
        if raw is not None and not isinstance(raw, dict):
            raise StateError(f"{self.path}: not a JSON object; never overwritten")
        self.data: dict[str, Any] = dict(raw or {})
        for key in QUADRANT_COUNTERS:
            self.data.setdefault(key, 0)

    def count_quadrant(self, quadrant: str) -> None:
        """Count one classification (a PR at a new head) in its quadrant's counter."""
        key = f"quadrant_{quadrant.lower()}_count"
        self.data[key] = int(self.data.get(key, 0)) + 1

    def update(self, **values: Any) -> None:
        """Set last-tick facts."""
        self.data.update(values)

    def save(self) -> None:
        """Write atomically."""
        atomic_write_json(self.path, self.data)

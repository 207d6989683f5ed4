"""The daemon's bot-state files: per-PR records (prs.json) and tick metrics (tick_metrics.json)."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capdaemon.decide.labels import IssueKind
from capdaemon.filenames import JOURNAL_FILE, METRICS_FILE, PRS_FILE
from capdaemon.jsonl import read_after
from capdaemon.logging import get_logger
from capdaemon.state import StateError, atomic_write_json, fsync_dir, read_json

PRS_VERSION = 1
# The kind of a PR's decision issue: its marker's "kind", its audit entries' "kind" and its
# key in PRRecord.issues are the same word. Records written before may say "scope".
BALLOT_KIND, REVIEW_KIND = IssueKind.BALLOT.value, IssueKind.REVIEW.value
SCOPE_KIND = IssueKind.SCOPE_VIOLATION.value
_LEGACY_ISSUE_KINDS = {"scope": SCOPE_KIND}


@dataclass
class PRRecord:
    """What the daemon remembers about one PR between ticks (keyed `owner/repo#N`).

    `fingerprint` hashes the classification inputs last handled (head, labels, foreign
    check runs — not statuses, which classification never sees —, policy, capability);
    `audited` the inputs whose classification is already in the audit log (a crash between
    audit and publication never audits twice); `published` adds the ballot state (the check
    and issues as last written). `issues` maps an issue kind (ballot, review, scope-violation) to
    {"number", "open", "opened_at", "kept_open"}.
    `ballot_round` is decide's BallotRound JSON; `ballot` the last applied outcome.
    `pending` is an action recorded as attempted whose outcome is not recorded yet.
    `light` hashes what the PR list, the policy and the capability say (head, base, labels,
    draft, policy, capability) at the last full evaluation; `firm_d` is True when the quadrant
    is D by votes no check run can lift (None: not known, recorded before this field);
    `ballot_seen` is {"fp", "at"}: the ballot issue's activity (issue list) when its comments
    and reactions were last read, and when. Together they let a steady tick skip reads
    (the skip rules are in capdaemon/daemon/gather.py).
    `auto_revert_head` / `auto_revert_floor`: the head at which the newest `labeled
    decision:auto-revert` event already present was recorded (ISO time, "" when none): only
    a label event newer than that floor can verify the label for that head (R2).
    `issues[kind]["body_sha"]` hashes the title and body capdaemon last wrote there (R5).
    `head_ref` is the PR's head branch name as GitHub last listed it (attacker-chosen text:
    shown escaped, never used to decide; "" in records written before this field).
    """

    repo: str
    number: int
    head_sha: str = ""
    fingerprint: str = ""
    audited: str = ""
    published: str = ""
    counted_head: str = ""
    quadrant: str | None = None
    check_success: bool = False
    blocking: list[str] = field(default_factory=list)
    task_id: str | None = None
    merge_policy: str | None = None
    policy_reason: str = ""
    auto_revert: bool = False
    mergeable: bool | None = None
    author: str = ""
    title: str = ""
    issues: dict[str, dict[str, Any]] = field(default_factory=dict)
    ballot_round: dict[str, Any] | None = None
    ballot: dict[str, Any] = field(default_factory=dict)
    handled: list[str] = field(default_factory=list)
    merge_blocked_head: str = ""
    would_merge_head: str = ""
    state: str = "open"  # open | merged | closed | gone
    merge_sha: str | None = None
    pending: dict[str, Any] | None = None
    first_seen: str = ""
    updated_at: str = ""
    light: str = ""
    firm_d: bool | None = None
    ballot_seen: dict[str, Any] = field(default_factory=dict)
    auto_revert_head: str = ""
    auto_revert_floor: str = ""
    head_ref: str = ""

    @property
    def ref(self) -> str:
        """`owner/repo#N`."""
        return f"{self.repo}#{self.number}"

    def issue(self, kind: str) -> dict[str, Any] | None:
        """The decision issue of one kind, if opened."""
        return self.issues.get(kind)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (a shallow copy: the values are already plain JSON data)."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PRRecord:
        """Parse one record; unknown keys are refused (a newer or corrupt file)."""
        unknown = set(data) - set(_FIELDS)
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)}")
        issues = data.get("issues")
        if isinstance(issues, dict) and any(k in issues for k in _LEGACY_ISSUE_KINDS):
            renamed = {_LEGACY_ISSUE_KINDS.get(k, k): v for k, v in issues.items()}
            data = {**data, "issues": renamed}
        return cls(**data)


_FIELDS = tuple(f.name for f in dataclasses.fields(PRRecord))


class PRStore:
    """`bot-state/prs.json` plus its journal `prs.journal`.

    `save(rec)` appends the record's new state to the journal and fsyncs (cheap, whatever
    the number of PRs); `compact()` rewrites prs.json atomically and drops the journal (once
    per tick). Loading replays the journal over prs.json (the newest state of a record wins)
    and ignores a torn final line — a crash mid-append, whose action had not started yet.
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
        try:
            if not isinstance(data, dict):
                raise TypeError("not an object")
            return PRRecord.from_dict(data)
        except (TypeError, ValueError) as exc:
            raise StateError(
                f"{where}: record {ref!r} is malformed: {exc}; never overwritten"
            ) from exc

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

    def save(self, rec: PRRecord) -> None:
        """Make one record's current state durable (journal append + fsync)."""
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

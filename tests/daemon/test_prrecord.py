"""prs.json as typed records: today's file reads and rewrites unchanged, every record round-trips,
and a value capdaemon does not know is a named error that never reaches a decision."""

from __future__ import annotations

import dataclasses
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.labels import IssueKind
from capdaemon.decide.rounds import BallotRound
from capdaemon.filenames import JOURNAL_FILE, PRS_FILE
from capdaemon.model import Quadrant
from capdaemon.state import StateError
from capdaemon.stores.botstate import PRStore
from capdaemon.stores.prrecord import (
    BallotRecord,
    BallotSeen,
    IssueRef,
    IssueText,
    Pending,
    PendingOp,
    PRRecord,
    PRState,
)
from capdaemon.timefmt import utc_iso

# Written by `capdaemon demo` (a sandbox run of the daemon as it was when the records became
# typed): merged and open PRs in every quadrant, ballots pending and approved, review issues.
FIXTURE = Path(__file__).resolve().parents[1] / "data" / "botstate" / "prs-v1-demo.json"


def _state(tmp_path: Path, prs: dict[str, Any] | None = None) -> Path:
    """A bot-state folder holding the fixture's prs.json (or `prs` in its place)."""
    if prs is None:
        shutil.copy(FIXTURE, tmp_path / PRS_FILE)
    else:
        (tmp_path / PRS_FILE).write_text(json.dumps({"version": 1, "prs": prs}, indent=2))
    return tmp_path


def _fixture_prs() -> dict[str, Any]:
    prs: dict[str, Any] = json.loads(FIXTURE.read_text())["prs"]
    return prs


def _with_ballot(prs: dict[str, Any]) -> str:
    """The ref of a fixture record whose ballot was counted (it has "by" and "reason")."""
    return next(ref for ref, r in prs.items() if "reason" in r["ballot"])


def test_a_prs_json_written_before_the_types_reads_typed_and_rewrites_byte_for_byte(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    store = PRStore(state)
    recs = list(store.records.values())
    assert len(recs) == 7
    assert {r.state for r in recs} == {PRState.OPEN, PRState.MERGED}
    assert {r.quadrant for r in recs} == set(Quadrant)
    counted = store.records[_with_ballot(_fixture_prs())]
    assert isinstance(counted.ballot, BallotRecord) and counted.ballot.reason
    assert counted.ballot_round is not None and counted.ballot_round.issue is not None
    reviews = [r.issues[IssueKind.REVIEW] for r in recs if IssueKind.REVIEW in r.issues]
    assert reviews and all(isinstance(i.text, IssueText) for i in reviews)
    store.compact()
    assert (state / PRS_FILE).read_bytes() == FIXTURE.read_bytes()


def test_the_journal_carries_typed_records_through_a_restart(tmp_path: Path) -> None:
    state = _state(tmp_path)
    store = PRStore(state)
    rec = next(r for r in store.records.values() if r.state is PRState.OPEN)
    rec = store.change(
        rec,
        pending=Pending(PendingOp.MERGE, rec.head_sha, "2026-05-25T12:00:00Z", base_ref="main"),
        ballot_seen=BallotSeen("fp", "2026-05-25T12:00:00Z"),
    )
    again = PRStore(state)  # replays the journal, then compacts
    assert again.records[rec.ref] == rec
    assert not (state / JOURNAL_FILE).exists()


_ISO = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
_TEXT = st.text(max_size=12)
_SHA = st.text("0123456789abcdef", max_size=40)
_ROUNDS = st.builds(
    BallotRound,
    repo=_TEXT,
    pr=st.integers(1, 10**6),
    head_sha=_SHA,
    started_at=_ISO,
    round=st.integers(1, 50),
    issue=st.none() | st.integers(1, 10**6),
    stale_vote_ids=st.frozensets(st.from_regex(r"(comment|reaction):[0-9]{1,6}", fullmatch=True)),
    base_ref=_TEXT,
    rejected_at=st.none() | _ISO,
    reopened=st.booleans(),
    after_rejection=st.booleans(),
)
_COUNTED = st.tuples(st.none() | _TEXT, _TEXT, _ISO.map(utc_iso), st.none() | _ISO.map(utc_iso))
_BALLOTS = st.builds(
    lambda status, head, rnd, counted: BallotRecord(status, head, rnd, *(counted or ())),
    st.sampled_from(BallotStatus),
    _SHA,
    st.integers(1, 50),
    st.none() | _COUNTED,
)
_ISSUES = st.builds(
    IssueRef,
    number=st.integers(1, 10**6),
    open=st.booleans(),
    opened_at=st.just("") | _ISO.map(utc_iso),
    kept_open=st.booleans(),
    body_sha=st.none() | _SHA,
    text=st.none()
    | st.builds(
        IssueText,
        title=_TEXT,
        body=_TEXT,
        marker=st.dictionaries(_TEXT, _TEXT | st.integers()),
        labels=st.lists(_TEXT).map(tuple),
    ),
    restores=st.integers(0, 5),
)
_RECORDS = st.builds(
    PRRecord,
    repo=_TEXT,
    number=st.integers(1, 10**6),
    head_sha=_SHA,
    fingerprint=_TEXT,
    quadrant=st.none() | st.sampled_from(Quadrant),
    check_success=st.booleans(),
    blocking=st.lists(_TEXT, max_size=3),
    task_id=st.none() | _TEXT,
    merge_policy=st.none() | st.sampled_from(["auto", "tiered", "manual"]),
    mergeable=st.none() | st.booleans(),
    issues=st.dictionaries(st.sampled_from([k.value for k in IssueKind]), _ISSUES, max_size=3),
    ballot_round=st.none() | _ROUNDS,
    ballot=st.none() | _BALLOTS,
    handled=st.lists(_TEXT, max_size=3),
    state=st.sampled_from(PRState),
    merge_sha=st.none() | _SHA,
    pending=st.none()
    | st.builds(Pending, st.sampled_from(PendingOp), _SHA, _ISO.map(utc_iso), st.none() | _TEXT),
    firm_d=st.none() | st.booleans(),
    ballot_seen=st.none() | st.builds(BallotSeen, _TEXT, _ISO.map(utc_iso)),
    head_ref=_TEXT,
)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)  # big composite records
@given(_RECORDS)
def test_every_record_round_trips_through_its_json_form(rec: PRRecord) -> None:
    data = json.loads(json.dumps(rec.to_dict()))
    assert PRRecord.from_dict(data) == rec
    assert PRRecord.from_dict(data).to_dict() == data


# (field path, bad value): each is a value today's code never writes
_BAD = [
    (("state",), "reopened", "state"),
    (("quadrant",), "E", "quadrant"),
    (("ballot", "status"), "approved_by_magic", "ballot.status"),
    (("ballot", "status"), "APPROVED", "ballot.status"),
    (("ballot", "round"), "1", "ballot.round"),
    (("issues", "ballot", "number"), "7", "issues.ballot.number"),
    (("issues", "ballot", "open"), "yes", "issues.ballot.open"),
    (("ballot_round", "round"), 0, "ballot_round.round"),
    (("ballot_seen", "at"), "yesterday", "ballot_seen.at"),
    (("head_sha",), 5, "head_sha"),
    (("firm_d",), "yes", "firm_d"),
    (("pending",), {"op": "rebase", "head_sha": "x", "at": "2026-05-25T12:00:00Z"}, "pending.op"),
]


def _set(rec: dict[str, Any], path: tuple[str, ...], value: object) -> None:
    for key in path[:-1]:
        rec = rec[key]
    rec[path[-1]] = value


@pytest.mark.parametrize(("path", "value", "name"), _BAD, ids=[b[2] for b in _BAD])
def test_an_unknown_value_is_an_error_naming_file_pr_and_field_and_the_file_stays(
    tmp_path: Path, path: tuple[str, ...], value: object, name: str
) -> None:
    prs = _fixture_prs()
    ref = _with_ballot(prs)
    prs[ref]["ballot_seen"] = prs[ref]["ballot_seen"] or {"fp": "f", "at": "2026-05-25T12:00:00Z"}
    _set(prs[ref], path, value)
    state = _state(tmp_path, prs)
    before = (state / PRS_FILE).read_bytes()
    with pytest.raises(StateError) as err:
        PRStore(state)
    message = str(err.value)
    assert str(state / PRS_FILE) in message and repr(ref) in message and name in message
    assert (state / PRS_FILE).read_bytes() == before  # never overwritten


def test_a_bad_journal_line_is_named_and_neither_file_is_rewritten(tmp_path: Path) -> None:
    state = _state(tmp_path)
    prs = _fixture_prs()
    ref = _with_ballot(prs)
    bad = {**prs[ref], "ballot": {**prs[ref]["ballot"], "status": "approved_by_magic"}}
    journal = state / JOURNAL_FILE
    journal.write_text(json.dumps({"ref": ref, "record": bad}) + "\n")
    with pytest.raises(StateError, match=r"ballot\.status") as err:
        PRStore(state)
    assert str(journal) in str(err.value) and repr(ref) in str(err.value)
    assert (state / PRS_FILE).read_bytes() == FIXTURE.read_bytes()
    assert journal.exists()


def test_a_record_filed_under_another_prs_ref_is_refused(tmp_path: Path) -> None:
    prs = _fixture_prs()
    ref, other = list(prs)[:2]
    prs[ref] = prs[other]
    with pytest.raises(StateError, match="repo/number name"):
        PRStore(_state(tmp_path, prs))


def test_an_unknown_ballot_status_is_never_read_as_an_approval(tmp_path: Path) -> None:
    """Fail closed: the status that would have merged on one reading and not on another is
    refused when read; in memory, a ballot approves only its own head, only when approved."""
    prs = _fixture_prs()
    ref = _with_ballot(prs)
    prs[ref]["ballot"]["status"] = "approved "  # a near miss of "approved"
    with pytest.raises(StateError, match=r"ballot\.status"):
        PRStore(_state(tmp_path, prs))
    with pytest.raises(ValueError):
        BallotRecord("approved ", "abc", 1)  # type: ignore[arg-type]
    rec = PRRecord(repo="o/r", number=1, head_sha="new")
    rec = dataclasses.replace(rec, ballot=BallotRecord(BallotStatus.APPROVED, "old", 1))
    assert not rec.ballot_approves("new") and rec.ballot_status("new") is BallotStatus.PENDING
    assert rec.ballot_approves("old")
    for status in (BallotStatus.PENDING, BallotStatus.DEFERRED, BallotStatus.REJECTED):
        rec = dataclasses.replace(rec, ballot=BallotRecord(status, "new", 1))
        assert not rec.ballot_approves("new")

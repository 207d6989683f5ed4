"""One name per decision-issue kind (marker, audit, state), and the digest links each ballot."""

from __future__ import annotations

from capdaemon.cli import main as cli
from capdaemon.forge.markers import parse_marker
from capdaemon.stores.botstate import PRRecord
from capdaemon.stores.prrecord import IssueRef

from .conftest import SafetyHarness


def test_marker_kind_and_audit_kind_agree_for_every_opened_issue(safe: SafetyHarness) -> None:
    """A scope violation, a ballot and a passive review: each issue's marker kind is the kind
    its `issue_opened` audit entry names."""
    safe.configure(repo={"require_capability": True})
    safe.open_pr({"examples/old.py": "print('no task')\n"}, title="no task")
    safe.open_pr({".github/workflows/ci.yml": "name: ci2\n"}, title="CI change")
    safe.tick()
    opened = {r["issue"].rsplit("#", 1)[1]: r["kind"] for r in safe.actions("issue_opened")}
    markers = {str(i.number): (parse_marker(i.body) or {}).get("kind") for i in safe.issues()}
    assert "scope-violation" in opened.values() and "ballot" in opened.values()
    for number, kind in opened.items():
        assert markers[number] == kind, (number, kind, markers[number])


def test_records_written_with_the_old_scope_kind_load_under_the_one_name() -> None:
    """prs.json written before (issues keyed "scope") is read as "scope-violation"."""
    rec = PRRecord.from_dict(
        {"repo": "o/r", "number": 1, "issues": {"scope": {"number": 4, "open": True}}}
    )
    assert rec.issues == {"scope-violation": IssueRef(number=4, open=True)}


def test_digest_pending_ballot_row_names_its_ballot_issue(
    safe: SafetyHarness, capsys: object
) -> None:
    """The pending-ballots table's "ballot" column names the ballot issue (GitHub links it)."""
    safe.configure()
    n = safe.open_pr({".github/workflows/ci.yml": "name: ci2\n"}, title="CI change")
    safe.tick()
    ballot = safe.issue_for(n, "ballot")
    args = ["--state", str(safe.state_dir), "--config", str(safe.config_dir)]
    assert (
        cli(["digest", "--date", "2026-05-26", "--print", "--now", "2026-05-26T00:00:00Z", *args])
        == 0
    )
    text = capsys.readouterr().out  # type: ignore[attr-defined]
    rows = [ln for ln in text.splitlines() if ln.startswith(f"| {safe.sb.repo}#{n}")]
    assert len(rows) == 1, text
    assert rows[0].rstrip().endswith(f"| {safe.sb.bot_repo}#{ballot.number} |"), rows[0]

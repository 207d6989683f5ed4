"""Pure readings of a PR's record: its fingerprints, its ballot state for a head, published?"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from capdaemon.daemon.core.tickdata import _digest
from capdaemon.decide.ballot import BallotOutcome, Vote
from capdaemon.decide.labels import L1C3_CHECK_NAME
from capdaemon.forge.types import PRSummary
from capdaemon.model import CheckRun
from capdaemon.stores.botstate import PRRecord
from capdaemon.timefmt import parse_utc


def full_fingerprint(
    pr: PRSummary, checks: Iterable[CheckRun], policy_hash: str, cap_state: str
) -> str:
    """Every input of a classification: the PR list entry, foreign check runs, policy, task."""
    foreign = sorted(
        (
            c.name,
            c.status,
            c.conclusion or "",
            c.app_slug or "",
            c.app_id or 0,
            _digest(c.output_title, c.output_summary, c.output_text),
        )
        for c in checks
        if c.name != L1C3_CHECK_NAME
    )
    return _digest(pr.head_sha, pr.base_ref, sorted(pr.labels), foreign, policy_hash, cap_state)


def light_fingerprint(pr: PRSummary, policy_hash: str, cap_state: str) -> str:
    """The fingerprint without check runs, plus draft: all the PR list/policy/task tell."""
    return _digest(pr.head_sha, pr.base_ref, sorted(pr.labels), pr.draft, policy_hash, cap_state)


def published(rec: PRRecord, head_sha: str) -> bool:
    """The check and issues as last written match the last evaluation and ballot state."""
    return bool(rec.fingerprint) and rec.published == _digest(
        rec.fingerprint, rec.ballot_status(head_sha).value
    )


def ballot_outcome(rec: PRRecord, head_sha: str, now: datetime) -> BallotOutcome:
    """The ballot state recorded for this head, as decide's BallotOutcome."""
    b = rec.ballot_for(head_sha)
    status = rec.ballot_status(head_sha)
    deciding = None
    if b is not None and b.by:
        at = parse_utc(b.at, "ballot.at") if b.at else now
        deciding = Vote(b.by, "comment", None, at, "", status, True)
    reason = b.reason if b is not None and b.reason is not None else "no owner has answered yet"
    return BallotOutcome(status, head_sha, reason, deciding)

"""The GitHub label names capdaemon reads and writes (the enum values are the real strings)."""

from __future__ import annotations

import enum


class Label(enum.StrEnum):
    """Labels of decision issues and PRs."""

    PENDING_OWNER = "decision:pending-owner"
    DEFERRED = "decision:deferred"
    AUTO_APPROVED_CRITICAL_REVERSIBLE = "decision:auto-approved-critical-reversible"
    AUTO_APPROVED_IRREVERSIBLE_NON_CRITICAL = "decision:auto-approved-irreversible-non-critical"
    RANDOM_REVIEW = "decision:random-review"
    ONE_TAP = "decision:one-tap"
    AUTO_REVERT = "decision:auto-revert"
    SCOPE_VIOLATION = "decision:scope-violation"
    INCIDENT = "decision:incident"
    DIGEST = "digest"


class IssueKind(enum.StrEnum):
    """The kind of a decision issue: its marker's "kind", the "kind" of its actions.jsonl
    records (`issue_opened` …), its key in a PR's record, and what the notifier matches."""

    BALLOT = "ballot"
    REVIEW = "review"
    SCOPE_VIOLATION = "scope-violation"
    ONE_TAP = "one-tap"
    INCIDENT = "incident"


L1C3_CHECK_NAME = "L1.C3"

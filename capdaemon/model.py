"""Domain types shared by every layer: quadrants, file changes, PR snapshots, votes, verdicts."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class Quadrant(enum.StrEnum):
    """A classification outcome; ordered by how much human attention it needs: D > B > C > A."""

    A = "A"
    B = "B"
    C = "C"
    D = "D"

    @property
    def rank(self) -> int:
        """Position in the order A < C < B < D."""
        return _RANK[self]

    @classmethod
    def of(cls, irreversible: bool, critical: bool) -> Quadrant:
        """The quadrant of one (IR, CR) pair."""
        if critical:
            return cls.D if irreversible else cls.B
        return cls.C if irreversible else cls.A

    @classmethod
    def highest(cls, quadrants: Iterable[Quadrant], default: Quadrant | None = None) -> Quadrant:
        """The maximum in the order D > B > C > A."""
        best: Quadrant | None = None
        for q in quadrants:
            if best is None or q.rank > best.rank:
                best = q
        if best is None:
            if default is None:
                raise ValueError("no quadrant to take the highest of")
            return default
        return best


_RANK = {Quadrant.A: 0, Quadrant.C: 1, Quadrant.B: 2, Quadrant.D: 3}


class FileStatus(enum.StrEnum):
    """GitHub's file status values on a PR's file list."""

    ADDED = "added"
    MODIFIED = "modified"
    REMOVED = "removed"
    RENAMED = "renamed"
    COPIED = "copied"
    CHANGED = "changed"  # GitHub: mode or type change only
    UNCHANGED = "unchanged"


MODE_SYMLINK = "120000"
MODE_SUBMODULE = "160000"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One changed path of a PR. `patch` None means the patch is unavailable (binary, too large).

    Modes are git's octal strings ("100644", "100755", "120000", "160000") or None when unknown.
    `base_content` / `head_content` are optional full texts (only gathered for files whose
    content matters, such as config files and bot source for enclosing-function lookup).
    """

    path: str
    status: FileStatus
    previous_path: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    additions: int = 0
    deletions: int = 0
    patch: str | None = None
    base_content: str | None = None
    head_content: str | None = None

    @property
    def modes(self) -> tuple[str | None, str | None]:
        """(old_mode, new_mode)."""
        return (self.old_mode, self.new_mode)


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit of a PR (author/committer identities and times as git records them)."""

    sha: str
    parents: tuple[str, ...]
    message: str
    author_name: str = ""
    author_email: str = ""
    authored_at: datetime | None = None
    committer_name: str = ""
    committer_email: str = ""
    committed_at: datetime | None = None
    author_login: str | None = None
    committer_login: str | None = None


@dataclass(frozen=True, slots=True)
class LabelEvent:
    """A `labeled` or `unlabeled` issue event."""

    label: str
    action: str  # "labeled" | "unlabeled"
    actor: str
    at: datetime


@dataclass(frozen=True, slots=True)
class CheckRun:
    """A check run on the PR head, with the App that published it."""

    name: str
    status: str  # queued | in_progress | completed
    conclusion: str | None = None
    app_slug: str | None = None
    app_id: int | None = None
    output_title: str = ""
    output_summary: str = ""
    output_text: str = ""
    started_at: datetime | None = None
    completed_at: datetime | None = None
    id: int | None = None
    creator: str | None = None  # who posted a commit status (statuses have no App)


@dataclass(frozen=True, slots=True)
class PRSnapshot:
    """Everything the classifier needs about one PR, gathered once, immutable (SPEC 2.1)."""

    repo: str  # "owner/name"
    number: int
    base_ref: str
    base_sha: str
    head_sha: str
    author: str
    head_ref: str = ""
    draft: bool = False
    title: str = ""
    body: str = ""
    labels: tuple[str, ...] = ()
    label_events: tuple[LabelEvent, ...] = ()
    files: tuple[FileChange, ...] = ()
    commits: tuple[Commit, ...] = ()
    check_runs: tuple[CheckRun, ...] = ()
    files_complete: bool = True
    commits_complete: bool = True
    incomplete_reason: str | None = None
    mergeable: bool | None = None
    mergeable_state: str | None = None
    state: str = "open"
    base_policy_text: str | None = None  # `.capdaemon.yml` read from the base branch, if any

    @property
    def ref(self) -> str:
        """`owner/repo#N`, the name the audit log uses."""
        return f"{self.repo}#{self.number}"


class RuleResult(enum.StrEnum):
    """What a rule did with a snapshot."""

    VOTE = "vote"
    ABSTAIN = "abstain"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    """One rule's outcome: a vote for a quadrant, an abstention, or an error (which counts as D)."""

    rule: str
    result: RuleResult
    vote: Quadrant | None = None
    reason: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in the audit log."""
        out: dict[str, Any] = {"rule": self.rule, "result": self.result.value}
        if self.vote is not None:
            out["vote"] = self.vote.value
        if self.reason:
            out["reason"] = self.reason
        if self.detail:
            out.update({k: v for k, v in self.detail.items() if k not in out})
        return out


class Severity(enum.StrEnum):
    """Validator severities: P0 blocks, P1 warns loudly, P2 is advisory."""

    P0 = "P0"
    P1 = "P1"
    P2 = "P2"


@dataclass(frozen=True, slots=True)
class Finding:
    """A validator finding (not a quadrant vote)."""

    validator: str
    severity: Severity
    message: str
    subject: str = ""  # e.g. the agent id or path concerned

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in the audit log."""
        out = {
            "validator": self.validator,
            "severity": self.severity.value,
            "message": self.message,
        }
        if self.subject:
            out["subject"] = self.subject
        return out


@dataclass(frozen=True, slots=True)
class FileVerdict:
    """The classifier's view of one changed file."""

    path: str
    status: FileStatus
    irreversible: bool
    critical: bool
    quadrant: Quadrant
    reasons: tuple[str, ...] = ()
    previous_path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used by `classify --json` and the audit log."""
        out: dict[str, Any] = {
            "path": self.path,
            "status": self.status.value,
            "ir": "irreversible" if self.irreversible else "reversible",
            "cr": "critical" if self.critical else "non-critical",
            "quadrant": self.quadrant.value,
            "reasons": list(self.reasons),
        }
        if self.previous_path:
            out["previous_path"] = self.previous_path
        return out


@dataclass(frozen=True, slots=True)
class Verdict:
    """The classification of one PR snapshot."""

    quadrant: Quadrant
    reasoning: str
    files: tuple[FileVerdict, ...] = ()
    rules: tuple[RuleOutcome, ...] = ()
    findings: tuple[Finding, ...] = ()

    @property
    def blocking(self) -> tuple[Finding, ...]:
        """Findings of severity P0 (they fail the L1.C3 check)."""
        return tuple(f for f in self.findings if f.severity is Severity.P0)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used by `classify --json` and the audit log."""
        return {
            "quadrant": self.quadrant.value,
            "reasoning": self.reasoning,
            "rules_fired": [r.to_dict() for r in self.rules],
            "files": [f.to_dict() for f in self.files],
            "findings": [f.to_dict() for f in self.findings],
        }

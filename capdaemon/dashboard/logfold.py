"""The two audit logs folded entry by entry into what the pages show, resumable on a rebuild.

A `LogFold` remembers how far each log was verified (`ChainCursor`). A rebuild `fork`s it and
folds in only the entries appended since: the fork shares every row with the fold it came from
and copies a row before changing it, so the model being served never changes under a reader.
When a log was replaced, shortened or rewritten before the verified point, the rebuild starts
from an empty fold and verifies the whole log again.
"""

from __future__ import annotations

import copy
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from capdaemon.audit import (
    ChainCursor,
    VerifyReport,
    resume_cursor,
    verify_from,
    verify_prefix,
)
from capdaemon.dashboard.prfacts import PRFacts
from capdaemon.model import Quadrant
from capdaemon.story import rules_that_voted

QUADRANTS = tuple(q.value for q in Quadrant)
_SPOT = 1 << 40  # a story spot packed as log index × 2**40 + byte offset


@dataclass(slots=True)
class PRRow:
    """One classified PR as the PRs table shows it (its newest classification)."""

    ref: str
    repo: str
    number: int
    head: str = ""
    quadrant: str = ""
    rules: str = ""
    action: str = ""
    ts: str = ""
    spots: array[int] = field(default_factory=lambda: array("q"))  # see `spot_list`
    facts: PRFacts | None = None  # from prs.json (None: no record there)
    hay: str = ""

    @property
    def title(self) -> str:
        """The PR's title as prs.json has it."""
        return self.facts.title if self.facts else ""

    @property
    def author(self) -> str:
        """The PR's author as prs.json has it."""
        return self.facts.author if self.facts else ""

    @property
    def state(self) -> str:
        """open / merged / closed / gone ("" when prs.json has no record)."""
        return self.facts.state if self.facts else ""

    @property
    def branch(self) -> str:
        """The head branch name ("" when unknown)."""
        return self.facts.branch if self.facts else ""

    def spot_list(self) -> list[tuple[int, int]]:
        """(log index, byte offset) of each record of the PR's story, in log order."""
        return [divmod(s, _SPOT) for s in self.spots]

    def haystack(self) -> str:
        """The lower-cased text a search looks in (made once per row version)."""
        if not self.hay:
            self.hay = (
                f"{self.ref} {self.title} {self.author} {self.branch} {self.head} "
                f"{self.quadrant} {self.rules} {self.action} {self.state}"
            ).lower()
        return self.hay


@dataclass(frozen=True)
class Ballot:
    """A ballot (or one-tap / deferred decision) waiting for an owner, or one decided."""

    ref: str
    issue: str
    at: str
    kind: str = "ballot"
    status: str = "pending"
    by: str = ""
    title: str = ""
    opened: str = ""  # when its issue was opened (decided ballots; "" when unknown)


# actions that say where a PR stands (the PRs table's "action" column shows the newest)
PR_ACTIONS = frozenset(
    {
        "merge",
        "close",
        "revert",
        "ballot",
        "ballot_round",
        "issue_opened",
        "scope_violation",
        "one_tap_opened",
        "one_tap",
        "pr_left",
        "rejection",
        "approval_voided",
        "finish_task",
    }
)


@dataclass
class LogFold:
    """What both logs say, as far as `cursors` verified them."""

    rows: dict[str, PRRow] = field(default_factory=dict)
    cursors: list[ChainCursor | None] = field(default_factory=lambda: [None, None])
    per_day: dict[date, dict[str, int]] = field(default_factory=dict)  # distinct heads
    heads: set[str] = field(default_factory=set)  # "ref head" classified
    merges: list[tuple[str, str, str]] = field(default_factory=list)  # (ts, ref, quadrant)
    # shadow mode's "would merge", never a merge: ref → (ts, ref, quadrant) of its newest one,
    # dropped once the PR merges for real (one row per PR)
    would_merges: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    decided: list[Ballot] = field(default_factory=list)
    breaker_history: list[dict[str, Any]] = field(default_factory=list)
    policy_errors: dict[str, list[str]] = field(default_factory=dict)
    violations: dict[str, int] = field(default_factory=dict)  # task → PR heads out of scope
    quadrant_of: dict[str, str] = field(default_factory=dict)  # merge attempted, not done
    ballot_opened: dict[str, str] = field(default_factory=dict)  # ref → ballot issue opened
    resumed: bool = False  # continued from an earlier fold (set by `fork`)
    _owned: set[str] = field(default_factory=set, repr=False)

    def fork(self) -> LogFold:
        """A fold to continue: containers copied, rows shared until `row_for_write`."""
        return LogFold(
            rows=dict(self.rows),
            cursors=list(self.cursors),
            per_day={d: dict(c) for d, c in self.per_day.items()},
            heads=set(self.heads),
            merges=list(self.merges),
            would_merges=dict(self.would_merges),
            decided=list(self.decided),
            breaker_history=list(self.breaker_history),
            policy_errors={k: list(v) for k, v in self.policy_errors.items()},
            violations=dict(self.violations),
            quadrant_of=dict(self.quadrant_of),
            ballot_opened=dict(self.ballot_opened),
            resumed=True,
        )

    def row_for_write(self, ref: str) -> PRRow:
        """The PR's row, this fold's own (copied from a shared one, or new)."""
        row = self.rows.get(ref)
        if ref in self._owned and row is not None:
            return row
        if row is None:
            repo, _, num = ref.rpartition("#")
            row = PRRow(ref, repo, int(num) if num.isdigit() else 0)
        else:
            row = copy.copy(row)
            row.spots, row.hay = array("q", row.spots), ""
        self.rows[ref] = row
        self._owned.add(ref)
        return row

    def set_facts(self, ref: str, facts: PRFacts | None) -> None:
        """Join prs.json's record to the row (copied only when it changed)."""
        row = self.rows.get(ref)
        if row is not None and row.facts != facts:
            self.row_for_write(ref).facts = facts

    def read(self, index: int, path: Path, visit: Callable[[dict[str, Any]], None]) -> VerifyReport:
        """Verify the entries appended to log `index` since its cursor, visiting each."""

        def each(offset: int, rec: dict[str, Any]) -> None:
            ref = rec.get("pr")
            if isinstance(ref, str) and "#" in ref:
                self.row_for_write(ref).spots.append(index * _SPOT + offset)
            visit(rec)

        report, cursor = verify_from(path, self.cursors[index], each)
        self.cursors[index] = cursor
        return report

    def classification(self, rec: dict[str, Any]) -> None:
        """One classifier-log entry."""
        ref, q, ts = rec.get("pr"), rec.get("quadrant"), rec.get("ts")
        if not isinstance(ref, str) or q not in QUADRANTS or not isinstance(ts, str):
            return
        row = self.row_for_write(ref)
        row.quadrant, row.ts = str(q), ts
        row.head = str(rec.get("head_sha") or "")
        row.rules = rules_that_voted(rec.get("rules_fired"))
        key = f"{ref} {row.head}"
        if key in self.heads:
            return
        self.heads.add(key)
        cap = rec.get("capability")
        if isinstance(cap, dict) and cap.get("task_id") and cap.get("violations"):
            task = str(cap["task_id"])
            self.violations[task] = self.violations.get(task, 0) + 1
        when = day_of(ts)
        if when is not None:
            self.per_day.setdefault(when, dict.fromkeys(QUADRANTS, 0))[str(q)] += 1

    def action(self, rec: dict[str, Any]) -> None:
        """One actions-log entry."""
        action, ref = rec.get("action"), rec.get("pr")
        if not isinstance(action, str):
            return
        if isinstance(ref, str) and ref in self.rows and action in PR_ACTIONS:
            self.row_for_write(ref).action = action_text(rec)
        if action in ("merge", "ballot", "issue_opened"):
            self._pr_event(action, str(ref), str(rec.get("ts", "")), rec)
        elif action.startswith("breaker."):
            self.breaker_history.append(rec)
        elif action == "repo_policy_error":
            repo, ts = str(rec.get("repo", "")), str(rec.get("ts", ""))
            self.policy_errors.setdefault(repo, []).append(f"{ts} {rec.get('error', '')}")

    def _pr_event(self, action: str, ref: str, ts: str, rec: dict[str, Any]) -> None:
        """A merge, a ballot decided, a ballot issue opened."""
        status = rec.get("status")
        if action == "merge" and status == "attempted":
            self.quadrant_of[ref] = str(rec.get("quadrant") or "")
        elif action == "merge" and status == "done":
            q = rec.get("quadrant") or self.quadrant_of.pop(ref, "")
            self.merges.append((ts, ref, str(q)))
            self.would_merges.pop(ref, None)
        elif action == "merge" and status == "would_merge":  # shadow mode: not a merge
            self.would_merges.pop(ref, None)  # the newest last
            self.would_merges[ref] = (ts, ref, str(rec.get("quadrant") or ""))
        elif action == "issue_opened" and rec.get("kind") == "ballot":
            self.ballot_opened[ref] = ts
        elif action == "ballot" and status not in (None, "pending"):
            by, issue = str(rec.get("decided_by") or ""), str(rec.get("issue", ""))
            opened = self.ballot_opened.get(ref, "")
            self.decided.append(Ballot(ref, issue, ts, status=str(status), by=by, opened=opened))


def resumable(fold: LogFold, paths: tuple[Path, Path], recheck: bool = False) -> bool:
    """True when every log can be checked on from the fold's cursor (or was empty); False
    after a broken chain (no cursor): that log is verified and folded from the start.
    `recheck` also verifies each log in full up to its cursor (streaming, nothing kept)."""
    for cursor, path in zip(fold.cursors, paths, strict=True):
        if cursor is None or (cursor.seq and resume_cursor(path, cursor) is None):
            return False
    return not recheck or prefixes_intact(tuple(fold.cursors), paths)


def prefixes_intact(cursors: tuple[ChainCursor | None, ...], paths: tuple[Path, Path]) -> bool:
    """True when each log still holds, from its first line, exactly the entries its cursor
    verified (every link and hash again): what resuming from the cursors takes on trust.
    Plain data in, a bool out, so it can run in another process."""
    for cursor, path in zip(cursors, paths, strict=True):
        if cursor is None or (cursor.seq and not verify_prefix(path, cursor).ok):
            return False
    return True


def day_of(ts: str) -> date | None:
    """The UTC day of an audit timestamp, or None."""
    try:
        return date.fromisoformat(ts[:10])
    except ValueError:
        return None


# what owners read in the action column, by event name (others: the name, spaced)
ACTION_NAMES = {
    "merge": "merge",
    "close": "closed",
    "revert": "revert",
    "ballot": "ballot",
    "ballot_round": "ballot round opened",
    "issue_opened": "issue opened",
    "scope_violation": "scope violation reported",
    "one_tap_opened": "one-tap request sent",
    "one_tap": "one-tap",
    "pr_left": "left supervision",
    "rejection": "rejected",
    "approval_voided": "approval voided (new head)",
    "finish_task": "task finished",
}
STATUS_NAMES = {
    "done": "done",
    "attempted": "attempted",
    "would_merge": "would merge (shadow mode)",
    "merged_by_other": "merged by someone else",
    "approved": "approved",
    "approved_alternate": "approved (alternate)",
    "rejected": "rejected",
    "deferred": "deferred",
    "pending": "pending",
}


def action_text(rec: dict[str, Any]) -> str:
    """An action record in words: "merge done", "issue opened (ballot)"."""
    action = str(rec.get("action", ""))
    name = ACTION_NAMES.get(action, action.replace("_", " ").replace(".", ": "))
    status = rec.get("status")
    if status:
        return f"{name} {STATUS_NAMES.get(str(status), str(status).replace('_', ' '))}"
    kind = rec.get("kind")
    return f"{name} ({str(kind).replace('_', ' ')})" if kind else name

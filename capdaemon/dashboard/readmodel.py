"""The dashboard's one read model: everything its pages show, built once from bot-state/ and config.

Nothing here talks to GitHub. Each state file is read with the reader its writer's module
provides (audit log reader and verifier, breaker and PR readers, capability snapshot store,
escalation records); a file that cannot be read becomes a `Problem` naming it (an error banner
on every page), never an exception out of `build`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from capdaemon.anchors import Anchor, check_anchors, find_anchors
from capdaemon.audit import (
    VerifyReport,
    log_paths,
    read_record_at,
    story_order,
    verify,
)
from capdaemon.config import Config, RepoConfig
from capdaemon.daemon.digest_job import pr_records
from capdaemon.daemon.policystate import PolicySummary, read_policies
from capdaemon.daemon.safety_state import BreakerFile, read_breaker
from capdaemon.decide.burnin import AgentClock, BurnInState, burn_in_raw
from capdaemon.filenames import (
    BREAKER_FILE,
    CAPABILITIES_DIR,
    DIGEST_DIR,
    ESCALATIONS_DIR,
    JOURNAL_FILE,
    METRICS_FILE,
    PRS_FILE,
    REPO_POLICIES_FILE,
    SAFETY_FILE,
)
from capdaemon.model import Quadrant
from capdaemon.state import StateError, read_json
from capdaemon.stores.escalations import EscalationRecord, list_escalations
from capdaemon.stores.registry import TaskState, list_tasks
from capdaemon.story import rules_that_voted

CHART_DAYS = 30
QUADRANTS = tuple(q.value for q in Quadrant)
_T = TypeVar("_T")


@dataclass(frozen=True)
class Problem:
    """A state file the dashboard could not read (fully): shown as a banner naming it."""

    file: str
    message: str


@dataclass
class PRRow:
    """One classified PR as the PRs table shows it (its newest classification)."""

    ref: str
    repo: str
    number: int
    title: str = ""
    author: str = ""
    head: str = ""
    quadrant: str = ""
    rules: str = ""
    action: str = ""
    ts: str = ""
    state: str = ""
    # (log index, byte offset) of each record of the PR's story, in log order
    spots: list[tuple[int, int]] = field(default_factory=list)
    branch: str = ""  # the head branch name (prs.json; "" for records written before it)
    _hay: str = field(default="", repr=False, compare=False)

    def haystack(self) -> str:
        """The lower-cased text a search looks in (made once; the row is final after build)."""
        if not self._hay:
            self._hay = (
                f"{self.ref} {self.title} {self.author} {self.branch} {self.head} {self.quadrant} "
                f"{self.rules} {self.action}"
            ).lower()
        return self._hay


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


@dataclass(frozen=True)
class AuditStatus:
    """One log's chain check now, and whether the newest digest's anchor still holds."""

    report: VerifyReport
    anchor_source: str = ""
    anchor_seq: int | None = None
    anchor_problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskRow:
    """A dispatched task's capability, its PR heads found out of scope, and its escalations."""

    task: TaskState
    violations: int
    escalations: tuple[EscalationRecord, ...]


@dataclass(frozen=True)
class RepoRow:
    """A supervised repo: central config, protection and `.capdaemon.yml` as last seen."""

    config: RepoConfig
    protection: Mapping[str, Any]
    policy_errors: tuple[str, ...]
    policy: PolicySummary | None = None


@dataclass
class ReadModel:
    """Everything the pages show; `problems` lists every file that could not be read."""

    state_dir: Path
    now: datetime
    config: Config
    problems: list[Problem] = field(default_factory=list)
    prs: list[PRRow] = field(default_factory=list)  # newest classification first
    by_ref: dict[str, PRRow] = field(default_factory=dict)
    days: list[tuple[date, dict[str, int]]] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    merges: list[tuple[str, str, str]] = field(default_factory=list)  # (ts, ref, quadrant)
    pending: list[Ballot] = field(default_factory=list)
    decided: list[Ballot] = field(default_factory=list)
    breaker: BreakerFile | None = None
    breaker_history: list[dict[str, Any]] = field(default_factory=list)
    audit: list[AuditStatus] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    agents: list[AgentClock] = field(default_factory=list)
    tasks: list[TaskRow] = field(default_factory=list)
    repos: list[RepoRow] = field(default_factory=list)
    violations: dict[str, int] = field(default_factory=dict)  # task → PR heads out of scope
    build_seconds: float = 0.0

    def story(self, ref: str) -> list[dict[str, Any]]:
        """The PR's records from both logs, oldest first (re-read at their offsets)."""
        row = self.by_ref.get(ref)
        if row is None:
            return []
        logs = log_paths(self.state_dir)
        out = [read_record_at(logs[i], off) for i, off in row.spots]
        out.sort(key=story_order)
        return out


def _guard(model: ReadModel, file: Path, fn: Callable[[], _T], default: _T) -> _T:
    """fn(), or `default` with a Problem naming `file` when its state is unreadable."""
    try:
        return fn()
    except (StateError, ValueError, TypeError, KeyError, AttributeError, OSError) as exc:
        model.problems.append(Problem(str(file), _one_line(exc)))
        return default


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:400]


def _action_text(rec: Mapping[str, Any]) -> str:
    action = str(rec.get("action", "")).replace("_", " ")
    detail = rec.get("status") or rec.get("kind") or ""
    return f"{action} {detail}".strip()


def _row(model: ReadModel, ref: str) -> PRRow:
    row = model.by_ref.get(ref)
    if row is None:
        repo, _, num = ref.rpartition("#")
        row = PRRow(ref, repo, int(num) if num.isdigit() else 0)
        model.by_ref[ref] = row
    return row


def _read_log(
    model: ReadModel, index: int, path: Path, visit: Callable[[dict[str, Any]], None]
) -> VerifyReport:
    """Verify one log's chain and visit each entry that checked out (one read of the file)."""

    def each(offset: int, rec: dict[str, Any]) -> None:
        ref = rec.get("pr")
        if isinstance(ref, str) and "#" in ref:
            _row(model, ref).spots.append((index, offset))
        visit(rec)

    report = _guard(model, path, partial(verify, path, each), None)
    if report is None:
        return VerifyReport(path, False, 0, reason="cannot be verified (see banner)")
    if not report.ok:
        model.problems.append(
            Problem(
                str(path),
                f"line {report.line}: {report.reason} (entries from there on are not shown)",
            )
        )
    return report


def _classifications(model: ReadModel) -> Callable[[dict[str, Any]], None]:
    start = model.now.date() - timedelta(days=CHART_DAYS - 1)
    counts: dict[date, dict[str, int]] = {
        start + timedelta(days=i): dict.fromkeys(QUADRANTS, 0) for i in range(CHART_DAYS)
    }
    model.days = sorted(counts.items())
    totals = model.totals = dict.fromkeys(QUADRANTS, 0)
    seen: set[tuple[str, str]] = set()

    def visit(rec: dict[str, Any]) -> None:
        ref, q, ts = rec.get("pr"), rec.get("quadrant"), rec.get("ts")
        if not isinstance(ref, str) or q not in totals or not isinstance(ts, str):
            return
        row = _row(model, ref)
        row.quadrant, row.ts = q, ts
        row.head = str(rec.get("head_sha") or "")
        row.rules = rules_that_voted(rec.get("rules_fired"))
        key = (ref, row.head)
        if key in seen:
            return
        seen.add(key)
        totals[q] += 1
        cap = rec.get("capability")
        if isinstance(cap, dict) and cap.get("task_id") and cap.get("violations"):
            task = str(cap["task_id"])
            model.violations[task] = model.violations.get(task, 0) + 1
        when = _day(ts)
        day = counts.get(when) if when is not None else None
        if day is not None:
            day[q] += 1

    return visit


def _day(ts: str) -> date | None:
    try:
        return date.fromisoformat(ts[:10])
    except ValueError:
        return None


# actions that say where a PR stands (the PRs table's "action" column shows the newest)
_PR_ACTIONS = frozenset(
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


class _Actions:
    """Visits actions.jsonl once: merges, decided ballots, breaker history, per-repo/task facts."""

    def __init__(self, model: ReadModel) -> None:
        self.model = model
        self.quadrant_of: dict[str, str] = {}
        self.policy_errors: dict[str, list[str]] = {}

    def __call__(self, rec: dict[str, Any]) -> None:
        model, action, ref = self.model, rec.get("action"), rec.get("pr")
        if not isinstance(action, str):
            return
        ts, status = str(rec.get("ts", "")), rec.get("status")
        if isinstance(ref, str) and ref in model.by_ref and action in _PR_ACTIONS:
            model.by_ref[ref].action = _action_text(rec)
        if action == "merge" and status == "attempted":
            self.quadrant_of[str(ref)] = str(rec.get("quadrant") or "")
        elif action == "merge" and status in ("done", "would_merge"):
            q = rec.get("quadrant") or self.quadrant_of.get(str(ref), "")
            model.merges.append((ts, str(ref), str(q)))
        elif action == "ballot" and status not in (None, "pending"):
            by = str(rec.get("decided_by") or "")
            model.decided.append(
                Ballot(str(ref), str(rec.get("issue", "")), ts, status=str(status), by=by)
            )
        elif action.startswith("breaker."):
            model.breaker_history.append(rec)
        elif action == "repo_policy_error":
            repo = str(rec.get("repo", ""))
            self.policy_errors.setdefault(repo, []).append(f"{ts} {rec.get('error', '')}")


def _pending(model: ReadModel, prs: Mapping[str, Any], safety: Mapping[str, Any]) -> None:
    for ref, p in sorted(prs.items()):
        if not isinstance(p, dict):
            continue
        ballot = (p.get("issues") or {}).get("ballot")
        if p.get("state") != "open" or not isinstance(ballot, dict) or not ballot.get("open"):
            continue
        status = (p.get("ballot") or {}).get("status", "pending")
        if status not in ("pending", "deferred"):
            continue
        model.pending.append(
            Ballot(
                ref,
                str(ballot.get("number", "")),
                str(ballot.get("opened_at", "")),
                kind="deferred" if status == "deferred" else "ballot",
                title=str(p.get("title", "")),
            )
        )
    one_tap = safety.get("one_tap")
    for ref, ot in sorted(one_tap.items() if isinstance(one_tap, dict) else ()):
        p = prs.get(ref) or {}
        if isinstance(ot, dict) and ot.get("state") == "pending" and p.get("state") == "open":
            model.pending.append(
                Ballot(ref, str(ot.get("issue", "")), str(ot.get("opened_at", "")), "one-tap")
            )


def _audit(model: ReadModel, reports: Iterable[VerifyReport]) -> None:
    """Each log's chain verdict, and whether the newest digest's anchors still hold."""
    anchors: list[Anchor] = []
    source = ""
    digests = sorted((model.state_dir / DIGEST_DIR).glob("*.md"))
    if digests:
        source = digests[-1].name
        anchors = _guard(
            model,
            digests[-1],
            lambda: find_anchors(digests[-1].read_text(encoding="utf-8"), source),
            [],
        )
    for report in reports:
        path = report.path
        mine = [a for a in anchors if a.log == path.name]
        problems = tuple(check_anchors(path, mine)) if mine else ()
        model.problems.extend(Problem(str(path), p) for p in problems)
        model.audit.append(
            AuditStatus(report, source if mine else "", mine[-1].seq if mine else None, problems)
        )


def _burn_in(raw: Any) -> list[AgentClock]:
    return list(BurnInState.from_json(raw or {}).agents)


def _tasks(model: ReadModel, violations: Mapping[str, int]) -> None:
    tasks: list[TaskState] = _guard(
        model,
        model.state_dir / CAPABILITIES_DIR,
        lambda: list_tasks(model.state_dir, model.now),
        [],
    )
    escalations: list[EscalationRecord] = _guard(
        model,
        model.state_dir / ESCALATIONS_DIR,
        lambda: list_escalations(model.state_dir, include_resolved=True),
        [],
    )
    per_task: dict[str, list[EscalationRecord]] = {}
    for e in escalations:
        per_task.setdefault(e.task, []).append(e)
    for t in tasks:
        if t.state == "tampered":
            path = model.state_dir / CAPABILITIES_DIR / f"{t.task_id}.json"  # a file's stem
            model.problems.append(Problem(str(path), t.reason))
        model.tasks.append(
            TaskRow(t, violations.get(t.task_id, 0), tuple(per_task.get(t.task_id, ())))
        )


def build(state_dir: Path, config: Config, now: datetime | None = None) -> ReadModel:
    """Read bot-state/ once into a ReadModel (never raises on bad state: see `problems`)."""
    started = time.perf_counter()
    state_dir = Path(state_dir)
    model = ReadModel(state_dir, (now or datetime.now(UTC)).astimezone(UTC), config)
    if not state_dir.is_dir():
        model.problems.append(Problem(str(state_dir), "state directory does not exist"))
    classifier, actions = log_paths(state_dir)
    reports = [_read_log(model, 0, classifier, _classifications(model))]
    visit = _Actions(model)
    reports.append(_read_log(model, 1, actions, visit))

    _journal(model, state_dir / JOURNAL_FILE)
    # read-only pages: a malformed journal line is skipped here; `_journal` shows it as a banner
    prs: dict[str, Any] = _guard(
        model, state_dir / PRS_FILE, lambda: pr_records(state_dir, _skip), {}
    )
    for ref, p in prs.items():
        row = model.by_ref.get(ref)
        if row is not None and isinstance(p, dict):
            row.title, row.author = str(p.get("title", "")), str(p.get("author", ""))
            row.state, row.branch = str(p.get("state", "")), str(p.get("head_ref") or "")
    model.prs = sorted(
        (r for r in model.by_ref.values() if r.quadrant), key=lambda r: r.ts, reverse=True
    )
    safety: dict[str, Any] = _guard(
        model, state_dir / SAFETY_FILE, lambda: _object(state_dir / SAFETY_FILE), {}
    )
    model.metrics = _guard(
        model, state_dir / METRICS_FILE, lambda: _object(state_dir / METRICS_FILE), {}
    )
    _pending(model, prs, safety)
    model.pending.sort(key=lambda b: b.at)
    model.breaker = _guard(model, state_dir / BREAKER_FILE, lambda: read_breaker(state_dir), None)
    burn_raw = burn_in_raw(safety, model.metrics)
    model.agents = _guard(model, state_dir / SAFETY_FILE, lambda: _burn_in(burn_raw), [])
    _tasks(model, model.violations)
    raw_protection = safety.get("protection")
    protection: dict[str, Any] = raw_protection if isinstance(raw_protection, dict) else {}
    errors = visit.policy_errors
    policies: dict[str, PolicySummary] = _guard(
        model, state_dir / REPO_POLICIES_FILE, lambda: read_policies(state_dir), {}
    )
    for rc in config.repos:
        seen = protection.get(rc.name) or protection.get(f"{rc.name}:{rc.base}") or {}
        prot = seen if isinstance(seen, dict) else {}
        model.repos.append(RepoRow(rc, prot, tuple(errors.get(rc.name, ())), policies.get(rc.name)))
    _audit(model, reports)
    model.build_seconds = time.perf_counter() - started
    return model


def _skip(_where: str) -> None:
    """A bad journal line, already a banner (`_journal`)."""


def _journal(model: ReadModel, path: Path) -> None:
    """A malformed complete line of prs.journal is a banner (the daemon refuses to start on
    it; `pr_records` skips it here, so the pages would show that PR's older state)."""
    try:
        complete = path.read_bytes().rpartition(b"\n")[0]
    except FileNotFoundError:
        return
    except OSError as exc:
        model.problems.append(Problem(str(path), _one_line(exc)))
        return
    for n, line in enumerate(complete.split(b"\n") if complete else (), 1):
        try:
            entry = json.loads(line)
            ok = isinstance(entry, dict) and isinstance(entry["ref"], str)
            ok = ok and isinstance(entry["record"], dict)
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            msg = f"line {n}: malformed journal line; pages show the PR's state before it"
            model.problems.append(Problem(str(path), msg))
            return


def _object(path: Path) -> dict[str, Any]:
    raw = read_json(path, None)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise StateError(f"{path}: not a JSON object")
    return raw

"""The dashboard's one read model: everything its pages show, built once from bot-state/ and config.

Nothing here talks to GitHub. Each state file is read with the reader its writer's module
provides (audit log reader and verifier, breaker and PR readers, capability snapshot store,
escalation records); a file that cannot be read becomes a `Problem` naming it (an error banner
on every page), never an exception out of `build`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from capdaemon.anchors import Anchor, check_anchors, find_anchors
from capdaemon.audit import VerifyReport, log_paths, read_record_at, story_order
from capdaemon.config import Config, RepoConfig
from capdaemon.dashboard.logfold import QUADRANTS, Ballot, LogFold, PRRow, resumable
from capdaemon.dashboard.prfacts import PRFacts, World, waiting_on
from capdaemon.dashboard.prstate import read_prs
from capdaemon.decide.burnin import AgentClock, BurnInState, burn_in_raw
from capdaemon.filenames import (
    BREAKER_FILE,
    BUDGET_FILE,
    CAPABILITIES_DIR,
    DIGEST_DIR,
    ESCALATIONS_DIR,
    METRICS_FILE,
    PRS_FILE,
    REPO_POLICIES_FILE,
    SAFETY_FILE,
)
from capdaemon.state import StateError, read_json
from capdaemon.stores.escalations import EscalationRecord, list_escalations
from capdaemon.stores.policystate import PolicySummary, read_policies
from capdaemon.stores.registry import TaskState, list_tasks
from capdaemon.stores.safety_state import BreakerFile, read_breaker

__all__ = ["QUADRANTS", "Ballot", "PRRow", "Problem", "ReadModel", "build"]
CHART_DAYS = 30
_T = TypeVar("_T")
_Sig = tuple[tuple[int, int, int, int], ...]


@dataclass(frozen=True)
class Problem:
    """A state file the dashboard could not read (fully): shown as a banner naming it."""

    file: str
    message: str


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
    totals: dict[str, int] = field(default_factory=dict)  # PRs by latest classification
    heads: int = 0  # distinct (PR, head) pairs classified
    merges: list[tuple[str, str, str]] = field(default_factory=list)  # (ts, ref, quadrant)
    would_merges: list[tuple[str, str, str]] = field(default_factory=list)  # shadow, not merged
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
    world: World = field(default_factory=lambda: World(None))
    build_seconds: float = 0.0
    fold: LogFold = field(default_factory=LogFold, repr=False)
    files: dict[str, tuple[_Sig, Any]] = field(default_factory=dict, repr=False)
    _waits: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict, repr=False)

    def story(self, ref: str) -> list[dict[str, Any]]:
        """The PR's records from both logs, oldest first (re-read at their offsets)."""
        row = self.by_ref.get(ref)
        if row is None:
            return []
        logs = log_paths(self.state_dir)
        out = [read_record_at(logs[i], off) for i, off in row.spot_list()]
        out.sort(key=story_order)
        return out

    def waiting(self, row: PRRow) -> tuple[tuple[str, str], ...]:
        """What the PR waits on (see `prfacts.waiting_on`); unknown without its record."""
        got = self._waits.get(row.ref)
        if got is None:
            if row.facts is None:
                got = (("state", "no PR record in prs.json (see banner)"),)
            else:
                got = waiting_on(row.ref, row.facts, self.world)
            self._waits[row.ref] = got
        return got

    def queue(self) -> list[PRRow]:
        """Open PRs the state shows nothing to wait on: what the next tick tries to merge,
        in the order it walks them (the config's repos, then PR number)."""
        order = {rc.name: i for i, rc in enumerate(self.config.repos)}
        ready = [r for r in self.prs if r.state == "open" and not self.waiting(r)]
        return sorted(ready, key=lambda r: (order.get(r.repo, len(order)), r.repo, r.number))


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


def _pending(model: ReadModel, facts: Mapping[str, PRFacts], safety: Mapping[str, Any]) -> None:
    for ref, f in sorted(facts.items()):
        if f.state != "open" or not f.ballot_open:
            continue
        status = f.ballot_status or "pending"
        if status not in ("pending", "deferred"):
            continue
        kind = "deferred" if status == "deferred" else "ballot"
        model.pending.append(Ballot(ref, f.ballot_issue, f.ballot_opened_at, kind, title=f.title))
    one_tap = safety.get("one_tap")
    for ref, ot in sorted(one_tap.items() if isinstance(one_tap, dict) else ()):
        pr = facts.get(ref)
        if isinstance(ot, dict) and ot.get("state") == "pending" and pr and pr.state == "open":
            issue, opened = str(ot.get("issue", "")), str(ot.get("opened_at", ""))
            model.pending.append(Ballot(ref, issue, opened, "one-tap", title=pr.title))
    model.pending.sort(key=lambda b: b.at)


def _anchors(
    model: ReadModel, prev: ReadModel | None
) -> tuple[_Sig, str, list[Anchor], dict[str, tuple[str, ...]]]:
    """The newest digest's anchors (signature, file name, anchors, problems per log already
    checked: reused from `prev` when the digest is the same and the logs were continued)."""
    digests = sorted((model.state_dir / DIGEST_DIR).glob("*.md"))
    if not digests:
        return (), "", [], {}
    newest = digests[-1]
    sig = _signature(newest)
    old = prev.files.get("anchors") if prev is not None and model.fold.resumed else None
    if old is not None and old[0] == sig:
        anchors, checked = old[1]
        return sig, newest.name, anchors, dict(checked)
    found: list[Anchor] = _guard(
        model, newest, lambda: find_anchors(newest.read_text(encoding="utf-8"), newest.name), []
    )
    return sig, newest.name, found, {}


def _audit(model: ReadModel, reports: Iterable[VerifyReport], prev: ReadModel | None) -> None:
    """Each log's chain verdict, and whether the newest digest's anchors still hold (checked
    again only when the digest changed or a log had to be verified from the start)."""
    sig, source, anchors, checked = _anchors(model, prev)
    for report in reports:
        path = report.path
        mine = [a for a in anchors if a.log == path.name]
        if path.name not in checked:
            checked[path.name] = tuple(check_anchors(path, mine)) if mine else ()
        problems = checked[path.name]
        model.problems.extend(Problem(str(path), p) for p in problems)
        model.audit.append(
            AuditStatus(report, source if mine else "", mine[-1].seq if mine else None, problems)
        )
    if all(r.ok for r in reports):
        model.files["anchors"] = (sig, (anchors, checked))


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


def _signature(*paths: Path) -> _Sig:
    out = []
    for p in paths:
        try:
            st = p.stat()
            out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((0, 0, -1, -1))
    return tuple(out)


def _cached(
    model: ReadModel,
    prev: ReadModel | None,
    key: str,
    paths: tuple[Path, ...],
    read: Callable[[], _T],
) -> _T:
    """read(), or the value the previous model read when `paths` did not change since. A
    failed read is not cached (its banner must come back on the next build too)."""
    sig = _signature(*paths)
    old = prev.files.get(key) if prev is not None else None
    if old is not None and old[0] == sig:
        model.files[key] = old
        return old[1]  # type: ignore[no-any-return]
    before = len(model.problems)
    value = read()
    if len(model.problems) == before:
        model.files[key] = (sig, value)
    return value


def _pr_facts(
    model: ReadModel, prev: ReadModel | None
) -> dict[str, PRFacts] | Mapping[str, PRFacts]:
    """prs.json and its journal as PRFacts (see `prstate`), each problem a banner."""
    old = prev.files.get("prs") if prev is not None else None
    state, problems = read_prs(model.state_dir, old[1] if old is not None else None)
    for p in problems:
        file, _, message = p.partition(": ")
        model.problems.append(Problem(file, message))
    if state is None:
        return {}
    model.files["prs"] = ((), state)
    return state.facts


def _fold(
    state_dir: Path, prev: ReadModel | None, recheck: bool
) -> tuple[LogFold, list[VerifyReport]]:
    """The previous model's fold continued with the new entries, or a new one from the start
    when a log cannot be resumed (replaced, shortened, rewritten before the verified point,
    or, with `recheck`, changed anywhere before it: verified again from the start first)."""
    paths = log_paths(state_dir)
    resume = prev is not None and resumable(prev.fold, paths, recheck)
    fold = prev.fold.fork() if prev is not None and resume else LogFold()
    reports = [fold.read(0, paths[0], fold.classification), fold.read(1, paths[1], fold.action)]
    return fold, reports


def build(
    state_dir: Path,
    config: Config,
    now: datetime | None = None,
    previous: ReadModel | None = None,
    *,
    recheck: bool = False,
) -> ReadModel:
    """Read bot-state/ into a ReadModel (never raises on bad state: see `problems`).

    With `previous` (a model of the same state dir), only the log entries appended since it
    are verified and folded in, and the state files that did not change are not read again;
    `recheck` verifies both logs in full before continuing it (without holding a second
    model: a break anywhere rebuilds from the start, which shows it)."""
    started = time.perf_counter()
    state_dir = Path(state_dir)
    model = ReadModel(state_dir, (now or datetime.now(UTC)).astimezone(UTC), config)
    if not state_dir.is_dir():
        model.problems.append(Problem(str(state_dir), "state directory does not exist"))
    fold, reports = _fold(state_dir, previous, recheck)
    for report in reports:
        if not report.ok:
            msg = f"line {report.line}: {report.reason} (entries from there on are not shown)"
            model.problems.append(Problem(str(report.path), msg))
    facts = _pr_facts(model, previous)
    for ref in fold.rows:
        fold.set_facts(ref, facts.get(ref))
    _from_fold(model, fold)
    safety: dict[str, Any] = _cached(
        model, previous, "safety", (state_dir / SAFETY_FILE,), lambda: _safety(model, state_dir)
    )
    model.metrics = _cached(
        model,
        previous,
        "metrics",
        (state_dir / METRICS_FILE,),
        lambda: _guard(
            model, state_dir / METRICS_FILE, lambda: _object(state_dir / METRICS_FILE), {}
        ),
    )
    _pending(model, facts, safety)
    model.breaker = _guard(model, state_dir / BREAKER_FILE, lambda: read_breaker(state_dir), None)
    _missing(model, fold, reports)
    burn_raw = burn_in_raw(safety, model.metrics)
    model.agents = _guard(model, state_dir / SAFETY_FILE, lambda: _burn_in(burn_raw), [])
    _tasks(model, model.violations)
    model.world = _world(model, safety)
    _repos(model, safety, fold.policy_errors)
    _audit(model, reports, previous)
    model.build_seconds = time.perf_counter() - started
    return model


def _from_fold(model: ReadModel, fold: LogFold) -> None:
    """The log-derived parts of the model: rows, cards, chart days, merges, ballots."""
    model.fold, model.by_ref = fold, fold.rows
    model.prs = sorted(
        (r for r in fold.rows.values() if r.quadrant), key=lambda r: r.ts, reverse=True
    )
    model.totals = dict.fromkeys(QUADRANTS, 0)
    for r in model.prs:
        model.totals[r.quadrant] += 1
    model.heads = len(fold.heads)
    start = model.now.date() - timedelta(days=CHART_DAYS - 1)
    days = (start + timedelta(days=i) for i in range(CHART_DAYS))
    model.days = [(d, dict(fold.per_day.get(d) or dict.fromkeys(QUADRANTS, 0))) for d in days]
    model.merges, model.decided = fold.merges, fold.decided
    model.would_merges = list(fold.would_merges.values())
    model.breaker_history, model.violations = fold.breaker_history, fold.violations


def _safety(model: ReadModel, state_dir: Path) -> dict[str, Any]:
    got = _guard(model, state_dir / SAFETY_FILE, lambda: _object(state_dir / SAFETY_FILE), None)
    return {"_unreadable": True} if got is None else got


def _repos(model: ReadModel, safety: Mapping[str, Any], errors: Mapping[str, list[str]]) -> None:
    """Each configured repo with its protection as last checked and its policy."""
    sd = model.state_dir
    raw_protection = safety.get("protection")
    protection: dict[str, Any] = raw_protection if isinstance(raw_protection, dict) else {}
    policies: dict[str, PolicySummary] = _guard(
        model, sd / REPO_POLICIES_FILE, lambda: read_policies(sd), {}
    )
    for rc in model.config.repos:
        seen = protection.get(rc.name) or protection.get(f"{rc.name}:{rc.base}") or {}
        prot = seen if isinstance(seen, dict) else {}
        model.repos.append(RepoRow(rc, prot, tuple(errors.get(rc.name, ())), policies.get(rc.name)))


def _world(model: ReadModel, safety: Mapping[str, Any]) -> World:
    """What every PR's wait depends on (safety.json's parts None when it is unknown)."""
    known = not _unknown(model, SAFETY_FILE)
    tiers, one_tap = safety.get("tiers"), safety.get("one_tap")
    return World(
        model.breaker.state if model.breaker is not None else None,
        _budget_waiting(model.state_dir),
        tiers if known and isinstance(tiers, dict) else None,
        one_tap if known and isinstance(one_tap, dict) else None,
        model.config.mode == "shadow",
    )


def _unknown(model: ReadModel, name: str) -> bool:
    """True when a banner says state file `name` is unreadable or missing."""
    return any(Path(p.file).name == name for p in model.problems)


def _budget_waiting(state_dir: Path) -> frozenset[str]:
    """The PRs the tick budget holds back (budget.json: the daemon renames a bad one aside)."""
    try:
        raw = read_json(state_dir / BUDGET_FILE, None)
    except StateError:
        return frozenset()
    waiting = raw.get("waiting") if isinstance(raw, dict) else None
    return frozenset(str(k) for k in waiting) if isinstance(waiting, dict) else frozenset()


# state files the daemon writes as soon as the logs hold something (what says so, and why
# the page cannot do without the file)
def _missing(model: ReadModel, fold: LogFold, reports: list[VerifyReport]) -> None:
    """A state file that the logs say should exist and does not is a banner, like a corrupt
    one (the pages would otherwise say "no tick has run", "closed", or show blank titles)."""
    sd = model.state_dir
    classified, acted = reports[0].count, reports[1].count
    expected = (
        (
            PRS_FILE,
            classified > 0,
            f"the classifier log holds {classified} entries: titles, "
            "authors, PR states and pending ballots cannot be shown",
        ),
        (
            METRICS_FILE,
            classified + acted > 0,
            "the logs show ticks have run: the last tick is unknown",
        ),
        (
            SAFETY_FILE,
            acted > 0,
            f"the actions log holds {acted} entries: burn-in clocks, "
            "one-tap requests and base protection are unknown",
        ),
        (
            BREAKER_FILE,
            bool(fold.breaker_history),
            f"the actions log records "
            f"{len(fold.breaker_history)} breaker events: the breaker is treated as tripped",
        ),
    )
    for name, should, why in expected:
        if should and not os.path.lexists(sd / name):
            model.problems.append(Problem(str(sd / name), f"missing, though {why}"))
            if name == BREAKER_FILE:
                model.breaker = None
            if name == SAFETY_FILE:
                model.files.pop("safety", None)


def _object(path: Path) -> dict[str, Any]:
    raw = read_json(path, None)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise StateError(f"{path}: not a JSON object")
    return raw

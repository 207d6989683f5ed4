"""One tick of the daemon: gather → decide → record → act for every supervised repo (SPEC 7).

Steps, each idempotent: 0 reconcile actions left "attempted" by a crash; 1 poll open PRs;
2 reclassify what changed, publish L1.C3, open/update decision issues; 3 poll ballots and
apply owners' votes; 4 merge what may merge; 5 auto-close passive reviews (and notify owners
of escalations); 6 burn-in and 7 probes/breaker (hooks for the safety-net issue); 8 metrics.
Decisions come from the pure core (capdaemon.classify, capdaemon.decide); every write goes
through the Forge, after its audit record is fsynced.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from capdaemon.audit import AuditLog, log_paths, utc_iso
from capdaemon.capability.escalation import list_escalations, mark_notified
from capdaemon.capability.model import CapabilityError, CapabilitySnapshot
from capdaemon.capability.snapshot import load_snapshot
from capdaemon.classify.engine import classify
from capdaemon.classify.rules import BUILTIN_RULES
from capdaemon.config import Config, ConfigError, RepoConfig, parse_repo_policy
from capdaemon.daemon import safety, texts
from capdaemon.daemon.botstate import Metrics, PRRecord, PRStore
from capdaemon.daemon.tasks import CapabilityVerdict, capability_state, evaluate, linked_tasks
from capdaemon.decide.ballot import BallotOutcome, BallotRound, BallotStatus, Vote, resolve_ballot
from capdaemon.decide.breaker import BreakerState
from capdaemon.decide.checks import (
    CheckFacts,
    ballot_issue_body,
    passive_issue_body,
    reject_comment,
    render_check,
)
from capdaemon.decide.labels import L1C3_CHECK_NAME, Label
from capdaemon.decide.merge import MergeAction, MergeFacts, RequiredCheck, merge_readiness
from capdaemon.decide.review import passive_close_due
from capdaemon.decide.tiers import TierDecision
from capdaemon.forge.errors import ForgeError, HeadMoved, NotMergeable, RateLimited
from capdaemon.forge.types import Comment, IssueActivity, PRSummary, Reaction
from capdaemon.globs import GlobSet
from capdaemon.logging import get_logger
from capdaemon.model import CheckRun, LabelEvent, PRSnapshot, Quadrant, RuleResult, Verdict
from capdaemon.state import StateError, canonical_json

CRASH_ENV = "CAPDAEMON_CRASH_AFTER"
POLICY_FILE = ".capdaemon.yml"
BALLOT, REVIEW, SCOPE = "ballot", "review", "scope"
# Gather phase only (reads): how many requests run at once, and how many PRs are gathered
# before they are decided, recorded and acted on (bounds the snapshots held in memory).
GATHER_WORKERS = 8
GATHER_CHUNK = 100
# A ballot whose issue activity did not change is still read in full this often (see notes).
BALLOT_REREAD = safety.QUIET_REREAD
# Built-in rules that read snapshot.check_runs: a D they vote for can be lifted by a newer
# check run (tests/daemon/test_steady.py keeps this list honest). User rules may read check
# runs too, so a D that rests on them is never "firm" either.
CHECK_READING_RULES = frozenset({"published_verdict", "classifier_publisher_invalid"})
_BUILTIN_NAMES = frozenset(r.name for r in BUILTIN_RULES)
# Decision issues whose text capdaemon restores when someone else edits it (R5).
WATCHED_KINDS = (BALLOT, REVIEW)


class _Stopped(Exception):
    """A stop was requested (SIGTERM/SIGINT): leave after the current step."""


def _iso(dt: datetime) -> str:
    return utc_iso(dt)


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _digest(*parts: Any) -> str:
    return hashlib.sha256(canonical_json(list(parts)).encode("utf-8")).hexdigest()[:32]


@dataclass
class TickReport:
    """What one tick saw and did (printed by `capdaemon tick --once`, read by demo and tests)."""

    started_at: datetime
    seconds: float = 0.0
    prs_seen: int = 0
    classified: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    would_merge: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    ballots: dict[str, str] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False
    api_requests: int | None = None
    api_remaining: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        out = asdict(self)
        out["started_at"] = _iso(self.started_at)
        return out


@dataclass
class _Seen:
    """One open PR of this tick: its repo config, list entry and record."""

    rc: RepoConfig
    pr: PRSummary
    rec: PRRecord


@dataclass
class _Gathered:
    """What the gather phase read for one PR (or why it read nothing), before any decision."""

    light: str
    cap: str
    settled: str | None = None  # why nothing needs reading (then checks/snapshot stay None)
    checks: list[CheckRun] | None = None
    snapshot: PRSnapshot | None = None
    error: BaseException | None = None


@dataclass
class _BallotReads:
    """A ballot's comments and reactions read in the gather phase of step 3."""

    comments: list[Comment] | None = None
    reactions: list[Reaction] | None = None
    error: BaseException | None = None


def firm_d(verdict: Verdict) -> bool:
    """True when the verdict is D by votes no check run can lift.

    Only built-in rules that never read check runs count (an erroring rule counts as D, as in
    classify); a D from a check-reading rule or from a user rule is not firm, nor is the
    engine's default D when no rule voted at all.
    """
    votes = [
        Quadrant.D if o.result is RuleResult.ERROR else o.vote
        for o in verdict.rules
        if o.rule in _BUILTIN_NAMES
        and o.rule not in CHECK_READING_RULES
        and (o.result is RuleResult.ERROR or (o.result is RuleResult.VOTE and o.vote is not None))
    ]
    return bool(votes) and Quadrant.highest(q for q in votes if q is not None) is Quadrant.D


def issue_text_hash(title: str | None, body: str | None) -> str:
    """What an issue says (title and body) as one hash: capdaemon stores the hash of what it
    wrote and restores the issue when the live text differs (R5)."""
    return _digest(title or "", body or "")


def auto_revert_floor(events: Iterable[LabelEvent]) -> datetime | None:
    """The newest `labeled decision:auto-revert` event time among `events` (None: none).

    Recorded when a head is first seen: such a label may predate the push (the committer
    date that says otherwise is set by the pusher), so only a newer labeled event verifies
    the label for that head (R2).
    """
    label = Label.AUTO_REVERT.value.casefold()
    times = [e.at for e in events if e.action == "labeled" and e.label.casefold() == label]
    return max(times) if times else None


def without_stale_auto_revert(snap: PRSnapshot, floor: datetime | None) -> PRSnapshot:
    """The snapshot without the `labeled decision:auto-revert` events at or before `floor`
    (the classifier then ignores a label that only such events applied)."""
    if floor is None:
        return snap
    label = Label.AUTO_REVERT.value.casefold()
    events = tuple(
        e
        for e in snap.label_events
        if not (e.action == "labeled" and e.label.casefold() == label and e.at <= floor)
    )
    if len(events) == len(snap.label_events):
        return snap
    return dataclasses.replace(snap, label_events=events)


class Ticker:
    """Holds the config, Forge and state of one daemon and runs ticks (one at a time)."""

    def __init__(
        self,
        config: Config,
        state_dir: Path,
        forge: Any,
        *,
        rules: Iterable[Any] = (),
        env: Mapping[str, str] | None = None,
        heartbeat: Callable[[], object] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.config = config
        self.state_dir = Path(state_dir)
        self.forge = forge
        self.rules = tuple(rules)
        self._crash_after = (os.environ if env is None else env).get(CRASH_ENV, "")
        self._heartbeat = heartbeat or (lambda: None)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._stop = threading.Event()
        self._busy = threading.Lock()
        self.log = get_logger("capdaemon.tick")
        classifier_path, actions_path = log_paths(self.state_dir)
        self.classifier_log = AuditLog(classifier_path)  # corrupt → AuditCorruptError (StateError)
        self.actions_log = AuditLog(actions_path)
        self.prs = PRStore(self.state_dir)
        self.metrics = Metrics(self.state_dir)
        list_escalations(self.state_dir)  # a corrupt escalation record refuses start-up too
        self.policy_hash = _digest(_config_json(config), [_rule_identity(r) for r in self.rules])
        self.shadow = config.mode == "shadow"
        self._caps: dict[str, CapabilitySnapshot | CapabilityError] = {}
        cc = config.classifier
        # full texts for config files (schema vs values) and the bot's source (enclosing functions)
        self._contents_for = GlobSet.of(
            (*cc.config_file_globs, f"{cc.source_root.rstrip('/')}/**")
        ).match
        self._required: dict[str, tuple[RequiredCheck, ...]] = {}
        # per tick: check runs read in the gather phase, the decision repo's issue activity,
        # and the gather threads (reads only)
        self._tick_runs: dict[tuple[str, str], list[CheckRun]] = {}
        self._activity: dict[int, IssueActivity] | None = None
        self._activity_ok = False
        self._pool: ThreadPoolExecutor | None = None
        # per tick: each repo's effective config (central + its base branch's .capdaemon.yml),
        # its policy hash, repos whose policy does not parse (no merges), and the decision
        # issues someone else edited or closed (restored this tick)
        self._effective: dict[str, Config] = {}
        self._repo_policy: dict[str, str] = {}
        self._policy_errors: dict[str, str] = {}
        self._policy_error_audited: dict[str, str] = {}
        self._tampered: dict[str, dict[str, str]] = {}
        self._decision_writes = False
        self._access_checked = False

    # ------------------------------------------------------------------ control
    def request_stop(self) -> None:
        """Ask the running tick to return after its current step (signal-safe)."""
        self._stop.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no tick is running; False on timeout."""
        if self._busy.acquire(timeout=-1 if timeout is None else timeout):
            self._busy.release()
            return True
        return False

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise _Stopped

    def _crash(self, point: str) -> None:
        """Test hook: die like `kill -9` at a named point (env CAPDAEMON_CRASH_AFTER)."""
        if self._crash_after == point:
            os._exit(137)

    @property
    def bot_login(self) -> str:
        """Who the bot acts as (the forge's login, else the configured one)."""
        return getattr(self.forge, "login", None) or self.config.bot_login

    @property
    def decision_repo(self) -> str | None:
        """Where decision issues go."""
        return self.config.ballot_repo

    # ------------------------------------------------------------------ the tick
    def tick(self, now: datetime | None = None) -> TickReport:
        """Run steps 0-8 once. `now` (aware) is injected by tests and the demo."""
        with self._busy:
            now = now or self._clock()
            if now.tzinfo is None:
                raise ValueError("tick(now=...) needs an aware datetime")
            started = time.monotonic()
            report = TickReport(started_at=now)
            self.forge.new_tick()
            self._caps = {}
            self._required = {}
            self._tick_runs = {}
            self._activity = None
            self._activity_ok = False
            self._effective = {}
            self._repo_policy = {}
            self._policy_errors = {}
            self._tampered = {}
            self._decision_writes = False
            before = self._budget()
            self.log.info("tick.start", at=_iso(now), repos=len(self.config.repos))
            try:
                self._check_stop()
                if not self._access_checked:
                    self._access_checked = True
                    self.check_decision_access(now, report)
                self._step_reconcile(now, report)
                self._find_tampered(report)
                self._restore_reviews(now, report)
                seen = self._step_poll_and_classify(now, report)  # steps 1-2
                if self._decision_writes:
                    self._activity = None  # step 3 lists the issues again, after our writes
                self._check_stop()
                self._step_ballots(seen, now, report)  # step 3
                self._check_stop()
                self._step_merge(seen, now, report)  # step 4
                self._check_stop()
                self._step_passive_reviews(now, report)  # step 5
                self._step_escalations(now, report)
                self._check_stop()
                self._step_burn_in(seen, now, report)  # step 6 (hook)
                self._step_probes_and_breaker(now, report)  # step 7 (hook)
            except _Stopped:
                report.interrupted = True
                self.log.info("tick.interrupted")
            except RateLimited as exc:
                report.errors.append(f"rate limited: {exc}")
                self.log.warning("tick.rate_limited", wait_seconds=exc.wait_seconds)
            finally:
                if self._pool is not None:
                    self._pool.shutdown(wait=True, cancel_futures=True)
                    self._pool = None
                safety.save(self)
                self.prs.compact()
                report.seconds = round(time.monotonic() - started, 3)
                self._step_metrics(report, before, now)  # step 8
            self.log.info(
                "tick.done",
                seconds=report.seconds,
                prs_seen=report.prs_seen,
                classified=len(report.classified),
                merged=len(report.merged),
                errors=len(report.errors),
                api_requests=report.api_requests,
            )
            return report

    # ------------------------------------------------------------------ start-up
    def check_decision_access(self, now: datetime, report: TickReport | None = None) -> list[str]:
        """Warn (log, audit → digest "attention") when a non-owner, non-bot login can write to
        the decision repo (R5). Candidates: its collaborators when listable, else the PR
        authors (agents) the daemon knows. Returns "login (role)" strings; never blocks."""
        from capdaemon.daemon.access import decision_repo_writers

        authors = {r.author for r in self.prs.records.values() if r.author}
        try:
            writers, how = decision_repo_writers(self.forge, self.config, authors)
        except RateLimited:
            raise
        except Exception as exc:  # a warning only: never stops the daemon
            self.log.warning("access.check_failed", error=str(exc)[:300])
            return []
        found = [f"{w.login} ({w.role})" for w in writers]
        if found:
            self.actions_log.append(
                {
                    "action": "access.decision_repo_writers",
                    "repo": self.decision_repo,
                    "writers": found,
                    "how": how,
                },
                now=now,
            )
            self.log.warning(
                "access.decision_repo_writers", repo=self.decision_repo, writers=found, how=how
            )
        return found

    # ------------------------------------------------------------------ step 0
    def _step_reconcile(self, now: datetime, report: TickReport) -> None:
        """Finish what a crash left between an "attempted" record and its outcome (by PR state)."""
        for rec in list(self.prs.records.values()):
            if not rec.pending:
                continue
            op = rec.pending.get("op")
            status = self.forge.pull_status(rec.repo, rec.number)
            base = {
                "action": op,
                "pr": rec.ref,
                "head_sha": rec.pending.get("head_sha"),
                "reconciled": True,
            }
            if op == "merge" and status.merged:
                self.actions_log.append(
                    {**base, "status": "done", "merge_sha": status.merge_sha}, now=now
                )
                rec.state, rec.merge_sha = "merged", status.merge_sha
            elif op == "close" and status.state == "closed":
                self.actions_log.append({**base, "status": "done"}, now=now)
                rec.state = "merged" if status.merged else "closed"
            else:
                self.actions_log.append({**base, "status": "not_done"}, now=now)
            self.log.info(
                "reconcile.done", pr=rec.ref, op=op, merged=status.merged, state=status.state
            )
            report.reconciled.append(f"{rec.ref}:{op}")
            rec.pending = None
            self.prs.save(rec)

    # ------------------------------------------------------------------ steps 1-2
    def _step_poll_and_classify(self, now: datetime, report: TickReport) -> list[_Seen]:
        seen: list[_Seen] = []
        _ = self.bot_login  # resolve who we are once, before any gather thread starts
        for rc in self.config.repos:
            self._check_stop()
            try:
                prs = self.forge.list_open_prs(rc.name)
                policy = self.forge.read_file(rc.name, POLICY_FILE, rc.base)
            except RateLimited:
                raise
            except ForgeError as exc:
                self._error(report, "repo.poll_failed", f"{rc.name}: {exc}", repo=rc.name)
                continue
            policy_hash = _digest(self.policy_hash, policy)
            self._repo_policy[rc.name] = policy_hash
            rc = self._apply_repo_policy(rc, policy, policy_hash, now, report)
            self._forget_closed(rc, {p.number for p in prs}, now, report)
            prs = [p for p in prs if p.base_ref == rc.base]  # only PRs into the supervised base
            for start in range(0, len(prs), GATHER_CHUNK):
                chunk = prs[start : start + GATHER_CHUNK]
                self._check_stop()
                gathered = self._gather(chunk, policy_hash, now)  # reads only, concurrent
                for pr in chunk:  # decide, record, act: one PR at a time
                    self._check_stop()
                    try:
                        rec = self._process_pr(
                            rc, pr, policy_hash, now, report, gathered.get(pr.number)
                        )
                    except (RateLimited, _Stopped, StateError):
                        raise
                    except ForgeError as exc:
                        self._error(report, "pr.gather_failed", f"{pr.ref}: {exc}", pr=pr.ref)
                        continue
                    except Exception as exc:  # a bug with one PR must not stall every other PR
                        self.log.exception("pr.failed", pr=pr.ref)
                        report.errors.append(f"{pr.ref}: {type(exc).__name__}: {exc}")
                        continue
                    if rec is not None:
                        seen.append(_Seen(rc, pr, rec))
                    self._heartbeat()
                safety.save(self)  # once per chunk (see safety.on_classified)
        report.prs_seen = len(seen)
        return seen

    def _apply_repo_policy(
        self,
        rc: RepoConfig,
        policy: str | None,
        policy_hash: str,
        now: datetime,
        report: TickReport,
    ) -> RepoConfig:
        """The repo's effective config: central config + its base branch's .capdaemon.yml.

        Used for the merge gate (blocking labels, extra checks) and ballots (owners). A policy
        that does not parse is a repo error (logged, audited once per policy text) and the
        repo merges nothing this tick; the classifier makes its PRs D as well.
        """
        self._effective[rc.name] = self.config
        if not policy or not policy.strip():
            return rc
        source = f"{rc.name}@{rc.base}:{POLICY_FILE}"
        try:
            eff = self.config.with_repo_policy(parse_repo_policy(policy, source), rc.name)
        except (ConfigError, ValueError) as exc:
            message = f"{source}: {exc}"
            self._policy_errors[rc.name] = message
            self._error(report, "repo.policy_invalid", message, repo=rc.name)
            if self._policy_error_audited.get(rc.name) != policy_hash:
                self.actions_log.append(
                    {"action": "repo_policy_error", "repo": rc.name, "error": message[:500]},
                    now=now,
                )
                self._policy_error_audited[rc.name] = policy_hash
            return rc
        self._effective[rc.name] = eff
        return eff.repo(rc.name) or rc

    def config_for(self, repo: str) -> Config:
        """The effective config of a supervised repo this tick (central config until polled)."""
        return self._effective.get(repo, self.config)

    # ---------------------------------------------------------- the gather phase
    def _concurrently(self, calls: Mapping[Any, Callable[[], Any]]) -> dict[Any, Any]:
        """Run independent reads on GATHER_WORKERS threads; each key maps to its result or error.

        Reads only (the forge gives each concurrent request its own PyGithub Requester over the
        shared ETag cache); decisions, records and writes stay on the tick's thread. After a
        RateLimited (or a stop request) the remaining reads are not started: they get that
        error, so the tick ends as it would have sequentially.
        """
        out: dict[Any, Any] = {}
        halt: list[BaseException] = []

        def run(fn: Callable[[], Any]) -> Any:
            if halt:
                return halt[0]
            if self._stop.is_set():
                return _Stopped()
            try:
                return fn()
            except RateLimited as exc:
                halt.append(exc)
                return exc
            except Exception as exc:
                return exc

        if len(calls) <= 1:
            return {key: run(fn) for key, fn in calls.items()}
        if self._pool is None:  # one pool per tick, shut down when the tick ends
            self._pool = ThreadPoolExecutor(GATHER_WORKERS, thread_name_prefix="capdaemon-gather")
        futures = {self._pool.submit(run, fn): key for key, fn in calls.items()}
        for fut in as_completed(futures):
            out[futures[fut]] = fut.result()
            self._heartbeat()
        return out

    def _plan(self, pr: PRSummary, policy_hash: str, now: datetime) -> _Gathered:
        """What must be read for one PR this tick (decided from bot-state and the list alone)."""
        rec = self.prs.records.get(pr.ref)
        same_head = rec is not None and rec.head_sha == pr.head_sha
        cap = capability_state(rec.task_id if rec and same_head else None, self._load_cap, now)
        light = self._light(pr, policy_hash, cap)
        g = _Gathered(light=light, cap=cap)
        if rec is not None and same_head and rec.state == "open" and pr.ref not in self._tampered:
            g.settled = self._settled(rec, pr, light)
        return g

    def _gather(
        self, prs: Sequence[PRSummary], policy_hash: str, now: datetime
    ) -> dict[int, _Gathered]:
        """Gather phase of steps 1-2: check runs where they can matter, then the snapshots of
        the PRs whose inputs changed — concurrently. Nothing is decided or written here.

        Commit statuses are not read here: classification never sees them (a snapshot carries
        check runs only); merge readiness reads them in step 4, for PRs that may merge.
        """
        plans = {pr.number: self._plan(pr, policy_hash, now) for pr in prs}
        wanted = {pr.number: pr for pr in prs if plans[pr.number].settled is None}
        got = self._concurrently(
            {
                n: (lambda pr=pr: self.forge.check_runs(pr.repo, pr.head_sha))
                for n, pr in wanted.items()
            }
        )
        snaps: dict[int, PRSummary] = {}
        for n, pr in wanted.items():
            g, result = plans[n], got.get(n)
            if isinstance(result, BaseException):
                g.error = result
                continue
            g.checks = result
            rec = self.prs.records.get(pr.ref)
            if rec is None or not self._unchanged(rec, pr, result, policy_hash, g.cap):
                snaps[n] = pr
        got = self._concurrently(
            {
                n: (
                    lambda pr=pr, runs=plans[n].checks: self.forge.snapshot(
                        pr.repo,
                        pr.number,
                        contents_for=self._contents_for,
                        known_runs=(pr.head_sha, runs or ()),
                    )
                )
                for n, pr in snaps.items()
            }
        )
        for n, result in got.items():
            if isinstance(result, BaseException):
                plans[n].error = result
            else:
                plans[n].snapshot = result
        return plans

    def _fingerprint(
        self, pr: PRSummary, checks: Iterable[CheckRun], policy_hash: str, cap_state: str
    ) -> str:
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

    def _light(self, pr: PRSummary, policy_hash: str, cap_state: str) -> str:
        """The fingerprint without check runs, plus draft: all the PR list/policy/task tell."""
        return _digest(
            pr.head_sha, pr.base_ref, sorted(pr.labels), pr.draft, policy_hash, cap_state
        )

    def _ballot_key(self, rec: PRRecord, head_sha: str) -> str:
        if rec.ballot.get("head_sha") == head_sha:
            return str(rec.ballot.get("status", "pending"))
        return "pending"

    def _published(self, rec: PRRecord, head_sha: str) -> bool:
        """The check and issues as last written match the last evaluation and ballot state."""
        return bool(rec.fingerprint) and rec.published == _digest(
            rec.fingerprint, self._ballot_key(rec, head_sha)
        )

    def _settled(self, rec: PRRecord, pr: PRSummary, light: str) -> str | None:
        """Why this PR needs no read at all this tick (None: read its check runs).

        Requires the PR list, policy and capability to be as at the last full evaluation
        (`light`) and that evaluation to be published for the current ballot state; then the
        only unknown is the check runs on the head, and they are skipped when no check run
        can change what the daemon does with this head (see _checks_cannot_matter).
        """
        if rec.light != light or not self._published(rec, pr.head_sha):
            return None
        if not safety.tier_recorded(self, rec):
            return None  # safety.json lost this head's tier (a crash before its save)
        return self._checks_cannot_matter(rec, pr)

    def _checks_cannot_matter(self, rec: PRRecord, pr: PRSummary) -> str | None:
        """Why no check run on this head can change an outcome (None: they can — read them).

        - draft: GitHub refuses to merge a draft, and leaving draft changes the PR list entry;
        - blocked: P0 findings (agent registry: commit trailers, registry, burn-in) and scope
          violations (files, commits, task snapshot) fail L1.C3 whatever the checks say, and
          none of them reads check runs;
        - a ballot is needed and not approved for this head: the PR is a firm D (D by rules
          that never read check runs; a check can only raise a quadrant, and D is the top), or
          its tier asks for a ballot (tier 3, expired one-tap: files and task level only).
          Only an owner's vote in step 3 makes it mergeable, and that republishes it first.
        Everything else reads: A/B/C (required/extra checks; a classifier-judgment can raise
        them), approved ballots (merging needs the checks), a D that rests on a check-reading
        or user rule (a newer judgment can lower it), a pending one-tap, and a PR with a
        blocking label (only the daemon honours the label: a human could still merge on a
        stale green L1.C3, so its classification must stay current).
        """
        if pr.draft:
            return "draft"
        if rec.blocking:
            return "blocked"
        firm = rec.quadrant == Quadrant.D.value and rec.firm_d is True
        if (firm or safety.needs_ballot(self, rec)) and not self._ballot_mergeable(
            rec, pr.head_sha
        ):
            return "ballot not approved"
        return None

    def _ballot_mergeable(self, rec: PRRecord, head_sha: str) -> bool:
        try:
            return BallotStatus(self._ballot_key(rec, head_sha)).mergeable
        except ValueError:
            return True  # unknown: treat as approved, i.e. read everything

    def _unchanged(
        self,
        rec: PRRecord,
        pr: PRSummary,
        checks: Iterable[CheckRun],
        policy_hash: str,
        cap_state: str,
    ) -> bool:
        """Same head and inputs as last handled, published for the current ballot state."""
        if rec.head_sha != pr.head_sha or not self._published(rec, pr.head_sha):
            return False
        if pr.ref in self._tampered:
            return False  # a decision issue was edited by someone else: rewrite it
        if not safety.tier_recorded(self, rec):
            return False  # classify again to record the head's tier (no second audit)
        if rec.quadrant == Quadrant.D.value and rec.firm_d is None:
            return False  # recorded before `firm_d` existed: classify once more to learn it
        return self._fingerprint(pr, checks, policy_hash, cap_state) == rec.fingerprint

    def _process_pr(
        self,
        rc: RepoConfig,
        pr: PRSummary,
        policy_hash: str,
        now: datetime,
        report: TickReport,
        gathered: _Gathered | None = None,
    ) -> PRRecord | None:
        """Reclassify and republish one PR when its inputs (or its ballot state) changed.

        `gathered` comes from the gather phase; without it (a ballot decision republishing
        the PR in step 3) everything is read here.
        """
        g = gathered or self._plan(pr, policy_hash, now)
        if g.error is not None:
            raise g.error
        rec = self.prs.setdefault(pr.repo, pr.number, _iso(now))
        if rec.state != "open":
            rec.state = "open"  # reopened
        if g.settled is not None:
            self.log.debug("pr.settled", pr=pr.ref, why=g.settled)
            return rec  # nothing changed that could matter: no read, no classification, no write
        checks = g.checks
        if checks is None:
            checks = self.forge.check_runs(pr.repo, pr.head_sha)
        self._tick_runs[(pr.repo, pr.head_sha)] = checks
        if self._unchanged(rec, pr, checks, policy_hash, g.cap):
            if rec.light != g.light:  # e.g. draft toggled: not a classification input
                rec.light = g.light
                self.prs.save(rec)
            return rec  # unchanged: no snapshot, no classification, no write
        snap = g.snapshot
        if snap is None:
            snap = self.forge.snapshot(
                pr.repo,
                pr.number,
                contents_for=self._contents_for,
                known_runs=(pr.head_sha, checks),
            )
        if snap.head_sha != pr.head_sha:
            self.log.info("pr.head_moved_during_gather", pr=pr.ref)
            return rec  # the list is stale; the next tick sees the new head
        tasks = linked_tasks(snap, rc.task_branch_pattern)
        capv = evaluate(snap, tasks, self._load_cap, require=rc.require_capability, now=now)
        cap = capability_state(capv.task_id, self._load_cap, now)
        fp = self._fingerprint(pr, checks, policy_hash, cap)
        verdict = classify(
            self._label_floor(rec, snap),
            self.config,
            now=now,
            user_rules=self.rules,
            agent_severity=safety.agent_severities(self),
        )
        if rec.head_sha and rec.head_sha != snap.head_sha:
            self._head_moved(rec, snap.head_sha, now)
        rec.head_sha, rec.author, rec.title = snap.head_sha, snap.author, snap.title
        rec.task_id, rec.merge_policy = capv.task_id, capv.merge_policy
        rec.quadrant, rec.mergeable = verdict.quadrant.value, snap.mergeable
        rec.firm_d = firm_d(verdict)
        rec.auto_revert = any(
            o.rule == "auto_revert_marker" and o.result is RuleResult.VOTE for o in verdict.rules
        )
        rec.blocking = [f.message for f in verdict.blocking] + list(capv.blocking)
        rec.merge_blocked_head = ""
        rec.updated_at = _iso(now)
        safety.on_classified(self, rec, snap, now)
        # record: the classification (and any scope violation) is fsynced before anything is written
        if rec.audited != fp:
            self._audit_classification(rec, snap, verdict, capv, fp, now)
            report.classified.append(rec.ref)
        # act: the check, then the decision issues
        self._publish(rc, rec, snap, verdict, capv, now, report)
        rec.fingerprint = fp
        rec.light = self._light(pr, policy_hash, cap)
        rec.published = _digest(fp, self._ballot_key(rec, snap.head_sha))
        self.prs.save(rec)
        return rec

    def _label_floor(self, rec: PRRecord, snap: PRSnapshot) -> PRSnapshot:
        """The snapshot the classifier sees: `decision:auto-revert` labels applied before this
        head was first seen no longer count (R2; clock-free: the committer date is the
        pusher's to set). The bot's own revert PR at exactly the revert commit is exempt."""
        if rec.auto_revert_head != snap.head_sha:
            floor = auto_revert_floor(snap.label_events)
            rec.auto_revert_head = snap.head_sha
            rec.auto_revert_floor = floor.isoformat() if floor else ""
        if not rec.auto_revert_floor:
            return snap
        if snap.head_sha and snap.head_sha == safety.bot_revert_head(self, rec.repo, rec.number):
            return snap
        return without_stale_auto_revert(snap, datetime.fromisoformat(rec.auto_revert_floor))

    def _audit_classification(
        self,
        rec: PRRecord,
        snap: PRSnapshot,
        verdict: Verdict,
        capv: CapabilityVerdict,
        fp: str,
        now: datetime,
    ) -> None:
        entry = {
            "pr": rec.ref,
            "head_sha": snap.head_sha,
            "base_sha": snap.base_sha,
            **verdict.to_dict(),
            "capability": capv.to_dict(),
            "blocking": rec.blocking,
            "fingerprint": fp,
        }
        if rec.auto_revert_floor:
            entry["auto_revert_floor"] = rec.auto_revert_floor
        self.classifier_log.append(entry, now=now)
        if capv.violations and capv.enforced:
            self.actions_log.append(
                {
                    "action": "scope_violation",
                    "pr": rec.ref,
                    "head_sha": snap.head_sha,
                    "task_id": capv.task_id,
                    "violations": [v.to_dict() for v in capv.violations],
                },
                now=now,
            )
            self.log.warning(
                "scope.violation", pr=rec.ref, task=capv.task_id, count=len(capv.violations)
            )
        if rec.counted_head != snap.head_sha:
            self.metrics.count_quadrant(verdict.quadrant.value)
            rec.counted_head = snap.head_sha
        rec.audited = fp
        self.log.info(
            "pr.classified",
            pr=rec.ref,
            head=snap.head_sha[:12],
            quadrant=verdict.quadrant.value,
            task=capv.task_id,
            blocking=len(rec.blocking),
        )

    def _head_moved(self, rec: PRRecord, new_head: str, now: datetime) -> None:
        """A push: an approval for the old head is void; a ballot round rebinds when still D."""
        if (
            rec.ballot
            and rec.ballot.get("head_sha") == rec.head_sha
            and BallotStatus(rec.ballot["status"]).mergeable
        ):
            self.actions_log.append(
                {
                    "action": "approval_voided",
                    "pr": rec.ref,
                    "head_sha": rec.head_sha,
                    "new_head_sha": new_head,
                },
                now=now,
            )
            self.log.info("ballot.voided", pr=rec.ref, old=rec.head_sha[:12], new=new_head[:12])
        rec.would_merge_head = ""

    def _publish(
        self,
        rc: RepoConfig,
        rec: PRRecord,
        snap: PRSnapshot,
        verdict: Verdict,
        capv: CapabilityVerdict,
        now: datetime,
        report: TickReport,
    ) -> None:
        """Write the decision issues, then L1.C3 (which links to the ballot), for one head."""
        is_d = verdict.quadrant is Quadrant.D or safety.needs_ballot(self, rec)
        ballot_issue = None
        if is_d:  # the ballot first, so the check can link to it
            ballot_issue = self._ensure_ballot(rec, snap, verdict, now, report)
        else:
            note = (
                f"No ballot needed any more: head {snap.head_sha} is quadrant {verdict.quadrant}."
            )
            self._close_issue(rec, BALLOT, note, now)
        outcome = self._outcome(rec, snap.head_sha, now) if is_d else None
        safety.tier_gate(self, rec, snap, now, report)
        check = render_check(
            verdict,
            CheckFacts(
                head_sha=snap.head_sha,
                tier=self._tier(rec),
                ballot=outcome,
                ballot_url=self._issue_url(ballot_issue),
                one_tap=safety.one_tap_result(self, rec, now),
                blocking=tuple(capv.blocking),
            ),
        )
        if verdict.quadrant in (Quadrant.B, Quadrant.C) and not rec.blocking:
            # a passive review of what capdaemon approves by itself (never of a blocked PR)
            label = (
                Label.AUTO_APPROVED_CRITICAL_REVERSIBLE
                if verdict.quadrant is Quadrant.B
                else Label.AUTO_APPROVED_IRREVERSIBLE_NON_CRITICAL
            )
            self._ensure_issue(
                rec,
                REVIEW,
                {"kind": REVIEW, "pr": rec.ref, "quadrant": verdict.quadrant.value},
                texts.review_title(verdict.quadrant.value, rec.repo, rec.number, snap.title),
                passive_issue_body(
                    verdict.quadrant,
                    rec.ref,
                    "",
                    snap.title,
                    verdict,
                    days=self.config.passive_review_days,
                ),
                [label.value],
                now,
                report,
            )
        if capv.blocking:
            self._ensure_issue(
                rec,
                SCOPE,
                {"kind": "scope-violation", "pr": rec.ref, "head": snap.head_sha},
                texts.scope_title(rec.repo, rec.number),
                texts.scope_body(
                    pr_ref=rec.ref,
                    task=capv.task_id,
                    head_sha=snap.head_sha,
                    problems=capv.blocking,
                ),
                [Label.SCOPE_VIOLATION.value],
                now,
                report,
            )
        self.forge.publish_check(
            rec.repo,
            snap.head_sha,
            success=check.success,
            title=check.title,
            summary=check.summary,
            marker={"kind": "l1c3", "pr": rec.ref, "head": snap.head_sha},
        )
        self._tick_runs.pop((rec.repo, snap.head_sha), None)  # our L1.C3 changed: read again
        rec.check_success = check.success
        self.log.info("check.published", pr=rec.ref, head=snap.head_sha[:12], success=check.success)

    def _outcome(self, rec: PRRecord, head_sha: str, now: datetime) -> BallotOutcome:
        """The ballot state recorded for this head, as decide's BallotOutcome."""
        b = rec.ballot if rec.ballot.get("head_sha") == head_sha else {}
        status = BallotStatus(b.get("status", "pending"))
        deciding = None
        if b.get("by"):
            at = _parse(b["at"]) if b.get("at") else now
            deciding = Vote(b["by"], "comment", None, at, "", status, True)
        reason = str(b.get("reason", "no owner has answered yet"))
        return BallotOutcome(status, head_sha, reason, deciding)

    def _ensure_ballot(
        self,
        rec: PRRecord,
        snap: PRSnapshot,
        verdict: Verdict,
        now: datetime,
        report: TickReport,
    ) -> int | None:
        """Open the ballot (round 1) or start a new round in the same issue: when the head
        changed, or when someone else edited the ballot's text (restored: R5).

        A new round ignores every comment and reaction already on the issue when it starts
        (their ids, read after the new-round comment: clock-free, R3), as well as anything
        stamped before the round's start.
        """
        prior = BallotRound.from_json(rec.ballot_round) if rec.ballot_round else None
        # GitHub stamps comments and reactions in whole seconds: a vote in the same second as the
        # round's start belongs to it (votes already on the issue are excluded by id)
        start = now.replace(microsecond=0)
        tampered = self._tampered.get(rec.ref, {}).get(BALLOT)
        reason = ""
        if prior is None:
            rnd = BallotRound(rec.repo, rec.number, snap.head_sha, start)
        elif prior.head_sha != snap.head_sha:
            rnd, reason = prior.for_head(snap.head_sha, start), "head_changed"
        elif tampered:
            rnd, reason = prior.restart(start), "issue_restored"
        else:
            rnd = prior
        new_round = prior is not None and rnd.round != prior.round
        voided = None
        if (
            prior is not None
            and new_round
            and rec.ballot.get("head_sha") == prior.head_sha
            and BallotStatus(rec.ballot.get("status", "pending")).mergeable
        ):
            voided = prior.head_sha
            if reason == "issue_restored":
                self.actions_log.append(
                    {
                        "action": "approval_voided",
                        "pr": rec.ref,
                        "head_sha": prior.head_sha,
                        "new_head_sha": snap.head_sha,
                        "reason": "the ballot was edited by someone else",
                    },
                    now=now,
                )
        if new_round or prior is None:
            rec.ballot = {"status": "pending", "head_sha": snap.head_sha, "round": rnd.round}
        labels = [Label.PENDING_OWNER.value]
        if self._ballot_key(rec, snap.head_sha) == BallotStatus.DEFERRED.value:
            labels.append(Label.DEFERRED.value)
        number = self._ensure_issue(
            rec,
            BALLOT,
            {"kind": BALLOT, "pr": rec.ref, "head": snap.head_sha, "round": rnd.round},
            texts.ballot_title(rec.repo, rec.number, snap.title),
            ballot_issue_body(rec.ref, "", snap.title, snap.head_sha, rnd.round, verdict),
            labels,
            now,
            report,
            round_no=rnd.round if reason == "issue_restored" else None,
        )
        if number is None:
            return None
        if new_round and prior is not None:
            assert self.decision_repo is not None
            if reason == "head_changed":
                self.forge.comment_once(
                    self.decision_repo,
                    number,
                    {"kind": "round", "key": f"{rec.ref}:round:{rnd.round}"},
                    texts.new_round_comment(prior.head_sha, snap.head_sha, rnd.round, voided),
                )
            # every vote already on the issue belongs to an earlier round, whatever its time
            stale = [f"comment:{c.id}" for c in self.forge.comments(self.decision_repo, number)]
            stale += [f"reaction:{r.id}" for r in self.forge.reactions(self.decision_repo, number)]
            rnd = rnd.with_stale_votes(stale)
            self.actions_log.append(
                {
                    "action": "ballot_round",
                    "pr": rec.ref,
                    "head_sha": snap.head_sha,
                    "round": rnd.round,
                    "issue": number,
                    "reason": reason,
                    "stale_votes": len(rnd.stale_vote_ids),
                },
                now=now,
            )
        rec.ballot_round = {**rnd.to_json(), "issue": number}
        return number

    def _ensure_issue(
        self,
        rec: PRRecord,
        kind: str,
        marker: dict[str, Any],
        title: str,
        body: str,
        labels: list[str],
        now: datetime,
        report: TickReport,
        *,
        round_no: int | None = None,
    ) -> int | None:
        """Open or update one decision issue (the forge finds it by marker: never a duplicate).

        A ballot closed earlier ("no ballot needed") is reopened when the head needs one
        again (F2). When someone else edited (or closed) the issue, the text is restored and
        one comment says so (R5); `round_no` is the ballot's new round in that case.
        """
        repo = self.decision_repo
        if repo is None:
            self.log.warning("issue.no_decision_repo", pr=rec.ref, kind=kind)
            return None
        known = rec.issues.get(kind)
        tampered = self._tampered.get(rec.ref, {}).get(kind)
        if known and not known.get("open", True) and kind != BALLOT:
            return int(known["number"])  # a closed passive review / scope issue stays closed
        issue = self.forge.ensure_issue(
            repo,
            marker,
            title,
            body,
            labels,
            reopen=kind == BALLOT,
            number=int(known["number"]) if known and known.get("number") else None,
        )
        self._decision_writes = True
        if not known or known.get("number") != issue.number:
            opened = issue.created_at or now
            known = rec.issues[kind] = {
                "number": issue.number,
                "open": issue.state == "open",
                "opened_at": _iso(opened),
                "kept_open": False,
            }
            self.actions_log.append(
                {
                    "action": "issue_opened",
                    "pr": rec.ref,
                    "kind": kind,
                    "issue": f"{repo}#{issue.number}",
                },
                now=now,
            )
            report.issues.append(f"{kind}:{repo}#{issue.number}")
            self.log.info("issue.ensured", pr=rec.ref, kind=kind, issue=issue.number)
        else:
            was_open = known.get("open", True)
            known["open"] = issue.state == "open"
            if known["open"] and not was_open:
                self.actions_log.append(
                    {"action": "issue_reopened", "pr": rec.ref, "kind": kind,
                     "issue": f"{repo}#{issue.number}"},
                    now=now,
                )  # fmt: skip
                self.log.info("issue.reopened", pr=rec.ref, kind=kind, issue=issue.number)
        if tampered and kind in WATCHED_KINDS:
            self._restored(rec, kind, issue.number, tampered, round_no, now)
        self._done_tampered(rec.ref, kind)
        if kind in WATCHED_KINDS:
            known["body_sha"] = issue_text_hash(issue.title, issue.body)
        if kind == REVIEW:  # kept while open: a merged PR's review is restored from it (R5)
            known["text"] = {"title": title, "body": body, "marker": marker, "labels": labels}
        return issue.number

    def _restore_reviews(self, now: datetime, report: TickReport) -> None:
        """Restore passive review issues someone else edited, from the text capdaemon wrote
        (their PR has usually merged: it is not reprocessed). Ballots are restored when
        their PR is processed (a new round starts)."""
        repo = self.decision_repo
        if repo is None:
            return
        for ref, kinds in list(self._tampered.items()):
            rec = self.prs.records.get(ref)
            info = rec.issues.get(REVIEW) if rec else None
            what = kinds.get(REVIEW)
            if rec is None or info is None or not what:
                continue
            text = info.get("text")
            if not isinstance(text, dict):
                self.log.warning("issue.restore_unavailable", pr=ref, kind=REVIEW)
                continue
            self._check_stop()
            try:
                issue = self.forge.ensure_issue(
                    repo,
                    dict(text["marker"]),
                    str(text["title"]),
                    str(text["body"]),
                    list(text["labels"]),
                    number=int(info["number"]),
                )
                self._decision_writes = True
                self._restored(rec, REVIEW, issue.number, what, None, now)
                info["body_sha"] = issue_text_hash(issue.title, issue.body)
            except RateLimited:
                raise
            except ForgeError as exc:
                self._error(report, "issue.restore_failed", f"{ref}: {exc}", pr=ref)
                continue
            self.prs.save(rec)

    def _restored(
        self, rec: PRRecord, kind: str, number: int, what: str, round_no: int | None, now: datetime
    ) -> None:
        """Say once, on the issue, that someone else edited it and that it was restored."""
        assert self.decision_repo is not None
        info = rec.issues[kind]
        count = int(info.get("restores", 0)) + 1
        self.forge.comment_once(
            self.decision_repo,
            number,
            {"kind": "restored", "key": f"{rec.ref}:{kind}:{count}"},
            texts.restored_comment(kind, what, round_no),
        )
        info["restores"] = count
        self.actions_log.append(
            {
                "action": "issue_restored",
                "pr": rec.ref,
                "kind": kind,
                "issue": f"{self.decision_repo}#{number}",
                "what": what,
                "round": round_no,
            },
            now=now,
        )
        self.log.warning("issue.restored", pr=rec.ref, kind=kind, issue=number, what=what)
        self._done_tampered(rec.ref, kind)

    def _done_tampered(self, ref: str, kind: str) -> None:
        kinds = self._tampered.get(ref)
        if kinds is not None:
            kinds.pop(kind, None)
            if not kinds:
                del self._tampered[ref]

    def _find_tampered(self, report: TickReport) -> None:
        """Decision issues whose live title/body differs from what capdaemon last wrote, or a
        ballot closed by someone else (R5), from the issue list the tick reads anyway.

        Only open PRs with a watched open issue and a stored hash are compared; the list is
        read only when there is one (a steady tick reads it for its ballots anyway)."""
        watched = [
            (rec, kind, info)
            for rec in self.prs.records.values()
            for kind, info in rec.issues.items()
            if kind in WATCHED_KINDS
            and info.get("open")
            and (rec.state == "open" or kind == REVIEW)
        ]
        for rec, kind, info in watched:
            if not info.get("body_sha") and kind == BALLOT:
                # recorded before hashes were kept: rewrite it once to learn the hash (silent)
                self._tampered.setdefault(rec.ref, {})[kind] = ""
        watched = [w for w in watched if w[2].get("body_sha")]
        if not watched:
            return
        activity = self.issue_activity(report)
        if not self._activity_ok:
            return
        for rec, kind, info in watched:
            act = activity.get(int(info["number"]))
            if act is None:
                if kind == BALLOT:  # not among the open issues: closed by someone else
                    self._tampered.setdefault(rec.ref, {})[kind] = "closed"
                continue
            if act.body is None:
                continue  # the list did not carry the text: nothing to compare
            if issue_text_hash(act.title, act.body) != info["body_sha"]:
                self._tampered.setdefault(rec.ref, {})[kind] = "edited"
        for ref, kinds in self._tampered.items():
            if any(kinds.values()):
                self.log.warning("issue.tampered", pr=ref, kinds=sorted(kinds.items()))

    def _close_issue(self, rec: PRRecord, kind: str, comment: str, now: datetime) -> None:
        known = rec.issues.get(kind)
        if not known or not known.get("open") or self.decision_repo is None:
            return
        self.forge.close_issue(self.decision_repo, int(known["number"]), comment)
        known["open"] = False
        known.pop("text", None)
        self.actions_log.append(
            {
                "action": "issue_closed",
                "pr": rec.ref,
                "kind": kind,
                "issue": f"{self.decision_repo}#{known['number']}",
                "comment": comment,
            },
            now=now,
        )
        self.log.info("issue.closed", pr=rec.ref, kind=kind, issue=known["number"])

    def _forget_closed(
        self, rc: RepoConfig, open_numbers: set[int], now: datetime, report: TickReport
    ) -> None:
        """Records of PRs that left the open list (merged or closed outside the daemon)."""
        for rec in list(self.prs.records.values()):
            if (
                rec.repo != rc.name
                or rec.state != "open"
                or rec.number in open_numbers
                or rec.pending
            ):
                continue
            status = self.forge.pull_status(rec.repo, rec.number)
            rec.state = "merged" if status.merged else "closed"
            rec.merge_sha = status.merge_sha if status.merged else None
            self.actions_log.append(
                {"action": "pr_left", "pr": rec.ref, "state": rec.state}, now=now
            )
            self._close_issue(rec, BALLOT, texts.gone_comment(rec.state), now)
            rec.updated_at = _iso(now)

    # ------------------------------------------------------------------ step 3
    def _step_ballots(self, seen: list[_Seen], now: datetime, report: TickReport) -> None:
        todo: list[_Seen] = []
        for s in seen:
            rec = s.rec
            needs = rec.quadrant == Quadrant.D.value or safety.needs_ballot(self, rec)
            if not needs or not rec.ballot_round or rec.state != "open":
                continue
            if rec.ballot_round.get("head_sha") != s.pr.head_sha or rec.head_sha != s.pr.head_sha:
                continue  # not rebound yet (the snapshot failed this tick)
            todo.append(s)
        fps: dict[str, str | None] = {}
        wanted: dict[str, int] = {}
        if todo:
            activity = self.issue_activity(report)
            for s in todo:
                rec = s.rec
                number = int(rec.ballot_round["issue"])  # type: ignore[index]
                fps[rec.ref] = fp = self._ballot_fp(rec, activity.get(number))
                if not self._ballot_quiet(rec, fp, s.pr.head_sha, now):
                    wanted[rec.ref] = number
        reads = self._read_ballots(wanted)
        for s in todo:
            rec = s.rec
            if rec.ref not in wanted:  # nobody commented or reacted since the last full read
                report.ballots[rec.ref] = self._ballot_key(rec, s.pr.head_sha)
                continue
            self._check_stop()
            try:
                status = self._resolve_ballot(s, now, report, reads[rec.ref])
            except RateLimited:
                raise
            except ForgeError as exc:
                self._error(report, "ballot.failed", f"{rec.ref}: {exc}", pr=rec.ref)
                status = None
            fp = fps.get(rec.ref)
            if status is not None and fp and status == self._ballot_key(rec, s.pr.head_sha):
                rec.ballot_seen = {"fp": fp, "at": _iso(now)}
            else:  # unread, or the outcome is not applied yet: read in full next tick
                rec.ballot_seen = {}
            self.prs.save(rec)
            self._heartbeat()
        safety.poll_one_taps(self, seen, now, report)

    def issue_activity(self, report: TickReport | None = None) -> dict[int, IssueActivity]:
        """The decision repo's open issues' activity, listed once per tick ({} when unreadable:
        every ballot and one-tap is then read in full, as before)."""
        if self._activity is None:
            self._activity = {}
            repo = self.decision_repo
            if repo is not None:
                try:
                    self._activity = self.forge.issue_activity(repo)
                    self._activity_ok = True
                except RateLimited:
                    raise
                except ForgeError as exc:
                    if report is not None:
                        self._error(report, "issues.list_failed", f"{repo}: {exc}", repo=repo)
        return self._activity

    def _ballot_fp(self, rec: PRRecord, act: IssueActivity | None) -> str | None:
        """What the issue list says about a ballot, bound to its round (None: unknown → read).

        Comments count and updated_at show new (and deleted) comments; the reaction rollup
        shows new and removed reactions. An edit of an existing comment may show in neither,
        and need not: an edited command never counts (SPEC 3), so an edit can only withdraw a
        vote, and the statuses whose reads are skipped (pending, deferred) have no vote a
        withdrawal could turn into a merge — an approved ballot is always read in full.
        The policy hash binds it to the owners and rules in force.
        """
        if act is None or act.reactions is None or act.state != "open" or not rec.ballot_round:
            return None
        rnd = rec.ballot_round
        return _digest(
            act.number,
            act.comments,
            _iso(act.updated_at) if act.updated_at else "",
            [list(pair) for pair in act.reactions],
            rnd.get("round"),
            rnd.get("head_sha"),
            rnd.get("started_at"),
            sorted(rnd.get("stale_vote_ids") or ()),
            self._repo_policy.get(rec.repo, self.policy_hash),
            rec.author,
        )

    def _ballot_quiet(self, rec: PRRecord, fp: str | None, head_sha: str, now: datetime) -> bool:
        """True when a ballot needs no read: same activity as at the last full read, less than
        BALLOT_REREAD ago, and not approved (an approval is re-read every tick until merged)."""
        seen = rec.ballot_seen
        if not fp or seen.get("fp") != fp or self._ballot_mergeable(rec, head_sha):
            return False
        try:
            return now - _parse(str(seen["at"])) < BALLOT_REREAD
        except (KeyError, ValueError):
            return False

    def _read_ballots(self, wanted: Mapping[str, int]) -> dict[str, _BallotReads]:
        """Gather phase of step 3: comments and reactions of the ballots to read, concurrently."""
        repo = self.decision_repo
        calls: dict[tuple[str, str], Callable[[], Any]] = {}
        if repo is not None:
            for ref, number in wanted.items():
                calls[(ref, "c")] = lambda n=number: self.forge.comments(repo, n)
                calls[(ref, "r")] = lambda n=number: self.forge.reactions(repo, n)
        got = self._concurrently(calls)
        out: dict[str, _BallotReads] = {}
        for ref in wanted:
            reads = out[ref] = _BallotReads()
            for kind in ("c", "r"):
                result = got.get((ref, kind))
                if isinstance(result, BaseException):
                    reads.error = reads.error or result
                elif kind == "c":
                    reads.comments = result
                else:
                    reads.reactions = result
        return out

    def _owners(self, repo: str, users: Iterable[str]) -> set[str]:
        """Owners for `repo`: central owners plus the repo's (capdaemon.yml and the base
        branch's .capdaemon.yml), and admins when owners_include_admins."""
        owners = set(self.config_for(repo).owners_for(repo))
        if self.config.owners_include_admins:
            for user in {u.lower() for u in users} - owners:
                if self.forge.permission(repo, user) == "admin":
                    owners.add(user)
        return owners

    def _resolve_ballot(
        self, s: _Seen, now: datetime, report: TickReport, reads: _BallotReads | None = None
    ) -> str:
        """Count the owners' votes and apply a changed outcome; returns the resolved status."""
        rec = s.rec
        assert rec.ballot_round is not None and self.decision_repo is not None
        issue = int(rec.ballot_round["issue"])
        rnd = BallotRound.from_json(rec.ballot_round)
        if reads is not None and reads.error is not None:
            raise reads.error
        comments = reads.comments if reads is not None else None
        reactions = reads.reactions if reads is not None else None
        if comments is None:
            comments = self.forge.comments(self.decision_repo, issue)
        if reactions is None:
            reactions = self.forge.reactions(self.decision_repo, issue)
        answered = {int(k.split(":", 1)[1]) for k in rec.handled if k.startswith("reply:")}
        facts = rnd.facts(
            owners=self._owners(rec.repo, [c.user for c in comments] + [r.user for r in reactions]),
            pr_author=rec.author,
            bot_login=self.bot_login,
            comments=comments,
            reactions=reactions,
            answered_comment_ids=answered,
        )
        outcome = resolve_ballot(facts, now)
        handled = set(rec.handled)
        for vote in (*outcome.counted, *outcome.ignored):
            key = f"vote:{vote.key}"
            if key in handled:
                continue
            self.actions_log.append(
                {
                    "action": "vote_counted" if vote.counted else "vote_ignored",
                    "pr": rec.ref,
                    "issue": f"{self.decision_repo}#{issue}",
                    "round": rnd.round,
                    **vote.to_dict(),
                },
                now=now,
            )
            if not vote.counted:
                self.log.info("vote.ignored", pr=rec.ref, user=vote.user, reason=vote.reason)
            rec.handled.append(key)
        for unknown in outcome.unknown_commands:
            self.forge.comment_once(
                self.decision_repo,
                issue,
                {"kind": "reply", "key": f"comment:{unknown.comment_id}"},
                unknown.reply,
            )
            self.actions_log.append(
                {
                    "action": "unknown_command_answered",
                    "pr": rec.ref,
                    "comment_id": unknown.comment_id,
                    "user": unknown.user,
                    "line": unknown.command.line,
                },
                now=now,
            )
            rec.handled.append(f"reply:{unknown.comment_id}")
        report.ballots[rec.ref] = outcome.status.value
        previous = self._ballot_key(rec, s.pr.head_sha)
        if outcome.status.value != previous:
            self._apply_ballot(s, issue, rnd, outcome, previous, now, report)
        return outcome.status.value

    def _apply_ballot(
        self,
        s: _Seen,
        issue: int,
        rnd: BallotRound,
        outcome: BallotOutcome,
        previous: str,
        now: datetime,
        report: TickReport,
    ) -> None:
        rec = s.rec
        assert self.decision_repo is not None
        status = outcome.status
        self.actions_log.append(
            {
                "action": "ballot",
                "pr": rec.ref,
                "status": status.value,
                "previous": previous,
                "head_sha": outcome.head_sha,
                "round": rnd.round,
                "decided_by": outcome.decided_by,
                "reason": outcome.reason,
                "issue": f"{self.decision_repo}#{issue}",
            },
            now=now,
        )
        self.log.info("ballot.resolved", pr=rec.ref, status=status.value, by=outcome.decided_by)
        deciding = outcome.deciding.key if outcome.deciding else "none"
        self.forge.comment_once(
            self.decision_repo,
            issue,
            {"kind": "ballot-outcome", "key": f"{rec.ref}:{rnd.round}:{status.value}:{deciding}"},
            texts.outcome_comment(outcome, shadow=self.shadow),
        )
        if status is BallotStatus.REJECTED:
            self.actions_log.append(
                {
                    "action": "rejection",
                    "pr": rec.ref,
                    "head_sha": outcome.head_sha,
                    "author": rec.author,
                    "by": outcome.decided_by,
                },
                now=now,
            )
            closed = self._close_pr(rec, reject_comment(outcome), now, report)
            if not closed:
                return  # the close failed or was only attempted: retried next tick
            self._close_issue(rec, BALLOT, "Rejected: the PR is closed.", now)
        rec.ballot = {
            "status": status.value,
            "head_sha": outcome.head_sha,
            "round": rnd.round,
            "by": outcome.decided_by,
            "reason": outcome.reason,
            "at": _iso(now),
        }
        self.prs.save(rec)
        if rec.state == "open":
            # republish the check and the ballot body for the new state (same code path as step 2)
            policy_hash = self._repo_policy.get(rec.repo)
            if policy_hash is None:
                policy = self.forge.read_file(rec.repo, POLICY_FILE, s.rc.base)
                policy_hash = _digest(self.policy_hash, policy)
            self._process_pr(s.rc, s.pr, policy_hash, now, report)

    def _close_pr(self, rec: PRRecord, comment: str, now: datetime, report: TickReport) -> bool:
        """Close a rejected PR (record before act). Shadow mode only audits "would_close"."""
        base = {"action": "close", "pr": rec.ref, "head_sha": rec.head_sha}
        if self.shadow:
            self.actions_log.append({**base, "status": "would_close"}, now=now)
            return True
        rec.pending = {"op": "close", "head_sha": rec.head_sha, "at": _iso(now)}
        self.prs.save(rec)
        self.actions_log.append({**base, "status": "attempted"}, now=now)
        self._crash("audit:close")
        try:
            self.forge.close_pr(rec.repo, rec.number, comment)
        except ForgeError as exc:
            self.actions_log.append({**base, "status": "failed", "error": str(exc)[:300]}, now=now)
            self._error(report, "pr.close_failed", f"{rec.ref}: {exc}", pr=rec.ref)
            return False
        finally:
            rec.pending = None
            self.prs.save(rec)
        self.actions_log.append({**base, "status": "done"}, now=now)
        rec.state = "closed"
        report.closed.append(rec.ref)
        self.log.info("pr.closed", pr=rec.ref)
        return True

    # ------------------------------------------------------------------ step 4
    def _required_checks(self, rc: RepoConfig) -> tuple[RequiredCheck, ...]:
        if rc.name not in self._required:
            protection = self.forge.get_protection(rc.name, rc.base) or {}
            self._required[rc.name] = required_checks(protection)
        return self._required[rc.name]

    def _step_merge(self, seen: list[_Seen], now: datetime, report: TickReport) -> None:
        for s in seen:
            rec, pr = s.rec, s.pr
            if rec.state != "open" or rec.head_sha != pr.head_sha or not rec.fingerprint:
                continue
            if not rec.check_success or rec.merge_blocked_head == pr.head_sha:
                continue  # cheap filter: our own L1.C3 fails, or GitHub refused this head
            if self.shadow and rec.would_merge_head == pr.head_sha:
                continue
            if s.rc.name in self._policy_errors:
                self.log.info("merge.waiting", pr=rec.ref, reasons=["repo policy does not parse"])
                continue  # fail closed: the repo's policy is unknown this tick
            blocking = {b.lower() for b in s.rc.blocking_labels}
            if pr.draft or any(label.lower() in blocking for label in pr.labels):
                continue  # merge_readiness would wait: no need to read anything for it
            self._check_stop()
            try:
                self._try_merge(s, now, report)
            except RateLimited:
                raise
            except ForgeError as exc:
                self._error(report, "merge.check_failed", f"{rec.ref}: {exc}", pr=rec.ref)
            self._heartbeat()

    def _tier(self, rec: PRRecord) -> TierDecision:
        """The tier overlay of SPEC 4.1 for the PR's current head (capdaemon.daemon.safety)."""
        return safety.tier_decision(self, rec)

    def _breaker(self) -> BreakerState:
        """The circuit breaker's state (SPEC 6.3, capdaemon.daemon.safety)."""
        return safety.breaker_state(self)

    def _try_merge(self, s: _Seen, now: datetime, report: TickReport) -> None:
        rec, pr = s.rec, s.pr
        if rec.mergeable is None:  # GitHub computes it lazily: read it again (one GET)
            status = self.forge.pull_status(pr.repo, pr.number)
            if status.head_sha == pr.head_sha:
                rec.mergeable = status.mergeable
        runs = self._tick_runs.get((pr.repo, pr.head_sha))
        if runs is None:
            checks = self.forge.commit_checks(pr.repo, pr.head_sha)
        else:  # the gather phase's check runs, plus the statuses (read for merging only)
            checks = runs + self.forge.commit_statuses(pr.repo, pr.head_sha)
        readiness = merge_readiness(self._merge_facts(s, checks, now))
        if readiness.action is MergeAction.MERGE and runs is not None:
            # decided on the gather phase's check runs: read them again right before acting
            checks = self.forge.commit_checks(pr.repo, pr.head_sha)
            readiness = merge_readiness(self._merge_facts(s, checks, now))
        if readiness.action is MergeAction.WAIT:
            self.log.debug("merge.waiting", pr=rec.ref, reasons=list(readiness.reasons))
            return
        if readiness.action is MergeAction.WOULD_MERGE:
            self.actions_log.append(
                {
                    "action": "merge",
                    "status": "would_merge",
                    "pr": rec.ref,
                    "head_sha": pr.head_sha,
                    "quadrant": rec.quadrant,
                },
                now=now,
            )
            rec.would_merge_head = pr.head_sha
            report.would_merge.append(rec.ref)
            self.log.info("merge.would_merge", pr=rec.ref)
            return
        self._merge(s, now, report)

    def _merge_facts(self, s: _Seen, checks: Sequence[CheckRun], now: datetime) -> MergeFacts:
        rec, pr, rc = s.rec, s.pr, s.rc
        needs = rec.quadrant == Quadrant.D.value or safety.needs_ballot(self, rec)
        ballot = self._outcome(rec, pr.head_sha, now) if needs else None
        return MergeFacts(
            head_sha=pr.head_sha,
            quadrant=Quadrant(rec.quadrant),
            tier=self._tier(rec),
            checks=tuple(checks),
            required_checks=self._required_checks(rc),
            extra_checks=rc.extra_checks,
            draft=pr.draft,
            labels=pr.labels,
            blocking_labels=rc.blocking_labels,
            mergeable=rec.mergeable,
            breaker=self._breaker(),
            verified_auto_revert=rec.auto_revert,
            capability_reasons=tuple(rec.blocking),
            ballot=ballot,
            one_tap=safety.one_tap_result(self, rec, now),
            shadow=self.shadow,
            l1c3_app_id=self.config.github.app_id,
        )

    def _merge(self, s: _Seen, now: datetime, report: TickReport) -> None:
        """Merge at the expected head sha: pending + "attempted" record first, outcome after."""
        rec, pr, rc = s.rec, s.pr, s.rc
        sha = pr.head_sha
        base = {"action": "merge", "pr": rec.ref, "head_sha": sha}
        rec.pending = {"op": "merge", "head_sha": sha, "at": _iso(now)}
        self.prs.save(rec)
        self.actions_log.append(
            {**base, "status": "attempted", "method": rc.merge_method, "quadrant": rec.quadrant},
            now=now,
        )
        self.log.info("merge.attempted", pr=rec.ref, head=sha[:12], method=rc.merge_method)
        self._crash("audit:merge")
        try:
            merge_sha = self.forge.merge(rec.repo, rec.number, sha, rc.merge_method)
        except HeadMoved as exc:
            self.actions_log.append(
                {**base, "status": "failed", "reason": "head_moved", "error": str(exc)[:300]},
                now=now,
            )
            self.log.warning("merge.head_moved", pr=rec.ref, head=sha[:12])
            rec.fingerprint = ""  # reclassified next tick
        except NotMergeable as exc:
            self.actions_log.append(
                {**base, "status": "failed", "reason": "not_mergeable", "error": str(exc)[:300]},
                now=now,
            )
            self.log.warning("merge.failed", pr=rec.ref, error=str(exc)[:200])
            rec.merge_blocked_head = sha
        except ForgeError as exc:
            self.actions_log.append(
                {**base, "status": "failed", "reason": type(exc).__name__, "error": str(exc)[:300]},
                now=now,
            )
            self.log.warning("merge.failed", pr=rec.ref, error=str(exc)[:200])
            if isinstance(exc, RateLimited):
                raise
        else:
            self._crash("act:merge")
            self.actions_log.append({**base, "status": "done", "merge_sha": merge_sha}, now=now)
            rec.state, rec.merge_sha = "merged", merge_sha
            report.merged.append(rec.ref)
            self.log.info("merge.done", pr=rec.ref, merge_sha=merge_sha[:12])
            self._close_issue(rec, BALLOT, f"Merged at head {sha} (merge commit {merge_sha}).", now)
        finally:
            rec.pending = None
            self.prs.save(rec)

    # ------------------------------------------------------------------ step 5
    def _step_passive_reviews(self, now: datetime, report: TickReport) -> None:
        """B/C review issues close after `passive_review_days` unless an owner commented."""
        repo = self.decision_repo
        days = self.config.passive_review_days
        if repo is None:
            return
        for rec in list(self.prs.records.values()):
            info = rec.issues.get(REVIEW)
            if not info or not info.get("open") or info.get("kept_open"):
                continue
            opened = _parse(info["opened_at"])
            if now - opened < timedelta(days=days):
                continue
            self._check_stop()
            try:
                comments = self.forge.comments(repo, int(info["number"]))
                owners = self._owners(rec.repo, [c.user for c in comments])
                owner_commented = any(
                    c.user.lower() in owners and c.user.lower() != self.bot_login.lower()
                    for c in comments
                )
                if passive_close_due(opened, now, owner_commented, days):
                    self._close_issue(rec, REVIEW, texts.passive_close_comment(days), now)
                    self.log.info("passive.closed", pr=rec.ref, issue=info["number"])
                elif owner_commented:
                    info["kept_open"] = True
                    self.actions_log.append(
                        {
                            "action": "passive_kept_open",
                            "pr": rec.ref,
                            "issue": f"{repo}#{info['number']}",
                        },
                        now=now,
                    )
                    self.log.info("passive.kept_open", pr=rec.ref, issue=info["number"])
            except RateLimited:
                raise
            except ForgeError as exc:
                self._error(report, "passive.failed", f"{rec.ref}: {exc}", pr=rec.ref)

    def _step_escalations(self, now: datetime, report: TickReport) -> None:
        """Escalation records of scope-guard / finish-task become owner issues, once each."""
        repo = self.decision_repo
        if repo is None:
            return
        for esc in list_escalations(self.state_dir):
            if esc.notified:
                continue
            try:
                issue = self.forge.ensure_issue(
                    repo,
                    {"kind": "escalation", "key": esc.id},
                    texts.escalation_title(esc.task, esc.layer or "scope guard"),
                    texts.escalation_body(esc.data),
                    [Label.SCOPE_VIOLATION.value],
                )
            except RateLimited:
                raise
            except ForgeError as exc:
                self._error(report, "escalation.failed", f"{esc.id}: {exc}")
                continue
            mark_notified(self.state_dir, esc.id, f"{repo}#{issue.number}", now)
            self.actions_log.append(
                {
                    "action": "escalation_notified",
                    "escalation": esc.id,
                    "task_id": esc.task,
                    "issue": f"{repo}#{issue.number}",
                },
                now=now,
            )
            report.issues.append(f"escalation:{repo}#{issue.number}")
            self.log.info("escalation.notified", escalation=esc.id, issue=issue.number)

    # ------------------------------------------------------------------ steps 6-7 (hooks)
    def _step_burn_in(self, seen: list[_Seen], now: datetime, report: TickReport) -> None:
        """Step 6: advance L4 burn-in clocks (rejections are read from the "rejection" records)."""
        safety.step_burn_in(self, seen, now, report)

    def _step_probes_and_breaker(self, now: datetime, report: TickReport) -> None:
        """Step 7: post-merge probes, auto-revert, branch protection drift and the breaker."""
        safety.step_probes_and_breaker(self, now, report)

    # ------------------------------------------------------------------ step 8
    def _budget(self) -> dict[str, Any]:
        try:
            return dict(self.forge.rate_budget())
        except ForgeError:
            return {}

    def _step_metrics(self, report: TickReport, before: Mapping[str, Any], now: datetime) -> None:
        after = self._budget()
        used = None
        if before.get("requests") is not None and after.get("requests") is not None:
            used = int(after["requests"]) - int(before["requests"])
        report.api_requests, report.api_remaining = used, after.get("remaining")
        open_by_q = {q.value: 0 for q in Quadrant}
        for rec in self.prs.records.values():
            if rec.state == "open" and rec.quadrant:
                open_by_q[rec.quadrant] += 1
        self.metrics.update(
            last_tick_at=_iso(now),
            last_tick_seconds=report.seconds,
            ticks=int(self.metrics.data.get("ticks", 0)) + 1,
            prs_seen=report.prs_seen,
            classified_last_tick=len(report.classified),
            merged_last_tick=len(report.merged),
            errors_last_tick=len(report.errors),
            open_by_quadrant=open_by_q,
            api_requests_used=used,
            api_remaining=after.get("remaining"),
            api_limit=after.get("limit"),
            mode=self.config.mode,
        )
        self.metrics.save()

    # ------------------------------------------------------------------ helpers
    def _load_cap(self, task_id: str) -> CapabilitySnapshot:
        """A task's capability snapshot, verified against the audit log once per tick."""
        if task_id not in self._caps:
            try:
                self._caps[task_id] = load_snapshot(self.state_dir, task_id)
            except CapabilityError as exc:
                self._caps[task_id] = exc
        found = self._caps[task_id]
        if isinstance(found, CapabilityError):
            raise found
        return found

    def _issue_url(self, number: int | None) -> str:
        """An issue's web address when the API base is github.com's, else "" (a raw ref is used)."""
        if number is None or self.config.github.base_url.rstrip("/") != "https://api.github.com":
            return ""
        return f"https://github.com/{self.decision_repo}/issues/{number}"

    def _error(self, report: TickReport, event: str, message: str, **kv: Any) -> None:
        report.errors.append(message)
        self.log.warning(event, error=message, **kv)


def _config_json(config: Config) -> Any:
    """The config as JSON-able data (the policy part of every fingerprint)."""
    data = asdict(config)
    data.pop("config_dir", None)
    data.pop("schedule", None)
    return data


def _rule_identity(rule: Any) -> list[str]:
    """A user rule's name and the hash of its source file (a changed rule reclassifies)."""
    path = getattr(rule, "path", "")
    digest = ""
    if path:
        try:
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            digest = "unreadable"
    return [str(getattr(rule, "name", rule)), digest]


def required_checks(protection: Mapping[str, Any]) -> tuple[RequiredCheck, ...]:
    """The checks a branch protection document requires, with their App pins (R7).

    `checks[]` carries {context, app_id}: a positive app_id pins the check to that GitHub App
    (only its check runs count, never a commit status); null or -1 means any source. Legacy
    `contexts` names not listed in `checks` are unpinned.
    """
    rsc = protection.get("required_status_checks") or {}
    out: dict[str, RequiredCheck] = {}
    for c in rsc.get("checks") or ():
        if not isinstance(c, Mapping) or not c.get("context"):
            continue
        app = c.get("app_id")
        pin = app if isinstance(app, int) and not isinstance(app, bool) and app > 0 else None
        req = RequiredCheck(str(c["context"]), pin)
        out[f"{req.context}\0{pin}"] = req
    named = {r.context for r in out.values()}
    for name in rsc.get("contexts") or ():
        if isinstance(name, str) and name and name not in named:
            out[f"{name}\0None"] = RequiredCheck(name)
    return tuple(out.values())

"""Steps 1-2 of a tick, reads only: poll open PRs, repo policies, fingerprints, concurrent reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime
from typing import Any

from capdaemon.config import Config, ConfigError, RepoConfig, parse_repo_policy
from capdaemon.daemon import texts
from capdaemon.daemon.botstate import PRRecord
from capdaemon.daemon.tasks import capability_state
from capdaemon.daemon.tickdata import (
    BALLOT,
    GATHER_CHUNK,
    GATHER_WORKERS,
    POLICY_FILE,
    TickReport,
    _digest,
    _Gathered,
    _iso,
    _Seen,
    _Stopped,
)
from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.labels import L1C3_CHECK_NAME
from capdaemon.forge.errors import ForgeError, RateLimited
from capdaemon.forge.types import PRSummary
from capdaemon.model import CheckRun, Quadrant
from capdaemon.state import StateError


class GatherMixin:
    """Ticker steps that read: what changed since the last tick, read concurrently."""

    # ------------------------------------------------------------------ steps 1-2
    def _step_poll_and_classify(self, now: datetime, report: TickReport) -> list[_Seen]:
        seen: list[_Seen] = []
        _ = self.bot_login  # resolve who we are once, before any gather thread starts
        for rc in self.config.repos:
            self._check_stop()
            try:
                prs = self.forge.list_open_prs(rc.name)
                policy = self.forge.policy_text(rc.name, rc.base)
            except RateLimited:
                raise
            except ForgeError as exc:
                self._error(report, "repo.poll_failed", f"{rc.name}: {exc}", repo=rc.name)
                continue
            policy_hash = _digest(self.policy_hash, policy)
            self._repo_policy[rc.name] = policy_hash
            rc = self._apply_repo_policy(rc, policy, policy_hash, now, report)
            self._forget_closed(rc, {p.number for p in prs}, now, report)
            self.safety.basebind.note_retargeted(rc.base, prs, now)  # a ballot is bound to its base
            prs = [p for p in prs if p.base_ref == rc.base]  # only PRs into the supervised base
            for start in range(0, len(prs), GATHER_CHUNK):
                chunk = prs[start : start + GATHER_CHUNK]
                self._check_stop()
                gathered = self._gather(chunk, policy_hash, now)  # reads only, concurrent
                for i, pr in enumerate(chunk, start):  # decide, record, act: one PR at a time
                    self.progress.step(rc.name, i, len(prs), report)
                    self._check_stop()
                    g = gathered.get(pr.number)
                    if g is not None and g.deferred:
                        report.backlog_left += 1
                        continue
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
                self.safety.save()  # once per chunk (see Tiers.on_classified)
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
            try:
                status = self.forge.pull_status(rec.repo, rec.number)
            except RateLimited:
                raise
            except ForgeError as exc:  # unknown state: ask again next tick, decide nothing
                self._error(report, "pr.status_failed", f"{rec.ref}: {exc}", pr=rec.ref)
                continue
            rec.state = "merged" if status.merged else "closed"
            rec.merge_sha = status.merge_sha if status.merged else None
            self.actions_log.append(
                {"action": "pr_left", "pr": rec.ref, "state": rec.state}, now=now
            )
            self._close_issue(rec, BALLOT, texts.gone_comment(rec.state), now)
            rec.updated_at = _iso(now)

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
        for n, pr in list(wanted.items()):  # known PRs always; new ones within the budget
            if pr.ref not in self.prs.records and not self.work_budget.take_new_pr():
                plans[n].deferred = True
                del wanted[n]
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
        if not self.safety.tiers.recorded(rec):
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
        if (firm or self.safety.tiers.needs_ballot(rec)) and not self._ballot_mergeable(
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
        if not self.safety.tiers.recorded(rec):
            return False  # classify again to record the head's tier (no second audit)
        if rec.quadrant == Quadrant.D.value and rec.firm_d is None:
            return False  # recorded before `firm_d` existed: classify once more to learn it
        return self._fingerprint(pr, checks, policy_hash, cap_state) == rec.fingerprint

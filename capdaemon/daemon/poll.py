"""Steps 1-2 of a tick: poll each repo's open PRs and policy, then decide, record and act per PR."""

from __future__ import annotations

from datetime import datetime

from capdaemon.config import ConfigError, RepoConfig, parse_repo_policy
from capdaemon.daemon import texts
from capdaemon.daemon.context import RepoPolicy, TickContext, TickDeps
from capdaemon.daemon.gather import gather
from capdaemon.daemon.issues import close_issue
from capdaemon.daemon.policystate import save_policies
from capdaemon.daemon.publish import process_pr
from capdaemon.daemon.tickdata import (
    BALLOT,
    GATHER_CHUNK,
    _digest,
    _iso,
    _Seen,
    _Stopped,
)
from capdaemon.filenames import REPO_POLICY_FILE
from capdaemon.forge.errors import ForgeError, RateLimited
from capdaemon.state import StateError


def poll_and_classify(deps: TickDeps, ctx: TickContext, now: datetime) -> list[_Seen]:
    """Steps 1-2 for every supervised repo; the open PRs into its base that this tick handled."""
    report = ctx.report
    seen: list[_Seen] = []
    _ = deps.bot_login  # resolve who we are once, before any gather thread starts
    for rc in deps.config.repos:
        deps.check_stop()
        try:
            prs = deps.forge.list_open_prs(rc.name)
            policy = deps.forge.policy_text(rc.name, rc.base)
        except RateLimited:
            raise
        except ForgeError as exc:
            deps.error(report, "repo.poll_failed", f"{rc.name}: {exc}", repo=rc.name)
            continue
        rc = read_repo_policy(deps, ctx, rc, policy, now)
        policy_hash = ctx.policies[rc.name].policy_hash
        forget_closed(deps, ctx, rc, {p.number for p in prs}, now)
        deps.safety.basebind.note_retargeted(rc.base, prs, now)  # a ballot is bound to its base
        prs = [p for p in prs if p.base_ref == rc.base]  # only PRs into the supervised base
        for start in range(0, len(prs), GATHER_CHUNK):
            chunk = prs[start : start + GATHER_CHUNK]
            deps.check_stop()
            gathered = gather(deps, ctx, chunk, policy_hash, now)  # reads only, concurrent
            for i, pr in enumerate(chunk, start):  # decide, record, act: one PR at a time
                ctx.progress.step(rc.name, i, len(prs), report)
                deps.check_stop()
                g = gathered.get(pr.number)
                if g is not None and g.deferred:
                    report.backlog_left += 1
                    continue
                try:
                    handled = process_pr(deps, ctx, rc, pr, policy_hash, now, report, g)
                except (RateLimited, _Stopped, StateError):
                    raise
                except ForgeError as exc:
                    deps.error(report, "pr.gather_failed", f"{pr.ref}: {exc}", pr=pr.ref)
                    continue
                except Exception as exc:  # a bug with one PR must not stall every other PR
                    deps.log.exception("pr.failed", pr=pr.ref)
                    report.errors.append(f"{pr.ref}: {type(exc).__name__}: {exc}")
                    continue
                seen.append(handled)
                deps.heartbeat()
            deps.safety.save()  # once per chunk (see Tiers.on_classified)
    report.prs_seen = len(seen)
    _save_policies(deps, ctx)
    return seen


def _save_policies(deps: TickDeps, ctx: TickContext) -> None:
    """Record each repo's policy summary for the dashboard (a corrupt file is kept, reported)."""
    supervised = tuple(rc.name for rc in deps.config.repos)
    try:
        save_policies(deps.state_dir, ctx.policies, supervised)
    except StateError as exc:  # display state only: the tick goes on, the file is left as is
        deps.error(ctx.report, "state.repo_policies_unreadable", f"{exc}; never overwritten")


def read_repo_policy(
    deps: TickDeps, ctx: TickContext, rc: RepoConfig, policy: str | None, now: datetime
) -> RepoConfig:
    """Parse the repo's base-branch .capdaemon.yml once this tick; its effective RepoConfig.

    The effective config (central config + the policy) serves the classifier, the merge gate
    (blocking labels, extra checks) and ballots (owners). A policy that does not parse is a
    repo error (logged, audited once per policy text): the repo merges nothing this tick and
    the classifier makes its PRs D.
    """
    policy_hash = _digest(deps.policy_hash, policy)
    found = ctx.policies[rc.name] = RepoPolicy(deps.config, policy_hash, base=rc.base)
    if not policy or not policy.strip():
        return rc
    source = f"{rc.name}@{rc.base}:{REPO_POLICY_FILE}"
    try:
        additions = parse_repo_policy(policy, source)
        eff = deps.config.with_repo_policy(additions, rc.name)
    except (ConfigError, ValueError) as exc:
        found.error = str(exc)
        message = f"{source}: {exc}"
        deps.error(ctx.report, "repo.policy_invalid", message, repo=rc.name)
        if deps.policy_error_audited.get(rc.name) != policy_hash:
            deps.actions_log.append(
                {"action": "repo_policy_error", "repo": rc.name, "error": message[:500]},
                now=now,
            )
            deps.policy_error_audited[rc.name] = policy_hash
        return rc
    found.effective, found.additions = eff, additions
    return eff.repo(rc.name) or rc


def forget_closed(
    deps: TickDeps, ctx: TickContext, rc: RepoConfig, open_numbers: set[int], now: datetime
) -> None:
    """Records of PRs that left the open list (merged or closed outside the daemon)."""
    for rec in list(deps.prs.records.values()):
        if rec.repo != rc.name or rec.state != "open" or rec.number in open_numbers or rec.pending:
            continue
        try:
            status = deps.forge.pull_status(rec.repo, rec.number)
        except RateLimited:
            raise
        except ForgeError as exc:  # unknown state: ask again next tick, decide nothing
            deps.error(ctx.report, "pr.status_failed", f"{rec.ref}: {exc}", pr=rec.ref)
            continue
        rec.state = "merged" if status.merged else "closed"
        rec.merge_sha = status.merge_sha if status.merged else None
        deps.actions_log.append({"action": "pr_left", "pr": rec.ref, "state": rec.state}, now=now)
        close_issue(deps, rec, BALLOT, texts.gone_comment(rec.state), now)
        rec.updated_at = _iso(now)

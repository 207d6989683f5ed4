"""Steps 1-2 of a tick: poll each repo's open PRs and policy, then decide, record and act per PR."""

from __future__ import annotations

from functools import partial

from capdaemon.config import ConfigError, RepoConfig, parse_repo_policy
from capdaemon.daemon.core.context import RepoPolicy, Tick
from capdaemon.daemon.core.failure import per_item, report_error
from capdaemon.daemon.core.handover import serve_changed
from capdaemon.daemon.core.tickdata import BALLOT, GATHER_CHUNK, _digest, _iso
from capdaemon.daemon.issues import texts
from capdaemon.daemon.issues.ensure import close_issue
from capdaemon.daemon.polling.backlog import Backlog, one_pr
from capdaemon.daemon.polling.gather import gather
from capdaemon.daemon.polling.publish import prepare_new, process_pr
from capdaemon.daemon.polling.tickpr import TickPR
from capdaemon.filenames import REPO_POLICY_FILE
from capdaemon.forge.errors import ForgeError, NotFound
from capdaemon.forge.types import PRSummary
from capdaemon.state import StateError
from capdaemon.stores.policystate import save_policies
from capdaemon.stores.prrecord import PRState


def poll_and_classify(t: Tick) -> None:
    """Steps 1-2 for every supervised repo (`t.only`: the repos a targeted tick is limited
    to); the open PRs into its base that this tick handled go to `t.ctx.seen`.

    Every repo is listed first. PRs already known are decided, recorded and acted on repo by
    repo; new ones are read and classified within the budget and, when the writes left cannot
    cover them all, published by value once every repo is polled (capdaemon.daemon.polling.backlog).
    With `only` (a targeted tick: the repos a change detector flagged), the other repos are
    neither listed nor touched: a PR is taken as closed only when its own repo's full open
    list leaves it out, and the repo policy summary is written by full ticks alone.
    """
    deps, ctx, report = t.deps, t.ctx, t.report
    seen: list[TickPR] = []
    backlog = Backlog(t)
    _ = deps.bot_login  # resolve who we are once, before any gather thread starts
    repos = [rc for rc in deps.config.repos if t.only is None or rc.name in t.only]
    try:
        listed = [got for rc in repos if (got := _list_repo(t, rc)) is not None]
        backlog.size_up(p for _, prs in listed for p in prs if p.ref not in deps.prs.records)
        seen += _decide(t, backlog, listed)
        seen += backlog.publish()
        deps.safety.save()
    finally:
        backlog.close([rc.name for rc in deps.config.repos])
    seen = [s for s in seen if s.pr.repo not in ctx.handed_off]  # served apart: newer reads
    report.prs_seen = len(seen)
    ctx.seen, ctx.polled = seen, True
    if t.only is None:
        _save_policies(t)
    if ctx.decision_writes:
        ctx.activity = None  # step 3 lists the issues again, after our writes


def _list_repo(t: Tick, rc: RepoConfig) -> tuple[RepoConfig, list[PRSummary]] | None:
    """One repo's open PRs and policy, read; its effective RepoConfig with them (None: the
    read failed, reported)."""
    deps, report = t.deps, t.report
    deps.check_stop()
    taken = _take_changed(t, rc.name)  # this list is newer than what a detector saw
    try:
        prs = deps.forge.list_open_prs(rc.name, rc.base)
        policy = deps.forge.policy_text(rc.name, rc.base)
    except NotFound as exc:  # a typo, a deleted repo, an App no longer installed
        _unknown_repo(t, rc.name, exc)
        return None
    except ForgeError as exc:
        report_error(report, "repo.poll_failed", f"{rc.name}: {exc}", repo=rc.name)
        if taken:  # served apart after steps 1-2
            t.ctx.owed.add(rc.name)
        return None
    return read_repo_policy(t, rc, policy), prs


def _decide(
    t: Tick, backlog: Backlog, listed: list[tuple[RepoConfig, list[PRSummary]]]
) -> list[TickPR]:
    """The listed repos' PRs decided, recorded and acted on, repo by repo. Between two repos
    (a full tick's safe points) a change a detector saw meanwhile in a repo already decided is
    served apart at once (capdaemon.daemon.core.handover) and its new PRs leave this tick's
    backlog; a repo not decided yet is listed again first (_fresh)."""
    seen: list[TickPR] = []
    decided: list[str] = []
    for rc, prs in listed:
        if decided and serve_changed(t, decided):
            backlog.drop(t.ctx.handed_off)
        seen += _poll_repo(t, backlog, rc, _fresh(t, rc, prs))
        decided.append(rc.name)
    return seen


def _take_changed(t: Tick, repo: str) -> bool:
    """In a full tick: take `repo` from a change detector's hand-over (True: it saw a change
    this tick has not read yet)."""
    return t.only is None and bool(t.deps.changed.take((repo,)))


def _fresh(t: Tick, rc: RepoConfig, prs: list[PRSummary]) -> list[PRSummary]:
    """A repo's open PRs as this tick listed them, or listed again when a change detector saw
    the repo change since (its PRs are then decided on what is read now, not on the older
    list). A failed read keeps the older list; the repo is then served apart after steps 1-2
    (`TickContext.hand_off`)."""
    if not _take_changed(t, rc.name):
        return prs
    try:
        fresh = t.deps.forge.list_open_prs(rc.name, rc.base)
    except ForgeError as exc:
        t.ctx.owed.add(rc.name)
        t.deps.log.warning("repo.relist_failed", repo=rc.name, error=str(exc)[:300])
        return prs
    t.deps.log.info("tick.relisted", repo=rc.name, prs=len(fresh))
    return fresh


def _unknown_repo(t: Tick, repo: str, exc: NotFound) -> None:
    """A configured repo GitHub does not show us: a config error of this tick, named; the repo
    is left out of the tick (no protection issue, not an API failure for the breaker)."""
    message = (
        f"repos: {repo}: GitHub does not show this repository ({exc}); fix the name in "
        "capdaemon.yml or the App's installation — its pull requests are not handled"
    )
    t.report.config_errors.append(message)
    t.report.unknown_repos.append(repo)
    t.deps.log.error("repo.unknown", repo=repo, error=message)


def _poll_repo(t: Tick, backlog: Backlog, rc: RepoConfig, prs: list[PRSummary]) -> list[TickPR]:
    """One repo's open PRs: known ones handled in full, new ones classified for the backlog."""
    deps, ctx, report = t.deps, t.ctx, t.report
    policy_hash = ctx.policies[rc.name].policy_hash
    forget_closed(t, rc, {p.number for p in prs})
    deps.safety.basebind.note_retargeted(rc.base, prs, t.now)  # a ballot is bound to its base
    prs = [p for p in prs if p.base_ref == rc.base]  # only PRs into the supervised base
    records = deps.prs.records
    known = [TickPR(rc, p, policy_hash, records) for p in prs if p.ref in records]
    new = [TickPR(rc, p, policy_hash, records) for p in prs if p.ref not in records]
    todo = known + backlog.to_read(rc, new)
    seen: list[TickPR] = []
    for start in range(0, len(todo), GATHER_CHUNK):
        chunk = todo[start : start + GATHER_CHUNK]
        deps.check_stop()
        gather(t, chunk)  # reads only, concurrent
        for i, item in enumerate(chunk, start):  # decide, record, act: one PR at a time
            ctx.progress.step(rc.name, i, len(todo), report)
            deps.check_stop()
            pr = item.pr
            if pr.ref not in deps.prs.records:  # new: now, or by value after every repo
                seen += backlog.offer(one_pr(t, pr, partial(prepare_new, t, item)))
                continue
            handled = one_pr(t, pr, partial(process_pr, t, item))
            if handled is not None:
                seen.append(handled)
            deps.heartbeat()
        backlog.trim()  # only what the write allowance can take stays in memory
        deps.safety.save()  # once per chunk (see Tiers.on_classified)
    return seen


def _save_policies(t: Tick) -> None:
    """Record each repo's policy summary for the dashboard (a corrupt file is kept, reported)."""
    deps, ctx = t.deps, t.ctx
    supervised = tuple(rc.name for rc in deps.config.repos)
    try:
        save_policies(deps.state_dir, ctx.policies, supervised)
    except StateError as exc:  # display state only: the tick goes on, the file is left as is
        report_error(ctx.report, "state.repo_policies_unreadable", f"{exc}; never overwritten")


def read_repo_policy(t: Tick, rc: RepoConfig, policy: str | None) -> RepoConfig:
    """Parse the repo's base-branch .capdaemon.yml once this tick; its effective RepoConfig.

    The effective config (central config + the policy) serves the classifier, the merge gate
    (blocking labels, extra checks) and ballots (owners). A policy that does not parse is a
    repo error (logged, audited once per policy text): the repo merges nothing this tick and
    the classifier makes its PRs D.
    """
    deps, ctx = t.deps, t.ctx
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
        report_error(ctx.report, "repo.policy_invalid", message, repo=rc.name)
        if deps.policy_error_audited.get(rc.name) != policy_hash:
            deps.actions_log.append(
                {"action": "repo_policy_error", "repo": rc.name, "error": message[:500]},
                now=t.now,
            )
            deps.policy_error_audited[rc.name] = policy_hash
        return rc
    found.effective, found.additions = eff, additions
    return eff.repo(rc.name) or rc


def forget_closed(t: Tick, rc: RepoConfig, open_numbers: set[int]) -> None:
    """Records of PRs that left the open list (merged or closed outside the daemon)."""
    deps, now = t.deps, t.now
    for rec in list(deps.prs.records.values()):
        if rec.repo != rc.name or rec.state != "open" or rec.number in open_numbers or rec.pending:
            continue
        with per_item(t.report, "pr.status_failed", rec.ref, pr=rec.ref) as item:
            status = deps.forge.pull_status(rec.repo, rec.number)
        if item.failed:  # unknown state: ask again next tick, decide nothing
            continue
        rec = deps.prs.change(
            rec,
            durable=False,  # kept by the tick's compaction
            state=PRState.MERGED if status.merged else PRState.CLOSED,
            merge_sha=status.merge_sha if status.merged else None,
            updated_at=_iso(now),
        )
        deps.actions_log.append({"action": "pr_left", "pr": rec.ref, "state": rec.state}, now=now)
        close_issue(t, rec, BALLOT, texts.gone_comment(rec.state))

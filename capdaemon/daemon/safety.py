"""The safety net in the tick: tiers and one-tap, burn-in, post-merge probes, breaker, protection.

Every function takes the daemon's Ticker `t` (config, state_dir, forge, prs, metrics,
actions_log) and the tick's `now`; decisions come from the pure core in capdaemon.decide,
state lives in bot-state/safety.json and breaker.json (capdaemon.daemon.safety_state).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from capdaemon.audit import log_paths, utc_iso
from capdaemon.capability.model import CapabilityError
from capdaemon.channels.config import one_tap_ttl
from capdaemon.classify.trailers import commit_agent_session
from capdaemon.daemon import probe_sources, protection_issue
from capdaemon.daemon.logtail import tripped_per_log
from capdaemon.daemon.safety_state import (
    BREAKER_FILE,
    BreakerFile,
    SafetyStore,
    breaker_update,
    new_actions,
)
from capdaemon.daemon.safety_state import read_breaker as _read_breaker
from capdaemon.decide._common import Action, ActionKind
from capdaemon.decide.ballot import BallotStatus, CommandKind, edit_reason, parse_command
from capdaemon.decide.breaker import (
    BreakerState,
    Incident,
    IncidentKind,
    incident_issue_body,
    record_incident,
    reset,
)
from capdaemon.decide.burnin import (
    BurnInState,
    BurnInStatus,
    advance,
    observe,
    record_rejection,
)
from capdaemon.decide.burnin import (
    agent_severities as _burn_in_severities,
)
from capdaemon.decide.checks import one_tap_issue_body, random_review_body
from capdaemon.decide.labels import L1C3_CHECK_NAME, Label
from capdaemon.decide.probe import (
    ProbeStatus,
    ProbeWatch,
    RevertAction,
    evaluate_probe,
    quiet_until,
    revert_decision,
    reverts_in_window,
)
from capdaemon.decide.review import passive_close_due, sampled
from capdaemon.decide.rounds import after_rejection_tier
from capdaemon.decide.tiers import (
    OneTapResult,
    OneTapState,
    Requirement,
    TierDecision,
    one_tap_state,
    tier_for,
)
from capdaemon.forge.errors import ForgeError, RateLimited, RevertConflict
from capdaemon.logging import get_logger
from capdaemon.model import PRSnapshot, Severity
from capdaemon.state import StateError, canonical_json

API_FAIL_TICKS = 3  # consecutive ticks with API errors → one incident
ONE_TAP = "one-tap"
# A ballot or one-tap whose issue activity (issue list) did not change is still read in full
# this often: the activity cannot show one reaction swapped for another of the same kind.
QUIET_REREAD = timedelta(minutes=30)
INCIDENT = "incident"

log = get_logger("capdaemon.safety")
_stores: weakref.WeakKeyDictionary[Any, SafetyStore] = weakref.WeakKeyDictionary()


def store(t: Any) -> SafetyStore:
    """The Ticker's safety.json (loaded once per Ticker)."""
    s = _stores.get(t)
    if s is None:
        s = _stores[t] = SafetyStore(t.state_dir)
    return s


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _audit(t: Any, entry: Mapping[str, Any], now: datetime) -> None:
    t.actions_log.append(dict(entry), now=now)


def _error(t: Any, report: Any, event: str, message: str, **kv: Any) -> None:
    if report is not None:
        report.errors.append(message)
    log.warning(event, error=message, **kv)


# ======================================================================= audit-log cross-checks
def _log_records(state_dir: Any) -> list[dict[str, Any]]:
    """Every complete record of actions.jsonl (for the rare cross-checks below)."""
    path = log_paths(state_dir)[1]
    out: list[dict[str, Any]] = []
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    out.append(rec)
    except FileNotFoundError:
        pass
    return out


_burn_in_checked: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _check_burn_in_against_log(t: Any, state: BurnInState) -> None:
    """Refuse clocks that contradict the audit log (a deleted, reset or tampered safety.json):
    every agent the log observed must still have a clock, every promotion must still hold,
    and no clock may start later than the log's latest reset of it."""
    seen: set[str] = set()
    promoted: set[str] = set()
    for r in _log_records(t.state_dir):
        agent = r.get("agent")
        if not isinstance(agent, str):
            continue
        if r.get("action") == "burn_in.observed":
            seen.add(agent)
        elif r.get("action") == "burn_in.promoted":
            promoted.add(agent)
    problems = [
        f"{a}: observed in the audit log but has no clock"
        for a in sorted(seen | promoted)
        if state.get(a) is None
    ]
    problems += [
        f"{a}: promoted in the audit log but not hard-blocked"
        for a in sorted(promoted)
        if (c := state.get(a)) is not None and c.status is not BurnInStatus.HARD_BLOCK
    ]
    if problems:
        raise StateError(
            "L4 burn-in clocks contradict actions.jsonl (safety.json reset or tampered?): "
            + "; ".join(problems)
            + ". Refusing to reset clocks silently: restore bot-state/safety.json."
        )


def burn_in_state(t: Any) -> BurnInState:
    """The L4 burn-in clocks (safety.json, mirrored to tick_metrics.l4_burn_in).

    Checked once per Ticker against the audit log: clocks are never silently reset."""
    raw = store(t)["burn_in"] or t.metrics.data.get("l4_burn_in") or {}
    try:
        state = BurnInState.from_json(raw)
    except ValueError as exc:
        raise StateError(f"l4_burn_in is malformed: {exc}") from exc
    if not _burn_in_checked.get(t):
        _check_burn_in_against_log(t, state)
        _burn_in_checked[t] = True
    return state


def agent_severities(t: Any) -> dict[str, Severity]:
    """Registry-check severity floors per agent id (P0 once hard-blocked), for classify()."""
    return _burn_in_severities(burn_in_state(t))


# ============================================================================ tiers
def _level(t: Any, task_id: str | None) -> int | None:
    if not task_id:
        return None
    try:
        return int(t._load_cap(task_id).capability.level)
    except (CapabilityError, AttributeError):
        return None  # the capability layer already blocks such a PR


def on_classified(t: Any, rec: Any, snap: PRSnapshot, now: datetime) -> None:
    """Record the head's tier (task level + changed files) and the agent ids of its commits.

    Not saved here (that re-serialised the whole safety.json per PR: quadratic on a first
    tick): the tick saves once per chunk and at its end. Crash-safe because a PR whose tier
    entry is missing for its head is never "settled" or "unchanged" (`tier_recorded`): the
    next tick reclassifies it (without a second classification audit) and records it again.
    """
    s = store(t)
    policy = rec.merge_policy or "auto"
    level = _level(t, rec.task_id)
    td = tier_for(
        level, snap.files, t.config.tiers, policy, secret_globs=t.config.classifier.secret_globs
    )
    size = {"files": len(snap.files), "lines": sum(f.additions + f.deletions for f in snap.files)}
    entry = {"head_sha": snap.head_sha, "level": level, **td.to_dict(), **size}
    if s["tiers"].get(rec.ref) != entry:
        s["tiers"][rec.ref] = entry
        if td.tier > 1:
            _audit(t, {"action": "tier", "pr": rec.ref, **entry}, now)
    ids: set[str] = set()
    for c in snap.commits:
        session, _why = commit_agent_session(c.message)
        if session is not None:
            ids.add(session.agent_id)
    s["agents_by_pr"][rec.ref] = sorted(ids)


def tier_recorded(t: Any, rec: Any) -> bool:
    """True when safety.json holds the tier of the PR's current head (see on_classified)."""
    entry = store(t)["tiers"].get(rec.ref)
    return (
        bool(entry)
        and entry.get("head_sha") == rec.head_sha
        and rec.ref in store(t)["agents_by_pr"]
    )


def save(t: Any) -> None:
    """Write safety.json when it changed (the tick calls this once per chunk and at its end)."""
    store(t).save()


def tier_decision(t: Any, rec: Any) -> TierDecision:
    """The PR's tier for its current head; unknown under `tiered` → tier 3 (fail closed); a PR
    an owner rejected once → at least a full ballot (capdaemon.decide.rounds)."""
    after_rejection = bool((rec.ballot_round or {}).get("after_rejection"))
    return after_rejection_tier(_tier_decision(t, rec), after_rejection)


def _tier_decision(t: Any, rec: Any) -> TierDecision:
    policy = rec.merge_policy or "auto"
    entry = store(t)["tiers"].get(rec.ref)
    if entry and entry.get("head_sha") == rec.head_sha and entry.get("merge_policy") == policy:
        return TierDecision(int(entry["tier"]), tuple(entry.get("reasons") or ()), policy)
    if policy == "tiered":
        return TierDecision(3, ("tier not computed for this head",), policy)
    return TierDecision(1, (), policy)


def _one_tap(t: Any, rec: Any) -> dict[str, Any] | None:
    entry = store(t)["one_tap"].get(rec.ref)
    return entry if entry and entry.get("head_sha") == rec.head_sha else None


def needs_ballot(t: Any, rec: Any) -> bool:
    """True when the tier asks for a full ballot: tier 3 (tiered), or a one-tap that expired."""
    req = tier_decision(t, rec).requirement
    if req is Requirement.BALLOT:
        return True
    if req is Requirement.ONE_TAP:
        entry = _one_tap(t, rec)
        return entry is not None and entry.get("state") == OneTapState.EXPIRED.value
    return False


def _ballot_approved(rec: Any) -> bool:
    b = rec.ballot or {}
    if b.get("head_sha") != rec.head_sha:
        return False
    try:
        return BallotStatus(b.get("status", "pending")).mergeable
    except ValueError:
        return False


def tier_gate(t: Any, rec: Any, snap: PRSnapshot, now: datetime, report: Any = None) -> bool:
    """For a tier-2 head: open its `decision:one-tap` issue; False until an owner's 👍 (or an
    approved ballot after expiry). Other tiers: True (ballots are the quadrant path's job)."""
    td = tier_decision(t, rec)
    if td.requirement is not Requirement.ONE_TAP:
        return True
    if _ballot_approved(rec):
        return True
    s = store(t)
    entry = _one_tap(t, rec)
    if entry is None:
        repo = t.decision_repo
        if repo is None:
            log.warning("one_tap.no_decision_repo", pr=rec.ref)
            return False
        old = s["one_tap"].get(rec.ref)
        ttl = one_tap_ttl(t.config)
        issue = t.forge.ensure_issue(
            repo,
            {"kind": ONE_TAP, "key": f"{rec.ref}@{snap.head_sha}", "pr": rec.ref},
            f"One-tap: {rec.ref} {snap.title}"[:200],
            one_tap_issue_body(rec.ref, "", snap.title, snap.head_sha, td, ttl),
            [Label.ONE_TAP.value],
        )
        opened = issue.created_at or now
        entry = {
            "head_sha": snap.head_sha,
            "issue": issue.number,
            "opened_at": utc_iso(opened),
            "state": OneTapState.PENDING.value,
            "reason": "waiting for an owner 👍",
            "by": None,
        }
        s["one_tap"][rec.ref] = entry
        s.save()
        _audit(
            t,
            {
                "action": "one_tap_opened",
                "pr": rec.ref,
                "head_sha": snap.head_sha,
                "issue": f"{repo}#{issue.number}",
                "tier": td.tier,
                "reasons": list(td.reasons),
            },
            now,
        )
        if report is not None:
            report.issues.append(f"{ONE_TAP}:{repo}#{issue.number}")
        if old and old.get("state") == OneTapState.PENDING.value and old.get("issue"):
            _close(t, int(old["issue"]), "The PR head moved: a new one-tap request replaces this.")
    return entry.get("state") == OneTapState.APPROVED.value


def one_tap_result(t: Any, rec: Any, now: datetime) -> OneTapResult | None:
    """The one-tap state of the PR's current head, for MergeFacts (None when there is none)."""
    entry = _one_tap(t, rec)
    if entry is None:
        return None
    return OneTapResult(OneTapState(entry["state"]), str(entry.get("reason", "")), entry.get("by"))


def _owners(t: Any, repo: str, users: Iterable[str]) -> set[str]:
    fn = getattr(t, "_owners", None)
    if fn is not None:
        return set(fn(repo, list(users)))
    return set(t.config.owners_for(repo))


def poll_one_taps(t: Any, seen: Sequence[Any], now: datetime, report: Any = None) -> None:
    """Read the 👍/👎 on pending one-tap issues; a decision (or expiry) republishes the PR."""
    s = store(t)
    repo = t.decision_repo
    if repo is None:
        return
    ttl = one_tap_ttl(t.config)
    activity_of = getattr(t, "issue_activity", None)
    for item in seen:
        rec = item.rec
        entry = _one_tap(t, rec)
        if rec.state != "open" or entry is None or entry["state"] != OneTapState.PENDING.value:
            continue
        # Skip the read when the issue's reaction rollup is as at the last read, that read is
        # recent (QUIET_REREAD) and the deadline has not passed (expiry needs a read).
        act = activity_of(report).get(int(entry["issue"])) if activity_of else None
        fp = _one_tap_fp(act)
        deadline = _parse(entry["opened_at"]) + ttl
        if fp and entry.get("seen_fp") == fp and now < deadline:
            try:
                if now - _parse(str(entry["seen_at"])) < QUIET_REREAD:
                    continue
            except (KeyError, ValueError):
                pass
        try:
            reactions = t.forge.reactions(repo, int(entry["issue"]))
            res = one_tap_state(
                _parse(entry["opened_at"]),
                reactions,
                _owners(t, rec.repo, [r.user for r in reactions]),
                now,
                ttl,
                pr_author=rec.author,
                bot_login=t.bot_login,
            )
        except RateLimited:
            raise
        except ForgeError as exc:
            _error(t, report, "one_tap.failed", f"{rec.ref}: {exc}", pr=rec.ref)
            continue
        if res.state is OneTapState.PENDING:
            if fp:
                entry.update(seen_fp=fp, seen_at=utc_iso(now))
            else:
                entry.pop("seen_fp", None)
            s.save()
            continue
        entry.update(state=res.state.value, reason=res.reason, by=res.approved_by)
        s.save()
        _audit(
            t,
            {
                "action": "one_tap",
                "pr": rec.ref,
                "head_sha": rec.head_sha,
                "status": res.state.value,
                "by": res.approved_by,
                "reason": res.reason,
            },
            now,
        )
        log.info("one_tap.decided", pr=rec.ref, state=res.state.value, by=res.approved_by)
        if res.state is OneTapState.EXPIRED:
            _close(t, int(entry["issue"]), f"{res.reason}.")
        rec.fingerprint = ""  # republish next tick: the check, and a ballot after expiry
        t.prs.save(rec)


def _one_tap_fp(act: Any) -> str | None:
    """A one-tap issue's reaction rollup as the issue list shows it (None: unknown → read)."""
    if act is None or act.reactions is None or act.state != "open":
        return None
    return canonical_json([act.number, [list(p) for p in act.reactions]])


def _close(t: Any, number: int, comment: str) -> None:
    try:
        t.forge.close_issue(t.decision_repo, number, comment)
    except RateLimited:
        raise
    except ForgeError as exc:
        log.warning("issue.close_failed", issue=number, error=str(exc)[:200])


# ============================================================================ step 6: burn-in
def step_burn_in(t: Any, seen: Sequence[Any], now: datetime, report: Any = None) -> None:
    """Observe the open PRs' agent ids, reset clocks on rejections, promote after the burn-in."""
    s = store(t)
    state = burn_in_state(t)
    actions: list[Action] = []
    ids = {a for item in seen for a in s["agents_by_pr"].get(item.rec.ref, ())}
    state, acts = observe(state, ids, now)
    actions += acts
    records, cursor = new_actions(t.state_dir, s["burn_in_cursor"])
    for r in records:
        if r.get("action") != "rejection":
            continue
        for agent in s["agents_by_pr"].get(str(r.get("pr")), ()):
            state, acts = record_rejection(state, agent, now)
            actions += [_with(a, pr=r.get("pr")) for a in acts]
    before = {a.agent_id for a in state.agents if a.status.value == "hard_block"}
    state, acts = advance(state, now, t.config.burn_in_days)
    actions += acts
    promoted = {a.agent_id for a in state.agents if a.status.value == "hard_block"} - before
    for a in actions:
        _audit(t, a.payload, now)
    if promoted:  # reclassify open PRs of a promoted agent (their registry check is now P0)
        for rec in t.prs.records.values():
            if rec.state == "open" and promoted & set(s["agents_by_pr"].get(rec.ref, ())):
                rec.fingerprint = ""
                t.prs.save(rec)
    s["burn_in"] = state.to_json()
    s["burn_in_cursor"] = cursor
    s.save()
    t.metrics.update(l4_burn_in=state.to_json())


def _with(action: Action, **extra: Any) -> Action:
    return Action(action.kind, {**action.payload, **extra})


# ============================================================================ breaker
def _tripped_per_log(state_dir: Any) -> bool:
    """True when actions.jsonl's newest breaker.tripped is later than its newest breaker.reset
    (read incrementally: only the log's new tail, see capdaemon.daemon.logtail)."""
    return tripped_per_log(state_dir)


def breaker_state(t: Any) -> BreakerState:
    """The breaker as breaker.json says now (the CLI may have reset it).

    A missing breaker.json while the audit log says the breaker is tripped (no reset since)
    is refused: deleting the file must not close the breaker."""
    bf = _read_breaker(t.state_dir)
    missing = not (Path(t.state_dir) / BREAKER_FILE).exists()
    if not bf.state.tripped and missing and _tripped_per_log(t.state_dir):
        raise StateError(
            f"{Path(t.state_dir) / BREAKER_FILE} is missing but actions.jsonl says the breaker "
            "is tripped and was never reset: restore the file (never closed silently)"
        )
    return bf.state


def _apply(t: Any, bf: BreakerFile, actions: Sequence[Action], now: datetime, **where: Any) -> None:
    """Do what decide asked: audit first, then the incident issue writes."""
    repo = t.decision_repo
    for a in actions:
        p = dict(a.payload)
        if a.kind is ActionKind.AUDIT:
            _audit(t, {**p, **where.get("audit", {})}, now)
    for a in actions:
        p = dict(a.payload)
        try:
            if a.kind is ActionKind.OPEN_INCIDENT_ISSUE and repo:
                issue = t.forge.ensure_issue(
                    repo, {"kind": INCIDENT, "key": p["key"]}, p["title"], p["body"], p["labels"]
                )
                bf.incident_issue = {"key": p["key"], "number": issue.number, "open": True}
                log.info("breaker.issue_opened", issue=issue.number)
            elif a.kind is ActionKind.UPDATE_INCIDENT_ISSUE and repo and bf.incident_issue:
                t.forge.comment_once(
                    repo,
                    int(bf.incident_issue["number"]),
                    {"kind": "incident-update", "key": f"{p['key']}:{utc_iso(now)}"},
                    p["comment"],
                )
            elif a.kind is ActionKind.CLOSE_INCIDENT_ISSUE:
                issue = bf.incident_issue
                if repo and issue and issue.get("key") == p["key"]:
                    t.forge.close_issue(repo, int(issue["number"]), p["comment"])
                    issue["open"] = False
            elif a.kind is ActionKind.REPLY and repo and "reply_to" in where:
                number, comment_id = where["reply_to"]
                t.forge.comment_once(
                    repo, number, {"kind": "reply", "key": f"comment:{comment_id}"}, p["body"]
                )
        except RateLimited:
            raise
        except ForgeError as exc:  # the state is recorded; the issue is retried next tick
            log.warning("breaker.issue_failed", action=a.kind.value, error=str(exc)[:200])


def record(t: Any, incident: Incident, now: datetime) -> BreakerState:
    """Count one incident in the breaker (audit, trip, incident issue); the new state."""
    with breaker_update(t.state_dir) as bf:
        bf.state, actions = record_incident(bf.state, incident, now, t.config.breaker)
        _apply(t, bf, actions, now)
        return bf.state


def _breaker_issue(t: Any, now: datetime, report: Any) -> None:
    """Keep the incident issue in line with the state: open one for a trip, poll `/breaker reset`,
    close what a CLI reset left to close."""
    repo = t.decision_repo
    if repo is None:
        return
    s = store(t)
    with breaker_update(t.state_dir) as bf:
        for item in list(bf.to_close):
            issue = bf.incident_issue
            if issue and issue.get("key") == item.get("key") and issue.get("open"):
                t.forge.close_issue(repo, int(issue["number"]), str(item.get("comment", "")))
                issue["open"] = False
            bf.to_close.remove(item)
        state = bf.state
        if not state.tripped:
            return
        key = state.incident_key
        issue = bf.incident_issue
        if not issue or issue.get("key") != key:
            cfg = t.config.breaker
            opened = t.forge.ensure_issue(
                repo,
                {"kind": INCIDENT, "key": key},
                f"Circuit breaker tripped: {len(state.incidents)} incidents "
                f"in {cfg.window_hours:g} h",
                incident_issue_body(state, now, cfg),
                [Label.INCIDENT.value],
            )
            issue = bf.incident_issue = {"key": key, "number": opened.number, "open": True}
        number = int(issue["number"])
        handled = set(s["breaker_comments"])
        owners = {o.lower() for o in t.config.owners}
        for c in t.forge.comments(repo, number):
            if c.id in handled:
                continue
            handled.add(c.id)
            if c.user.lower() == t.bot_login.lower():
                continue
            cmd = parse_command(c.body)
            if cmd is None:
                continue
            base = {"issue": f"{repo}#{number}", "user": c.user, "comment_id": c.id}
            edited = edit_reason(c.edited)
            if edited:
                _audit(
                    t,
                    {
                        "action": "command_ignored",
                        **base,
                        "command": cmd.line,
                        "reason": edited,
                    },
                    now,
                )
                continue
            if cmd.kind is not CommandKind.BREAKER_RESET:
                _audit(
                    t,
                    {
                        "action": "command_ignored",
                        **base,
                        "command": cmd.line,
                        "reason": "only /breaker reset counts on the incident issue",
                    },
                    now,
                )
                continue
            bf.state, actions = reset(bf.state, c.user, owners, now)
            _apply(
                t,
                bf,
                actions,
                now,
                audit={"via": "comment", **base},
                reply_to=(number, c.id),
            )
            if not bf.state.tripped:
                break
        s["breaker_comments"] = sorted(handled)
        s.save()


# ============================================================================ step 7
def _parents(t: Any, repo: str, sha: str, merge_method: str) -> int:
    """How many parents the merge commit has (read from GitHub; the method is not trusted)."""
    return max(1, len(t.forge.commit_parents(repo, sha)))


def _watch_merges(t: Any, records: Sequence[Mapping[str, Any]], now: datetime, report: Any) -> None:
    """New merges capdaemon made → probe watches and the random-review sample."""
    s = store(t)
    watched = {w["merge_sha"] for w in s["watches"]} | set(s["probed"])
    for r in records:
        if r.get("action") != "merge" or r.get("status") != "done" or not r.get("merge_sha"):
            continue
        ref, sha = str(r.get("pr", "")), str(r["merge_sha"])
        repo, _, num = ref.rpartition("#")
        rc = t.config.repo(repo)
        if rc is None or not num.isdigit():
            continue
        rec = t.prs.get(repo, int(num))
        if sha not in watched:
            try:
                parents = _parents(t, repo, sha, rc.merge_method)
            except RateLimited:
                raise
            except ForgeError as exc:
                _error(t, report, "probe.parents_failed", f"{ref}: {exc}", pr=ref)
                parents = 2  # unknown: never auto-revert it
            merged_at = _parse(str(r.get("ts"))) if r.get("ts") else now
            revertible = _own_merge(t, repo, int(num), r, sha, report)
            watch = ProbeWatch(repo, int(num), sha, parents, merged_at, rc.base, revertible)
            s["watches"].append(watch.to_json())
            watched.add(sha)
            _audit(
                t,
                {
                    "action": "probe.watch",
                    "pr": ref,
                    "merge_sha": sha,
                    "parents": parents,
                    "revertible": revertible,
                    "window_minutes": t.config.post_merge.window_minutes,
                },
                now,
            )
        head = str(r.get("head_sha") or (rec.head_sha if rec else ""))
        if rec is not None and head:
            _random_review(t, rec, head, now, report)
    s.save()


def _own_merge(t: Any, repo: str, number: int, r: Mapping[str, Any], sha: str, report: Any) -> bool:
    """True when merge record `r` is verifiably capdaemon's own merge of the head it decided.

    A merge the bot made itself carries the merge sha GitHub answered. A *reconciled* one
    (a crash between the merge call and its record) only says the PR is merged now: a human
    may have merged another head. It stays revertible only when GitHub's merged head is the
    head the bot attempted; otherwise (or unknown) the probe reports, never auto-reverts."""
    if not r.get("reconciled"):
        return True
    try:
        status = t.forge.pull_status(repo, number)
    except RateLimited:
        raise
    except ForgeError as exc:
        _error(t, report, "probe.status_failed", f"{repo}#{number}: {exc}", pr=f"{repo}#{number}")
        return False
    return bool(status.merged and status.merge_sha == sha and status.head_sha == r.get("head_sha"))


def _revert_times(t: Any, now: datetime) -> list[datetime]:
    """When reverts were opened: safety.json plus actions.jsonl (attempted ones count too), so
    a lost or reset safety.json (or a crash mid-revert) never re-opens the daily cap."""
    times = {(str(r.get("merge_sha")), r["at"]) for r in store(t)["reverts"] if r.get("at")}
    out = [_parse(at) for _sha, at in times]
    seen = {sha for sha, _at in times}
    for r in _log_records(t.state_dir):
        if r.get("action") != "revert" or r.get("status") not in ("attempted", "done"):
            continue
        sha = str(r.get("merge_sha"))
        if sha in seen or not r.get("ts"):
            continue
        seen.add(sha)
        try:
            out.append(_parse(str(r["ts"])))
        except ValueError:
            out.append(now)  # unreadable time: count it (fail closed)
    return out


def _random_review(t: Any, rec: Any, head: str, now: datetime, report: Any) -> None:
    """A deterministic share of auto-merged PRs (no owner approval needed) get a review issue."""
    s = store(t)
    key = f"{rec.ref}@{head}"
    if key in s["reviewed"] or rec.quadrant not in ("A", "B", "C") or _ballot_approved(rec):
        return
    share = t.config.random_review_share
    if not sampled(rec.repo, rec.number, head, share) or t.decision_repo is None:
        s["reviewed"][key] = {"sampled": False}
        return
    issue = t.forge.ensure_issue(
        t.decision_repo,
        {"kind": "random-review", "key": key, "pr": rec.ref},
        f"Random review: {rec.ref} {rec.title}"[:200],
        random_review_body(rec.ref, "", rec.title, head, share, t.config.passive_review_days),
        [Label.RANDOM_REVIEW.value],
    )
    s["reviewed"][key] = {
        "sampled": True,
        "number": issue.number,
        "opened_at": utc_iso(issue.created_at or now),
        "open": True,
    }
    _audit(
        t,
        {
            "action": "random_review",
            "pr": rec.ref,
            "head_sha": head,
            "issue": f"{t.decision_repo}#{issue.number}",
        },
        now,
    )
    if report is not None:
        report.issues.append(f"random-review:{t.decision_repo}#{issue.number}")


def _close_random_reviews(t: Any, now: datetime, report: Any) -> None:
    """Random-review issues are passive: closed after `passive_review_days` unless owned."""
    s = store(t)
    repo, days = t.decision_repo, t.config.passive_review_days
    for key, info in s["reviewed"].items():
        if not info.get("open") or repo is None:
            continue
        opened = _parse(info["opened_at"])
        if now - opened < timedelta(days=days):
            continue
        comments = t.forge.comments(repo, int(info["number"]))
        pr_repo = key.split("#", 1)[0]
        owners = _owners(t, pr_repo, [c.user for c in comments])
        commented = any(c.user.lower() in owners for c in comments)
        if passive_close_due(opened, now, commented, days):
            t.forge.close_issue(repo, int(info["number"]), f"No owner comment in {days:g} days.")
            info["open"] = False
            _audit(
                t,
                {
                    "action": "issue_closed",
                    "kind": "random-review",
                    "issue": f"{repo}#{info['number']}",
                },
                now,
            )
        elif commented:
            info["open"] = False  # an owner took it over: never auto-closed
    s.save()


def _quiet(raw: Mapping[str, Any], now: datetime) -> bool:
    """True while a watch's checks were all complete and its window has not ended."""
    until = raw.get("quiet_until")
    if not isinstance(until, str):
        return False
    try:
        return now < datetime.fromisoformat(until)
    except (ValueError, TypeError):
        return False  # unreadable: read the commit (never skip on a guess)


def _probe(t: Any, now: datetime, report: Any) -> None:
    """Judge each watched merge commit; a failure is an incident (maybe with a revert PR)."""
    s = store(t)
    cfg = t.config.post_merge
    keep: list[dict[str, Any]] = []
    for raw in s["watches"]:
        watch = ProbeWatch.from_json(raw)
        if _quiet(raw, now):  # all checks done and green: next read at the window's end
            keep.append(raw)
            continue
        try:
            checks = t.forge.commit_checks(watch.repo, watch.merge_sha, status_history=True)
            trusted, untrusted = probe_sources.split_checks(t, watch, checks)
        except RateLimited:
            raise
        except ForgeError as exc:
            _error(t, report, "probe.failed", f"{watch.ref}: {exc}", pr=watch.ref)
            keep.append(raw)
            continue
        note = probe_sources.untrusted_note(t, raw, watch, untrusted, now)
        res = evaluate_probe(watch, trusted, now, cfg)
        if res.status is ProbeStatus.PENDING:
            until = quiet_until(watch, checks, res, cfg)
            raw = {k: v for k, v in raw.items() if k != "quiet_until"}
            keep.append({**raw, "quiet_until": utc_iso(until)} if until else raw)
            continue
        if res.status is ProbeStatus.HEALTHY:
            _audit(
                t,
                {
                    "action": "probe.healthy",
                    "pr": watch.ref,
                    "merge_sha": watch.merge_sha,
                    "reason": res.reason,
                },
                now,
            )
            s["probed"][watch.merge_sha] = {"status": "healthy", "at": utc_iso(now)}
            continue
        if not _probe_failed(t, watch, res.reason + note, list(res.failed_checks), now, report):
            keep.append(raw)  # a transient error opening the revert: retried next tick
    s["watches"] = keep
    s.save()


def _probe_failed(
    t: Any,
    watch: ProbeWatch,
    why: str,
    failed: list[str],
    now: datetime,
    report: Any,
    kind: IncidentKind | None = None,
) -> bool:
    """Incident for a failed probe (or `kind`); a revert PR when allowed. False to retry."""
    s = store(t)
    cfg = t.config.post_merge
    decision = revert_decision(
        watch,
        True,
        auto_revert_pr=cfg.auto_revert_pr and not getattr(t, "shadow", False),
        reverts_today=reverts_in_window(_revert_times(t, now), now),
        cap=cfg.revert_daily_cap,
        applies_cleanly=True,
    )
    action, reason, revert_pr = decision.action, decision.reason, None
    base = {"pr": watch.ref, "merge_sha": watch.merge_sha}
    if action is RevertAction.OPEN_REVERT:
        _audit(t, {"action": "revert", "status": "attempted", **base}, now)
        rec = t.prs.get(watch.repo, watch.pr)
        title = rec.title if rec else ""
        try:
            revert_pr, revert_sha = t.forge.open_revert_pr(
                watch.repo,
                watch.merge_sha,
                watch.base,
                title=f"Revert {watch.ref}: {title}"[:200],
                body=(
                    f"capdaemon reverts {watch.ref} (merge commit {watch.merge_sha}): the "
                    f"post-merge probe failed ({why}). Labelled `decision:auto-revert` by the bot."
                ),
                label=Label.AUTO_REVERT.value,
            )
        except RevertConflict as exc:
            action, reason = RevertAction.INCIDENT_ONLY, f"revert does not apply cleanly: {exc}"
            _audit(t, {"action": "revert", "status": "conflict", **base, "reason": str(exc)}, now)
        except RateLimited:
            raise
        except ForgeError as exc:
            _audit(
                t, {"action": "revert", "status": "failed", **base, "error": str(exc)[:300]}, now
            )
            _error(t, report, "revert.failed", f"{watch.ref}: {exc}", pr=watch.ref)
            return False
        else:
            s["reverts"].append(
                {"at": utc_iso(now), **base, "revert_pr": revert_pr, "revert_sha": revert_sha}
            )
            s["reverts"] = s["reverts"][-100:]
            _audit(t, {"action": "revert", "status": "done", **base, "revert_pr": revert_pr}, now)
    s["probed"][watch.merge_sha] = {
        "status": "failed",
        "at": utc_iso(now),
        "action": action.value,
        "revert_pr": revert_pr,
    }
    s.save()
    detail = f"{why}; {reason}" + (f"; revert PR #{revert_pr}" if revert_pr else "")
    _audit(
        t,
        {
            "action": "probe.failed",
            **base,
            "failed_checks": failed,
            "revert": action.value,
            "reason": detail,
        },
        now,
    )
    if t.decision_repo:
        try:
            issue = t.forge.ensure_issue(
                t.decision_repo,
                {"kind": INCIDENT, "key": f"probe-{watch.merge_sha}", "pr": watch.ref},
                f"Post-merge probe failed: {watch.ref}"[:200],
                _probe_issue_body(watch, why, reason, revert_pr),
                [Label.INCIDENT.value],
            )
            if report is not None:
                report.issues.append(f"incident:{t.decision_repo}#{issue.number}")
        except RateLimited:
            raise
        except ForgeError as exc:
            _error(t, report, "incident.failed", f"{watch.ref}: {exc}", pr=watch.ref)
    kind = kind or (IncidentKind.REVERT if revert_pr else IncidentKind.PROBE_FAILED)
    record(t, Incident(now, kind, detail[:300], watch.ref), now)
    log.warning("probe.failed", pr=watch.ref, merge_sha=watch.merge_sha[:12], revert=action.value)
    return True


def _probe_issue_body(watch: ProbeWatch, why: str, reason: str, revert_pr: int | None) -> str:
    from capdaemon.decide._text import md, short_sha

    revert = (
        f"A revert PR was opened: {watch.repo}#{revert_pr} (label `decision:auto-revert`)."
        if revert_pr
        else f"No revert PR: {md(reason)}. A human decides."
    )
    return (
        f"## Post-merge probe failed: {watch.ref}\n\n"
        f"The merge commit {short_sha(watch.merge_sha)} on `{md(watch.base)}` failed its checks "
        f"within the probe window: {md(why)}.\n\n{revert}\n\n"
        "This counts as one incident for the circuit breaker.\n"
    )


def protection_problems(prot: Mapping[str, Any] | None, app_id: int | None) -> list[str]:
    """Why a branch protection document falls short of SPEC 6.5 (empty: it is as required)."""
    if prot is None:
        return ["the branch is not protected"]
    problems = []
    rsc = prot.get("required_status_checks") or {}
    checks = rsc.get("checks") or [{"context": c} for c in rsc.get("contexts") or ()]
    mine = [c for c in checks if c.get("context") == L1C3_CHECK_NAME]
    if not mine:
        problems.append(f"{L1C3_CHECK_NAME} is not a required check")
    elif app_id is not None and not any(c.get("app_id") == app_id for c in mine):
        problems.append(f"{L1C3_CHECK_NAME} is not pinned to App {app_id}")
    force = prot.get("allow_force_pushes")
    if bool(force.get("enabled")) if isinstance(force, dict) else bool(force):
        problems.append("force pushes are allowed")
    if prot.get("required_pull_request_reviews") is None:
        problems.append("pull requests are not required")
    return problems


def _protection(t: Any, now: datetime, report: Any) -> None:
    """Drift from the SPEC 6.5 protection is an incident, once per drift (not every tick)."""
    s = store(t)
    app_id = t.config.github.app_id
    for rc in t.config.repos:
        try:
            prot = t.forge.effective_protection(rc.name, rc.base)
        except RateLimited:
            raise
        except ForgeError as exc:
            _error(t, report, "protection.read_failed", f"{rc.name}: {exc}", repo=rc.name)
            continue
        problems = protection_problems(prot, app_id)
        entry = s["protection"].setdefault(rc.name, {"seen_ok": False, "drift": None})
        protection_issue.sync(t, rc.name, rc.base, problems, entry, now, report)
        where = f"{rc.name}:{rc.base}"
        if not problems:
            if entry.get("drift"):
                _audit(t, {"action": "protection.restored", "repo": where}, now)
            entry.update(seen_ok=True, drift=None, missing=None)
            continue
        sig = "; ".join(problems)
        if not entry.get("seen_ok"):
            if entry.get("missing") != sig:  # never protected: say so once, not an incident
                entry["missing"] = sig
                _audit(
                    t,
                    {
                        "action": "protection.missing",
                        "repo": where,
                        "problems": problems,
                        "hint": "run: " + protection_issue.protect_command(rc.name, rc.base),
                    },
                    now,
                )
                log.warning("protection.missing", repo=where, problems=problems)
            continue
        if entry.get("drift") == sig:
            continue
        entry["drift"] = sig
        s.save()
        _audit(t, {"action": "protection.drift", "repo": where, "problems": problems}, now)
        log.warning("protection.drift", repo=where, problems=problems)
        record(t, Incident(now, IncidentKind.PROTECTION_DRIFT, sig[:300], where), now)
    s.save()


def _api_failures(t: Any, now: datetime, report: Any) -> None:
    s = store(t)
    failing = bool(report is not None and report.errors)
    s["api_fail_streak"] = s["api_fail_streak"] + 1 if failing else 0
    s.save()
    if s["api_fail_streak"] == API_FAIL_TICKS:
        detail = f"{API_FAIL_TICKS} ticks in a row with errors; last: {report.errors[-1]}"
        record(t, Incident(now, IncidentKind.API_FAILURES, detail[:300]), now)


def step_probes_and_breaker(t: Any, now: datetime, report: Any = None) -> None:
    """Step 7: new merges → probes (+ revert, incident), protection drift, API-failure streaks,
    the incident issue and `/breaker reset` comments, random reviews."""
    s = store(t)
    records, cursor = new_actions(t.state_dir, s["cursor"])
    for part in (
        lambda: _watch_merges(t, records, now, report),
        lambda: _probe(t, now, report),
        lambda: _protection(t, now, report),
        lambda: _close_random_reviews(t, now, report),
        lambda: _breaker_issue(t, now, report),
    ):
        try:
            part()
        except RateLimited:
            raise
        except ForgeError as exc:
            _error(t, report, "safety.failed", f"safety step: {exc}")
    s["cursor"] = cursor
    s.save()
    _api_failures(t, now, report)


def owners_reset(
    state_dir: Any, actor: str, owners: Iterable[str], now: datetime, actions_log: Any
) -> tuple[bool, str]:
    """The CLI reset: (done, message). The daemon closes the incident issue on its next tick."""
    with breaker_update(state_dir) as bf:
        bf.state, actions = reset(bf.state, actor, owners, now)
        message = ""
        for a in actions:
            p = dict(a.payload)
            if a.kind is ActionKind.AUDIT:
                actions_log.append({**p, "via": "cli"}, now=now)
                message = message or str(p.get("reason", ""))
            elif a.kind is ActionKind.REPLY:
                return False, str(p["body"])
            elif a.kind is ActionKind.CLOSE_INCIDENT_ISSUE:
                bf.to_close.append({"key": p["key"], "comment": p["comment"]})
        if any(a.payload.get("action") == "breaker.reset" for a in actions):
            return True, f"breaker reset by {actor}"
        return True, message or "breaker is not tripped"


# ============================================================================ the bot's reverts
def bot_revert_head(t: Any, repo: str, number: int) -> str | None:
    """The revert commit sha the bot opened revert PR `repo#number` with (None: not ours).

    Its own `decision:auto-revert` label is trusted at exactly that head even though the
    label was already there when the daemon first saw the head (see publish._label_floor)."""
    for r in reversed(store(t)["reverts"]):
        pr = str(r.get("pr", ""))
        if r.get("revert_pr") == number and pr.rpartition("#")[0].lower() == repo.lower():
            sha = r.get("revert_sha")
            return str(sha) if sha else None
    return None

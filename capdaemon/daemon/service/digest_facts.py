"""The daily digest's facts (SPEC 7), gathered from the logs and state files of bot-state."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.anchors import Anchor, head_anchor
from capdaemon.audit import log_paths, read_records
from capdaemon.config import Config
from capdaemon.daemon.issues.protection_issue import protect_command, unprotected
from capdaemon.daemon.issues.texts import issue_web_url
from capdaemon.daemon.safety.probe_sources import UNTRUSTED_ACTION
from capdaemon.daemon.service.gapwatch import GAP_ACTION
from capdaemon.decide.ballot import BallotStatus
from capdaemon.decide.burnin import BurnInState, burn_in_raw
from capdaemon.decide.digest import (
    DigestBallot,
    DigestFacts,
    DigestItem,
    DigestMerge,
    RateUse,
    digest_period,
)
from capdaemon.decide.reaction import SAMPLES_KEY, ReactionStats, parse_samples, period_stats
from capdaemon.decide.targeted import TARGETED_KEY, TargetedCounts, targeted_for
from capdaemon.filenames import METRICS_FILE, SAFETY_FILE
from capdaemon.forge.appclock import DRIFT_REPORT_SECONDS, describe_offset
from capdaemon.model import Quadrant
from capdaemon.state import read_json
from capdaemon.stores.botstate import BALLOT_KIND
from capdaemon.stores.prfile import pr_records
from capdaemon.stores.prrecord import PRRecord, PRState
from capdaemon.stores.safety_state import read_breaker
from capdaemon.timefmt import parse_utc

if TYPE_CHECKING:
    pass


def _in(rec: Mapping[str, Any], start: datetime, end: datetime) -> bool:
    ts = rec.get("ts")
    if not isinstance(ts, str):
        return False
    try:
        return start <= parse_utc(ts, "ts") < end
    except ValueError:
        return False


def _records(path: Path, start: datetime, end: datetime) -> Iterator[dict[str, Any]]:
    return (rec for rec in read_records(path) if _in(rec, start, end))


def gather(config: Config, state_dir: Path, day: date, now: datetime) -> DigestFacts:
    """Everything the digest of local date `day` says, from the logs and state files."""
    state_dir = Path(state_dir)
    tz = config.schedule.timezone
    start, end = digest_period(day, config.schedule.digest_time, tz)
    classifier_log, actions_log = log_paths(state_dir)
    prs = pr_records(state_dir)
    metrics = read_json(state_dir / METRICS_FILE, None) or {}
    safety = read_json(state_dir / SAFETY_FILE, None) or {}
    counts, attention = _classified(classifier_log, start, end)
    acts = _Actions(attention=attention)
    for rec in _once_each_violation(_records(actions_log, start, end)):
        acts.note(rec, prs)
    attention.extend(_unprotected(config, safety))
    errors = acts.errors
    burn_in = _burn_in(safety, metrics, errors)
    if metrics.get("errors_last_tick"):
        errors.append(f"last tick reported {metrics['errors_last_tick']} error(s)")
    anchors, notes = audit_anchors(state_dir, errors)
    reactions = _reactions(metrics, start, end, errors)
    targeted = _targeted(metrics, start, end, errors)
    return DigestFacts(
        date=day,
        timezone=tz,
        period=(start, end),
        quadrant_counts=counts,
        merges=tuple(acts.merges),
        would_merges=tuple(acts.shadow_only()),
        pending_ballots=_pending(config, prs, safety),
        auto_closed=tuple(acts.auto_closed),
        scope_violations=tuple(acts.scope),
        escalations=tuple(acts.escalations),
        attention=once_each(attention),
        breaker=read_breaker(state_dir).state,
        burn_in=burn_in,
        burn_in_days=config.burn_in_days,
        errors=tuple(errors),
        rate_limit=_rate(metrics),
        shadow=config.mode == "shadow",
        audit_anchors=anchors,
        audit_notes=notes,
        clock_drift=_clock_drift(metrics),
        reactions=reactions,
        targeted=targeted,
    )


def _reactions(
    metrics: Mapping[str, Any], start: datetime, end: datetime, errors: list[str]
) -> tuple[ReactionStats, ...]:
    """Reaction times per kind over the period, from tick_metrics.json (malformed: an error)."""
    try:
        samples = parse_samples(metrics.get(SAMPLES_KEY))
    except ValueError as exc:
        errors.append(f"{METRICS_FILE}: {exc}")
        return ()
    return period_stats(samples, start, end)


def _targeted(
    metrics: Mapping[str, Any], start: datetime, end: datetime, errors: list[str]
) -> TargetedCounts | None:
    """The targeted ticks of the period (None: none ever recorded, or malformed: an error)."""
    try:
        return targeted_for(metrics.get(TARGETED_KEY), start, end)
    except ValueError as exc:
        errors.append(f"{METRICS_FILE}: {exc}")
        return None


def _clock_drift(metrics: Mapping[str, Any]) -> str | None:
    """The last tick's clock offset against GitHub, when it is worth an owner's attention."""
    offset = metrics.get("clock_offset_seconds")
    if not isinstance(offset, int) or abs(offset) < DRIFT_REPORT_SECONDS:
        return None
    return (
        f"At the last tick {describe_offset(offset)}: enable time sync on the host "
        "(timedatectl set-ntp true); ballot deadlines and audit times follow this clock"
    )


def _classified(
    path: Path, start: datetime, end: datetime
) -> tuple[dict[Quadrant, int], list[DigestItem]]:
    """Quadrant counts (one per PR head) and the P1 findings of the period's classifications."""
    counts = dict.fromkeys(Quadrant, 0)
    seen: set[tuple[str, str]] = set()
    attention: list[DigestItem] = []
    for rec in _records(path, start, end):
        key = (str(rec.get("pr")), str(rec.get("head_sha")))
        if key in seen:
            continue
        seen.add(key)
        try:
            counts[Quadrant(str(rec.get("quadrant")))] += 1
        except ValueError:
            continue
        for f in rec.get("findings") or ():
            if isinstance(f, Mapping) and f.get("severity") == "P1":
                attention.append(DigestItem(str(rec.get("pr")), str(f.get("message", ""))))
    return counts, attention


def _once_each_violation(records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The records without repeats of a scope violation: a PR re-classified at the same head
    (a check run or a label changed) records the same violation again; it is listed once."""
    seen: set[str] = set()
    for rec in records:
        if rec.get("action") == "scope_violation":
            key = json.dumps(
                [rec.get(k) for k in ("pr", "head_sha", "task_id", "escalation", "violations")],
                sort_keys=True,
                default=str,
            )
            if key in seen:
                continue
            seen.add(key)
        yield rec


def _scope_item(rec: Mapping[str, Any], ref: str) -> DigestItem:
    """A scope violation's digest line: the PR when there is one, else where it was caught
    (scope-guard, finish-task) and its escalation record."""
    n = len(rec.get("violations") or ())
    detail = f"task {rec.get('task_id')}: {n} violation(s)"
    if ref:
        return DigestItem(ref, detail)
    where = f" caught by {rec['layer']}" if rec.get("layer") else ""
    esc = f" (escalation {rec['escalation']})" if rec.get("escalation") else ""
    return DigestItem("", f"{detail}{where}{esc}")


@dataclasses.dataclass
class _Actions:
    """What the period's actions-log records add to the digest, in log order."""

    attention: list[DigestItem]
    merges: list[DigestMerge] = dataclasses.field(default_factory=list)
    would_merges: dict[str, DigestMerge] = dataclasses.field(default_factory=dict)  # by PR
    auto_closed: list[DigestItem] = dataclasses.field(default_factory=list)
    scope: list[DigestItem] = dataclasses.field(default_factory=list)
    escalations: list[DigestItem] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    quadrant_of: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)

    def note(self, rec: Mapping[str, Any], prs: Mapping[str, PRRecord]) -> None:
        """Take one record into account."""
        action, ref = rec.get("action"), str(rec.get("pr", ""))
        status = rec.get("status")
        if action == "merge" and status == "attempted":
            self.quadrant_of[(ref, str(rec.get("head_sha")))] = str(rec.get("quadrant", ""))
        elif action == "merge" and status == "done":
            self.merges.append(self._merge(rec, ref, prs.get(ref)))
        elif action == "merge" and status == "would_merge":  # shadow mode: not a merge
            self.would_merges.pop(ref, None)  # its newest head's, once per PR
            self.would_merges[ref] = self._merge(rec, ref, prs.get(ref))
        elif action == "issue_closed" and rec.get("kind") in ("review", "random-review"):
            self.auto_closed.append(
                DigestItem(ref or str(rec.get("issue")), str(rec.get("issue", "")))
            )
        elif action == "scope_violation":
            self.scope.append(_scope_item(rec, ref))
        elif action == "escalation_notified":
            self.escalations.append(
                DigestItem(str(rec.get("issue", "")), f"task {rec.get('task_id')}")
            )
        elif (item := _attention_item(rec, ref)) is not None:
            self.attention.append(item)
        elif (line := _error_line(rec, ref)) is not None:
            self.errors.append(line)

    def shadow_only(self) -> list[DigestMerge]:
        """Shadow mode's would-be merges, once per PR, without the PRs that merged for real."""
        merged = {m.ref for m in self.merges}
        return [m for ref, m in self.would_merges.items() if ref not in merged]

    def _merge(self, rec: Mapping[str, Any], ref: str, pr: PRRecord | None) -> DigestMerge:
        q = rec.get("quadrant") or self.quadrant_of.get((ref, str(rec.get("head_sha"))))
        q = q or (pr and pr.quadrant) or "D"
        title = pr.title if pr is not None else ""
        return DigestMerge(ref, Quadrant(q), title, parse_utc(rec["ts"], "ts"))


def _attention_item(rec: Mapping[str, Any], ref: str) -> DigestItem | None:
    """The "attention" line an actions-log record asks for (None: it asks for none)."""
    action = rec.get("action")
    if action == "access.decision_repo_writers":
        who = ", ".join(str(w) for w in rec.get("writers") or ())
        text = f"non-owners can write to the decision repo: {who}"[:300]
        return DigestItem(str(rec.get("repo", "")), text)
    if action == "issue_restored":
        return DigestItem(ref, f"{rec.get('kind')} issue {rec.get('issue')} was "
                          f"{rec.get('what')} by someone else (restored)")  # fmt: skip
    if action == UNTRUSTED_ACTION:
        who = ", ".join(str(s) for s in rec.get("statuses") or ())
        return DigestItem(ref, f"red statuses from untrusted sources, not counted: {who}"[:300])
    if action == "repo_policy_error":
        return DigestItem(str(rec.get("repo", "")), str(rec.get("error", ""))[:300])
    if action == GAP_ACTION:  # a frozen daemon or a suspended host (capdaemon.decide.gaps)
        return DigestItem("", f"{rec.get('ts')}: {rec.get('detail')}"[:300])
    return None


def _error_line(rec: Mapping[str, Any], ref: str) -> str | None:
    """The "errors" line of a failed action, probe or protection drift (None: not one)."""
    action = rec.get("action")
    if rec.get("status") != "failed" and action not in ("probe.failed", "protection.drift"):
        return None
    what = rec.get("error") or rec.get("reason") or rec.get("problems") or ""
    return f"{rec.get('ts')} {action} {ref or rec.get('repo', '')}: {what}"[:300]


def _unprotected(config: Config, safety: Mapping[str, Any]) -> list[DigestItem]:
    """One attention line per supervised branch not protected as required."""
    out: list[DigestItem] = []
    for repo, problems in unprotected(safety.get("protection") or {}):
        rc = config.repo(repo)
        base = rc.base if rc is not None else "main"
        command = protect_command(repo, base, base)
        out.append(
            DigestItem(f"{repo}:{base}", f"not protected as required ({problems}); run {command}")
        )
    return out


def _pending(
    config: Config, prs: Mapping[str, PRRecord], safety: Mapping[str, Any]
) -> tuple[DigestBallot, ...]:
    """Open ballots waiting for an owner (pending, deferred), then pending one-taps."""
    decision_repo = config.ballot_repo

    def issue_of(number: object) -> tuple[str, str]:
        """(`owner/repo#N`, web address or "") of a decision issue; ("", "") when unknown."""
        if decision_repo is None or not isinstance(number, int):
            return "", ""
        url = issue_web_url(config.github.base_url, decision_repo, number)
        return f"{decision_repo}#{number}", url

    pending: list[DigestBallot] = []
    for ref, p in sorted(prs.items()):
        ballot = p.issue(BALLOT_KIND)
        if p.state is not PRState.OPEN or not ballot or not ballot.open:
            continue
        status = p.ballot.status if p.ballot is not None else BallotStatus.PENDING
        if status not in (BallotStatus.PENDING, BallotStatus.DEFERRED):
            continue
        issue, url = issue_of(ballot.number)
        kind = "deferred" if status is BallotStatus.DEFERRED else "ballot"
        opened = parse_utc(ballot.opened_at, "opened_at")
        title = p.title
        pending.append(DigestBallot(ref, opened, url=url, title=title, kind=kind, issue=issue))
    for ref, ot in sorted((safety.get("one_tap") or {}).items()):
        rec = prs.get(ref)
        if ot.get("state") == "pending" and rec is not None and rec.state is PRState.OPEN:
            issue, url = issue_of(ot.get("issue"))
            pending.append(
                DigestBallot(
                    ref,
                    parse_utc(ot["opened_at"], "opened_at"),
                    url=url,
                    kind="one-tap",
                    issue=issue,
                )
            )
    return tuple(pending)


def _burn_in(
    safety: Mapping[str, Any], metrics: Mapping[str, Any], errors: list[str]
) -> BurnInState:
    """The L4 burn-in clocks (an error line when their state is malformed)."""
    burn_raw = burn_in_raw(safety, metrics)
    try:
        return BurnInState.from_json(burn_raw)
    except ValueError:
        errors.append("l4_burn_in state is malformed")
        return BurnInState()


def _rate(metrics: Mapping[str, Any]) -> RateUse | None:
    """The API rate budget as the last tick left it (None: unknown)."""
    if metrics.get("api_limit") is not None and metrics.get("api_remaining") is not None:
        return RateUse(int(metrics["api_remaining"]), int(metrics["api_limit"]))
    return None


def audit_anchors(state_dir: Path, errors: list[str]) -> tuple[tuple[Anchor, ...], tuple[str, ...]]:
    """Each log's newest entry as an anchor (after a full chain check); notes for the others.

    A log whose chain does not verify is not anchored (an anchor vouches for the whole chain
    up to it); its failure is added to `errors` so the digest says so.
    """
    anchors: list[Anchor] = []
    notes: list[str] = []
    for path in log_paths(state_dir):
        try:
            anchor, report = head_anchor(path)
        except Exception as exc:  # e.g. a corrupt .head file: say so, never fail the digest
            notes.append(f"{path.name}: not anchored, cannot verify it ({exc})"[:300])
            errors.append(f"audit chain check of {path.name} failed: {exc}"[:300])
            continue
        if anchor is not None:
            anchors.append(anchor)
        elif not report.ok:
            notes.append(f"{path.name}: not anchored, its chain check failed (see Errors)")
            errors.append(f"audit chain check failed: {path.name}:{report.line}: {report.reason}")
        else:
            notes.append(f"{path.name}: no entries yet")
    return tuple(anchors), tuple(notes)


def once_each(items: list[DigestItem]) -> tuple[DigestItem, ...]:
    """Each (ref, detail) once, in first-seen order, with how often it recurred (a warning
    repeated by every tick is one line)."""
    counts: dict[tuple[str, str], int] = {}
    for item in items:
        counts[(item.ref, item.detail)] = counts.get((item.ref, item.detail), 0) + 1
    out = []
    for item in items:
        n = counts.pop((item.ref, item.detail), 0)
        if n:
            out.append(
                dataclasses.replace(item, detail=f"{item.detail} (×{n})" if n > 1 else item.detail)
            )
    return tuple(out)

"""Post-merge probes and reverts: watch each merge, judge its checks, revert or report it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.audit import AuditLog, log_paths
from capdaemon.config import Config
from capdaemon.daemon.core.budget import down_to_reserve
from capdaemon.daemon.core.failure import per_item, report_error
from capdaemon.daemon.merging.intent import Intent, no_crash
from capdaemon.daemon.safety import probe_sources
from capdaemon.daemon.safety.breaker import Breaker
from capdaemon.daemon.safety.common import (
    INCIDENT,
    Report,
    TickReads,
    log,
)
from capdaemon.daemon.safety.reviews import RandomReviews
from capdaemon.decide._text import md, short_sha
from capdaemon.decide.breaker import Incident, IncidentKind
from capdaemon.decide.labels import Label
from capdaemon.decide.probe import (
    ProbeStatus,
    ProbeWatch,
    RevertAction,
    evaluate_probe,
    quiet_until,
    revert_decision,
    reverts_in_window,
)
from capdaemon.forge.errors import ForgeError, RevertConflict
from capdaemon.jsonl import read_records
from capdaemon.model import CheckRun
from capdaemon.stores.botstate import PRStore
from capdaemon.stores.safety_state import SafetyStore
from capdaemon.timefmt import parse_utc, utc_iso

if TYPE_CHECKING:
    from capdaemon.forge.port import ForgePort


@dataclass
class Probes:
    """Probe watches in safety.json; a failed probe is an incident, maybe with a revert PR."""

    config: Config
    state_dir: Path
    store: SafetyStore
    forge: ForgePort
    actions_log: AuditLog
    prs: PRStore
    decision_repo: str | None
    bot_login: Callable[[], str]
    shadow: bool
    breaker: Breaker
    reviews: RandomReviews
    crash: Callable[[str], None] = no_crash  # the kill -9 test hook (TickDeps.crash)

    def _audit(self, entry: Mapping[str, Any], now: datetime) -> None:
        self.actions_log.append(dict(entry), now=now)

    # ------------------------------------------------------------------ new merges
    def watch_merges(
        self, records: Sequence[Mapping[str, Any]], now: datetime, report: Report | None
    ) -> None:
        """New merges capdaemon made → probe watches and the random-review sample."""
        s = self.store
        watched = {w["merge_sha"] for w in s["watches"]} | set(s["probed"])
        for r in records:
            if r.get("action") != "merge" or r.get("status") != "done" or not r.get("merge_sha"):
                continue
            ref, sha = str(r.get("pr", "")), str(r["merge_sha"])
            repo, _, num = ref.rpartition("#")
            rc = self.config.repo(repo)
            if rc is None or not num.isdigit():
                continue
            rec = self.prs.get(repo, int(num))
            if sha not in watched:
                watch = self._watch(repo, int(num), rc.base, r, now, report)
                s["watches"].append(watch.to_json())
                watched.add(sha)
            head = str(r.get("head_sha") or (rec.head_sha if rec else ""))
            if rec is not None and head:
                self.reviews.sample(rec, head, now, report)
        s.save()

    def _watch(
        self,
        repo: str,
        number: int,
        base: str,
        r: Mapping[str, Any],
        now: datetime,
        report: Report | None,
    ) -> ProbeWatch:
        """A new watch of merge record `r` (audited)."""
        ref, sha = str(r.get("pr", "")), str(r["merge_sha"])
        # how many parents the merge commit has (read from GitHub, never trusted)
        with per_item(report, "probe.parents_failed", ref, log=log, pr=ref) as item:
            parents = max(1, len(self.forge.commit_parents(repo, sha)))
        if item.failed:
            parents = 2  # unknown: never auto-revert it
        merged_at = parse_utc(str(r.get("ts")), "ts") if r.get("ts") else now
        revertible = self._own_merge(repo, number, r, sha, report)
        watch = ProbeWatch(repo, number, sha, parents, merged_at, base, revertible)
        self._audit(
            {
                "action": "probe.watch",
                "pr": ref,
                "merge_sha": sha,
                "parents": parents,
                "revertible": revertible,
                "window_minutes": self.config.post_merge.window_minutes,
            },
            now,
        )
        return watch

    def _own_merge(
        self, repo: str, number: int, r: Mapping[str, Any], sha: str, report: Report | None
    ) -> bool:
        """True when merge record `r` is verifiably capdaemon's own merge of the head it decided.

        A merge the bot made itself carries the merge sha GitHub answered. A *reconciled* one
        (a crash between the merge call and its record) only says the PR is merged now: a human
        may have merged another head. It stays revertible only when GitHub's merged head is the
        head the bot attempted; otherwise (or unknown) the probe reports, never auto-reverts."""
        if not r.get("reconciled"):
            return True
        ref = f"{repo}#{number}"
        with per_item(report, "probe.status_failed", ref, log=log, pr=ref) as item:
            status = self.forge.pull_status(repo, number)
        if item.failed:
            return False
        return bool(
            status.merged and status.merge_sha == sha and status.head_sha == r.get("head_sha")
        )

    # ------------------------------------------------------------------ judging
    def probe(self, now: datetime, reads: TickReads, report: Report | None) -> None:
        """Judge each watched merge commit; a failure is an incident (maybe with a revert PR)."""
        s = self.store
        cfg = self.config.post_merge
        keep: list[dict[str, Any]] = []
        batched = self._batched(s["watches"], now)
        spare = not down_to_reserve(self.forge.rate_budget())
        deferred = 0
        for raw in s["watches"]:
            watch = ProbeWatch.from_json(raw)
            if _quiet(raw, now):  # all checks done and green: next read at the window's end
                keep.append(raw)
                continue
            checks = batched.get((watch.repo, watch.merge_sha))
            if checks is None and not spare:  # a REST read: the hour's reserve is not for it
                deferred += 1
                keep.append(raw)
                continue
            with per_item(report, "probe.failed", watch.ref, log=log, pr=watch.ref) as item:
                if checks is None:  # commit statuses (their history), or no batched answer
                    checks = self.forge.commit_checks(
                        watch.repo, watch.merge_sha, status_history=True
                    )
                trusted, untrusted = probe_sources.split_checks(
                    self.config, reads, self.bot_login(), watch, checks
                )
            if item.failed:
                keep.append(raw)
                continue
            note = probe_sources.untrusted_note(self.actions_log, raw, watch, untrusted, now)
            res = evaluate_probe(watch, trusted, now, cfg)
            if res.status is ProbeStatus.PENDING:
                until = quiet_until(watch, checks, res, cfg)
                raw = {k: v for k, v in raw.items() if k != "quiet_until"}
                keep.append({**raw, "quiet_until": utc_iso(until)} if until else raw)
                continue
            if res.status is ProbeStatus.HEALTHY:
                self._audit(
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
            if not self.failed(watch, res.reason + note, list(res.failed_checks), now, report):
                keep.append(raw)  # a transient error opening the revert: retried next tick
        if deferred:
            log.info(
                "budget.deferred",
                work="post-merge probe reads",
                commits=deferred,
                reason="the hour's requests are down to the reserve kept for merges and votes",
            )
        s["watches"] = keep
        s.save()

    def _batched(
        self, watches: Sequence[Mapping[str, Any]], now: datetime
    ) -> dict[tuple[str, str], list[CheckRun] | None]:
        """The check runs of every merge commit due a read, in one GraphQL query per
        PROBE_SLOTS ({} when none is due or the query fails: each is read through REST)."""
        due = [(str(w.get("repo")), str(w.get("merge_sha"))) for w in watches if not _quiet(w, now)]
        if not due:
            return {}
        try:
            return self.forge.merge_checks(due)
        except ForgeError as exc:
            log.info("probe.batch_unavailable", commits=len(due), error=str(exc)[:200])
            return {}

    def failed(
        self,
        watch: ProbeWatch,
        why: str,
        failed: list[str],
        now: datetime,
        report: Report | None,
        kind: IncidentKind | None = None,
    ) -> bool:
        """Incident for a failed probe (or `kind`); a revert PR when allowed. False to retry."""
        cfg = self.config.post_merge
        decision = revert_decision(
            watch,
            True,
            auto_revert_pr=cfg.auto_revert_pr and not self.shadow,
            reverts_today=reverts_in_window(self._revert_times(now), now),
            cap=cfg.revert_daily_cap,
            applies_cleanly=True,
        )
        action, reason, revert_pr = decision.action, decision.reason, None
        if action is RevertAction.OPEN_REVERT:
            try:
                revert_pr = self._open_revert(watch, why, now, report)
            except RevertConflict as exc:
                action, reason = RevertAction.INCIDENT_ONLY, f"revert does not apply cleanly: {exc}"
            except _RevertFailed:
                return False
        base = {"pr": watch.ref, "merge_sha": watch.merge_sha}
        self.store["probed"][watch.merge_sha] = {
            "status": "failed",
            "at": utc_iso(now),
            "action": action.value,
            "revert_pr": revert_pr,
        }
        self.store.save()
        detail = f"{why}; {reason}" + (f"; revert PR #{revert_pr}" if revert_pr else "")
        self._audit(
            {
                "action": "probe.failed",
                **base,
                "failed_checks": failed,
                "revert": action.value,
                "reason": detail,
            },
            now,
        )
        self._incident_issue(watch, why, reason, revert_pr, report)
        kind = kind or (IncidentKind.REVERT if revert_pr else IncidentKind.PROBE_FAILED)
        self.breaker.record(Incident(now, kind, detail[:300], watch.ref), now)
        log.warning(
            "probe.failed", pr=watch.ref, merge_sha=watch.merge_sha[:12], revert=action.value
        )
        return True

    def _open_revert(
        self, watch: ProbeWatch, why: str, now: datetime, report: Report | None
    ) -> int:
        """Open the revert PR, recorded before and after (Intent; the watch, kept until the
        revert is done, is the intent): RevertConflict when it does not apply, _RevertFailed on
        another forge error (retried next tick; the forge finds a revert PR it already opened)."""
        base = {"pr": watch.ref, "merge_sha": watch.merge_sha}
        intent = Intent(
            self.actions_log,
            {"action": "revert", **base},
            now,
            crash=self.crash,
            statuses={RevertConflict: "conflict"},
        )
        rec = self.prs.get(watch.repo, watch.pr)
        title = rec.title if rec else ""
        try:
            revert_pr, revert_sha = intent.attempt(
                lambda: self.forge.open_revert_pr(
                    watch.repo,
                    watch.merge_sha,
                    watch.base,
                    title=f"Revert {watch.ref}: {title}"[:200],
                    body=(
                        f"capdaemon reverts {watch.ref} (merge commit {watch.merge_sha}): the "
                        f"post-merge probe failed ({why}). Labelled `decision:auto-revert` by "
                        "the bot."
                    ),
                    label=Label.AUTO_REVERT.value,
                )
            )
        except RevertConflict:
            raise
        except ForgeError as exc:
            report_error(report, "revert.failed", f"{watch.ref}: {exc}", log=log, pr=watch.ref)
            raise _RevertFailed from exc
        s = self.store
        s["reverts"].append(
            {"at": utc_iso(now), **base, "revert_pr": revert_pr, "revert_sha": revert_sha}
        )
        s["reverts"] = s["reverts"][-100:]
        intent.done(revert_pr=revert_pr)
        return revert_pr

    def _incident_issue(
        self, watch: ProbeWatch, why: str, reason: str, revert_pr: int | None, report: Report | None
    ) -> None:
        repo = self.decision_repo
        if not repo:
            return
        with per_item(report, "incident.failed", watch.ref, log=log, pr=watch.ref):
            issue = self.forge.ensure_issue(
                repo,
                {"kind": INCIDENT, "key": f"probe-{watch.merge_sha}", "pr": watch.ref},
                f"Post-merge probe failed: {watch.ref}"[:200],
                _probe_issue_body(watch, why, reason, revert_pr),
                [Label.INCIDENT.value],
            )
            if report is not None:
                report.issues.append(f"incident:{repo}#{issue.number}")

    def _revert_times(self, now: datetime) -> list[datetime]:
        """When reverts were opened: safety.json plus actions.jsonl (attempted ones count too),
        so a lost or reset safety.json (or a crash mid-revert) never re-opens the daily cap."""
        times = {(str(r.get("merge_sha")), r["at"]) for r in self.store["reverts"] if r.get("at")}
        out = [parse_utc(at, "merged_at") for _sha, at in times]
        seen = {sha for sha, _at in times}
        for r in read_records(log_paths(self.state_dir)[1]):
            if r.get("action") != "revert" or r.get("status") not in ("attempted", "done"):
                continue
            sha = str(r.get("merge_sha"))
            if sha in seen or not r.get("ts"):
                continue
            seen.add(sha)
            try:
                out.append(parse_utc(str(r["ts"]), "ts"))
            except ValueError:
                out.append(now)  # unreadable time: count it (fail closed)
        return out

    # ------------------------------------------------------------------ the bot's reverts
    def bot_revert(self, repo: str, number: int) -> Mapping[str, Any] | None:
        """The newest revert the bot opened as PR `repo#number` (None: not one of ours)."""
        for r in reversed(self.store["reverts"]):
            pr = str(r.get("pr", ""))
            if r.get("revert_pr") == number and pr.rpartition("#")[0].lower() == repo.lower():
                found: Mapping[str, Any] = r
                return found
        return None

    def bot_revert_head(self, repo: str, number: int) -> str | None:
        """The revert commit sha the bot opened revert PR `repo#number` with (None: not ours).

        Its own `decision:auto-revert` label is trusted at exactly that head even though the
        label was already there when the daemon first saw the head (see publish._label_floor)."""
        r = self.bot_revert(repo, number)
        sha = r.get("revert_sha") if r is not None else None
        return str(sha) if sha else None


class _RevertFailed(Exception):
    """Opening the revert PR failed (audited and reported); the probe retries next tick."""


def _quiet(raw: Mapping[str, Any], now: datetime) -> bool:
    """True while a watch's checks were all complete and its window has not ended."""
    until = raw.get("quiet_until")
    if not isinstance(until, str):
        return False
    try:
        return now < parse_utc(until, "quiet_until")
    except (ValueError, TypeError):
        return False  # unreadable: read the commit (never skip on a guess)


def _probe_issue_body(watch: ProbeWatch, why: str, reason: str, revert_pr: int | None) -> str:
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

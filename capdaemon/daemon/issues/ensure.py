"""Decision and passive-review issues: ensure, restore after tampering (R5), close; escalations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from capdaemon.daemon.core.context import Tick, TickContext, TickDeps
from capdaemon.daemon.core.failure import per_item, report_error
from capdaemon.daemon.core.tickdata import (
    BALLOT,
    REVIEW,
    WATCHED_KINDS,
    _iso,
    issue_text_hash,
)
from capdaemon.daemon.issues import texts, watch
from capdaemon.decide.labels import Label
from capdaemon.decide.review import passive_close_due
from capdaemon.forge.errors import ForgeError
from capdaemon.forge.types import IssueActivity, MarkedIssue
from capdaemon.report import Report
from capdaemon.state import StateError
from capdaemon.stores.botstate import PRRecord
from capdaemon.stores.escalations import list_escalations, mark_notified
from capdaemon.stores.prrecord import IssueRef, IssueText, PRState
from capdaemon.timefmt import parse_utc


def issue_activity(
    deps: TickDeps, ctx: TickContext, report: Report | None = None
) -> dict[int, IssueActivity]:
    """The decision repo's open issues' activity, listed once per tick ({} when unreadable:
    every ballot and one-tap is then read in full, as before). The listings and where the
    changes list starts: capdaemon.daemon.issues.watch."""
    if ctx.activity is None:
        ctx.activity = {}
        repo = deps.decision_repo
        if repo is not None:
            try:
                ctx.activity = _listed(deps, repo, report)
                ctx.activity_ok = True
            except ForgeError as exc:
                if report is not None:
                    report_error(report, "issues.list_failed", f"{repo}: {exc}", repo=repo)
    return ctx.activity


def _listed(deps: TickDeps, repo: str, report: Report | None) -> dict[int, IssueActivity]:
    """Read the listings; keep the changes list's next `since` (not over a corrupt file)."""
    corrupt = False
    try:
        since = watch.kept_since(deps.state_dir, repo)
    except StateError as exc:
        corrupt, since = True, None  # every open issue listed; the file is left as it is
        report_error(report, "issues.watch_corrupt", str(exc), repo=repo)
    ballots, taps = watch.reaction_issues(
        deps.prs.records.values(), deps.safety.tiers.pending_one_tap
    )
    listing = deps.forge.issue_listing(repo, watch.wanted_lists(since, bool(ballots), bool(taps)))
    if not corrupt:
        changed = {n for n, _, _ in listing.changed}
        unseen = watch.unlabelled(listing, since, ballots | taps) | {
            info.number
            for rec, kind, info in _watched(deps)
            if info.number in changed
            and (not info.body_sha or _tamper_kind(kind, info, listing.open.get(info.number)))
        }
        new = watch.next_since(listing, since, unseen)
        watch.keep_since(deps.state_dir, repo, since, new)
    return listing.open


@dataclass(frozen=True)
class WantedIssue:
    """One decision issue as capdaemon wants it on GitHub: its kind (BALLOT, REVIEW, SCOPE),
    the marker the forge finds it by, its text and labels; `round_no` is the ballot's new round
    when restoring an edited ballot starts one (R5)."""

    kind: str
    marker: Mapping[str, Any]
    title: str
    body: str
    labels: tuple[str, ...]
    round_no: int | None = None


def ensure_issue(t: Tick, rec: PRRecord, want: WantedIssue) -> int | None:
    """Open or update one decision issue (the forge finds it by marker: never a duplicate).

    A ballot closed earlier ("no ballot needed") is reopened when the head needs one
    again (F2). When someone else edited (or closed) the issue, the text is restored and
    one comment says so (R5), with the ballot's new round (`want.round_no`).
    """
    deps, ctx, kind = t.deps, t.ctx, want.kind
    repo = deps.decision_repo
    if repo is None:
        deps.log.warning("issue.no_decision_repo", pr=rec.ref, kind=kind)
        return None
    known = rec.issues.get(kind)
    tampered = ctx.tampered.get(rec.ref, {}).get(kind)
    if known and not known.open and kind != BALLOT:
        return known.number  # a closed passive review / scope issue stays closed
    if kind == REVIEW and known and not tampered and known.text == _text(want):
        # as capdaemon last wrote it: an edit since is found by the full tick's watch
        # (find_tampered) and restored from this text (restore_reviews); nothing to send
        return known.number
    issue = deps.forge.ensure_issue(
        repo,
        dict(want.marker),
        want.title,
        want.body,
        list(want.labels),
        reopen=kind == BALLOT,
        number=known.number if known else None,
    )
    ctx.decision_writes = True
    rec = _note_issue(t, rec, kind, issue)
    if tampered and kind in WATCHED_KINDS:
        rec = restored(t, rec, kind, issue.number, tampered, want.round_no)
    done_tampered(ctx, rec.ref, kind)
    known = rec.issues[kind]
    if kind in WATCHED_KINDS:
        known = replace(known, body_sha=issue_text_hash(issue.title, issue.body))
    if kind == REVIEW:  # kept while open: a merged PR's review is restored from it (R5)
        known = replace(known, text=_text(want))
    with_issue(t, rec, kind, known)
    return issue.number


def _text(want: WantedIssue) -> IssueText:
    """What `want` writes on GitHub, as a record keeps it."""
    return IssueText(want.title, want.body, dict(want.marker), want.labels)


def with_issue(t: Tick, rec: PRRecord, kind: str, info: IssueRef) -> PRRecord:
    """`rec` with its issue of `kind` set to `info`, made current in the store (in memory:
    the caller's next durable change, or the tick's compaction, keeps it)."""
    return t.deps.prs.change(rec, durable=False, issues={**rec.issues, kind: info})


def _note_issue(t: Tick, rec: PRRecord, kind: str, issue: MarkedIssue) -> PRRecord:
    """The record's entry for this issue, updated from what GitHub returned (opened or reopened
    issues audited); returns the changed record."""
    deps, now = t.deps, t.now
    repo = deps.decision_repo
    known = rec.issues.get(kind)
    if not known or known.number != issue.number:
        opened = issue.created_at or now
        rec = with_issue(t, rec, kind, IssueRef(issue.number, issue.state == "open", _iso(opened)))
        deps.actions_log.append(
            {
                "action": "issue_opened",
                "pr": rec.ref,
                "kind": kind,
                "issue": f"{repo}#{issue.number}",
            },
            now=now,
        )
        t.report.issues.append(f"{kind}:{repo}#{issue.number}")
        deps.log.info("issue.ensured", pr=rec.ref, kind=kind, issue=issue.number)
        return rec
    rec = with_issue(t, rec, kind, replace(known, open=issue.state == "open"))
    if issue.state == "open" and not known.open:
        deps.actions_log.append(
            {"action": "issue_reopened", "pr": rec.ref, "kind": kind,
             "issue": f"{repo}#{issue.number}"},
            now=now,
        )  # fmt: skip
        deps.log.info("issue.reopened", pr=rec.ref, kind=kind, issue=issue.number)
    return rec


def restore_reviews(t: Tick) -> None:
    """Restore passive review issues someone else edited, from the text capdaemon wrote
    (their PR has usually merged: it is not reprocessed). Ballots are restored when
    their PR is processed (a new round starts)."""
    deps, ctx, report = t.deps, t.ctx, t.report
    repo = deps.decision_repo
    if repo is None:
        return
    for ref, kinds in list(ctx.tampered.items()):
        rec = deps.prs.records.get(ref)
        info = rec.issues.get(REVIEW) if rec else None
        what = kinds.get(REVIEW)
        if rec is None or info is None or not what:
            continue
        text = info.text
        if text is None:
            deps.log.warning("issue.restore_unavailable", pr=ref, kind=REVIEW)
            continue
        deps.check_stop()
        with per_item(report, "issue.restore_failed", ref, pr=ref) as item:
            issue = deps.forge.ensure_issue(
                repo,
                dict(text.marker),
                text.title,
                text.body,
                list(text.labels),
                number=info.number,
            )
            ctx.decision_writes = True
            rec = restored(t, rec, REVIEW, issue.number, what, None)
            sha = issue_text_hash(issue.title, issue.body)
            rec = with_issue(t, rec, REVIEW, replace(rec.issues[REVIEW], body_sha=sha))
        if item.failed:
            continue
        deps.prs.save(deps.prs.records[ref])


def restored(
    t: Tick, rec: PRRecord, kind: str, number: int, what: str, round_no: int | None
) -> PRRecord:
    """Say once, on the issue, that someone else edited it and that it was restored; returns
    the record with the restore counted."""
    deps, now = t.deps, t.now
    assert deps.decision_repo is not None
    info = rec.issues[kind]
    count = info.restores + 1
    deps.forge.comment_once(
        deps.decision_repo,
        number,
        {"kind": "restored", "key": f"{rec.ref}:{kind}:{count}"},
        texts.restored_comment(kind, what, round_no),
    )
    rec = with_issue(t, rec, kind, replace(info, restores=count))
    deps.actions_log.append(
        {
            "action": "issue_restored",
            "pr": rec.ref,
            "kind": kind,
            "issue": f"{deps.decision_repo}#{number}",
            "what": what,
            "round": round_no,
        },
        now=now,
    )
    deps.log.warning("issue.restored", pr=rec.ref, kind=kind, issue=number, what=what)
    done_tampered(t.ctx, rec.ref, kind)
    return rec


def done_tampered(ctx: TickContext, ref: str, kind: str) -> None:
    kinds = ctx.tampered.get(ref)
    if kinds is not None:
        kinds.pop(kind, None)
        if not kinds:
            del ctx.tampered[ref]


def _watched(deps: TickDeps) -> list[tuple[PRRecord, str, IssueRef]]:
    """The open decision issues capdaemon watches, each with its PR record and stored info."""
    return [
        (rec, kind, info)
        for rec in deps.prs.records.values()
        for kind, info in rec.issues.items()
        if kind in WATCHED_KINDS and info.open and (rec.state == PRState.OPEN or kind == REVIEW)
    ]


def _tamper_kind(kind: str, info: IssueRef, act: Any) -> str | None:
    """How a watched issue was tampered with ("closed", "edited"), or None when it was not
    (or the list did not carry its text)."""
    if act is None:
        return "closed" if kind == BALLOT else None  # not among the open issues
    if act.body is None:
        return None  # the list did not carry the text: nothing to compare
    return "edited" if issue_text_hash(act.title, act.body) != info.body_sha else None


def find_tampered(t: Tick) -> None:
    """Decision issues whose live title/body differs from what capdaemon last wrote, or a
    ballot closed by someone else (R5), from the issue list the tick reads anyway.

    Only open PRs with a watched open issue and a stored hash are compared; the list is
    read only when there is one (a steady tick reads it for its ballots anyway)."""
    deps, ctx, report = t.deps, t.ctx, t.report
    watched = _watched(deps)
    for rec, kind, info in watched:
        if not info.body_sha and kind == BALLOT:
            # recorded before hashes were kept: rewrite it once to learn the hash (silent)
            ctx.tampered.setdefault(rec.ref, {})[kind] = ""
    watched = [w for w in watched if w[2].body_sha]
    if not watched:
        return
    activity = issue_activity(deps, ctx, report)
    if not ctx.activity_ok:
        return
    for rec, kind, info in watched:
        how = _tamper_kind(kind, info, activity.get(info.number))
        if how is not None:
            ctx.tampered.setdefault(rec.ref, {})[kind] = how
    for ref, kinds in ctx.tampered.items():
        if any(kinds.values()):
            deps.log.warning("issue.tampered", pr=ref, kinds=sorted(kinds.items()))


def close_issue(t: Tick, rec: PRRecord, kind: str, comment: str) -> PRRecord:
    """Close one of the PR's decision issues with a comment (audited); nothing when closed.
    Returns the PR's record (changed in memory when the issue was closed)."""
    deps = t.deps
    known = rec.issues.get(kind)
    if not known or not known.open or deps.decision_repo is None:
        return rec
    deps.forge.close_issue(deps.decision_repo, known.number, comment)
    rec = with_issue(t, rec, kind, replace(known, open=False, text=None))
    deps.actions_log.append(
        {
            "action": "issue_closed",
            "pr": rec.ref,
            "kind": kind,
            "issue": f"{deps.decision_repo}#{known.number}",
            "comment": comment,
        },
        now=t.now,
    )
    deps.log.info("issue.closed", pr=rec.ref, kind=kind, issue=known.number)
    return rec


# ------------------------------------------------------------------ step 5
def step_passive_reviews(t: Tick) -> None:
    """B/C review issues close after `passive_review_days` unless an owner commented."""
    deps, ctx, now, report = t.deps, t.ctx, t.now, t.report
    repo = deps.decision_repo
    days = deps.config.passive_review_days
    if repo is None:
        return
    for rec in list(deps.prs.records.values()):
        info = rec.issues.get(REVIEW)
        if not info or not info.open or info.kept_open:
            continue
        if rec.state == "open":
            continue  # the PR still waits (checks, an owner, a label): never closed under it
        opened = parse_utc(info.opened_at, "opened_at")
        if now - opened < timedelta(days=days):
            continue
        deps.check_stop()
        with per_item(report, "passive.failed", rec.ref, pr=rec.ref):
            comments = deps.forge.comments(repo, info.number)
            owners = decision_owners(deps, ctx, rec.repo, [c.user for c in comments])
            owner_commented = any(
                c.user.lower() in owners and c.user.lower() != deps.bot_login.lower()
                for c in comments
            )
            if passive_close_due(opened, now, owner_commented, days):
                close_issue(t, rec, REVIEW, texts.passive_close_comment(days))
                deps.log.info("passive.closed", pr=rec.ref, issue=info.number)
            elif owner_commented:
                rec = with_issue(t, rec, REVIEW, replace(info, kept_open=True))
                deps.actions_log.append(
                    {
                        "action": "passive_kept_open",
                        "pr": rec.ref,
                        "issue": f"{repo}#{info.number}",
                    },
                    now=now,
                )
                deps.log.info("passive.kept_open", pr=rec.ref, issue=info.number)


def step_escalations(t: Tick) -> None:
    """Escalation records of scope-guard / finish-task become owner issues, once each."""
    deps, now, report = t.deps, t.now, t.report
    repo = deps.decision_repo
    if repo is None:
        return
    for esc in list_escalations(deps.state_dir):
        if esc.notified:
            continue
        with per_item(report, "escalation.failed", esc.id) as item:
            issue = deps.forge.ensure_issue(
                repo,
                {"kind": "escalation", "key": esc.id},
                texts.escalation_title(esc.task, esc.layer or "scope guard"),
                texts.escalation_body(esc.data),
                [Label.SCOPE_VIOLATION.value],
            )
        if item.failed:
            continue
        mark_notified(deps.state_dir, esc.id, f"{repo}#{issue.number}", now)
        deps.actions_log.append(
            {
                "action": "escalation_notified",
                "escalation": esc.id,
                "task_id": esc.task,
                "issue": f"{repo}#{issue.number}",
            },
            now=now,
        )
        report.issues.append(f"escalation:{repo}#{issue.number}")
        deps.log.info("escalation.notified", escalation=esc.id, issue=issue.number)


def decision_owners(deps: TickDeps, ctx: TickContext, repo: str, users: Iterable[str]) -> set[str]:
    """Owners for `repo`: central owners plus the repo's (capdaemon.yml and the base
    branch's .capdaemon.yml), and admins when owners_include_admins."""
    owners = set(ctx.config_for(repo).owners_for(repo))
    if deps.config.owners_include_admins:
        for user in {u.lower() for u in users} - owners:
            if deps.forge.permission(repo, user) == "admin":
                owners.add(user)
    return owners

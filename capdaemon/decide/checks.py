"""Texts capdaemon publishes: the L1.C3 check output (SPEC 2.10), ballot and review bodies."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from capdaemon.decide._text import format_age, link, md, ref, short_sha
from capdaemon.decide.ballot import BallotOutcome, BallotStatus
from capdaemon.decide.tiers import (
    OneTapResult,
    OneTapState,
    Requirement,
    TierDecision,
    quadrant_requirement,
)
from capdaemon.model import FileVerdict, Quadrant, Severity, Verdict

MAX_FILE_ROWS = 200
MAX_SUMMARY_CHARS = 60_000  # GitHub caps a check summary at 65,535 characters
MAX_TITLE_CHARS = 120
SHADOW_WOULD_MERGE = "would merge (shadow mode: not merged)"
SHADOW_NOTE = (
    "Shadow mode: capdaemon merges and closes nothing. Where this check passes, the PR would "
    "merge in enforce mode."
)


@dataclass(frozen=True)
class CheckFacts:
    """Decision facts beside the verdict: tier, ballot, one-tap and blocking reasons."""

    head_sha: str
    tier: TierDecision | None = None
    ballot: BallotOutcome | None = None
    ballot_url: str = ""
    one_tap: OneTapResult | None = None
    one_tap_url: str = ""
    blocking: tuple[str, ...] = ()  # e.g. scope violation, no capability: fail the check
    notes: tuple[str, ...] = ()  # shown, never fail (e.g. "breaker tripped: no auto-merge")
    shadow: bool = False  # shadow mode: nothing merges; a passing check says "would merge"


@dataclass(frozen=True)
class CheckOutput:
    """What to publish as L1.C3."""

    conclusion: str  # "success" | "failure"
    title: str
    summary: str

    @property
    def success(self) -> bool:
        """True for "success"."""
        return self.conclusion == "success"


def _owner_requirement(verdict: Verdict, facts: CheckFacts) -> Requirement:
    """What an owner must give before a human or the bot may merge (manual policy ignored)."""
    needs = [quadrant_requirement(verdict.quadrant)]
    if facts.tier is not None:
        needs.append(facts.tier.owner_requirement)
    return max(needs, key=lambda r: r.rank)


def _waiting(verdict: Verdict, facts: CheckFacts) -> str | None:
    """Why an owner decision is still missing, or None."""
    need = _owner_requirement(verdict, facts)
    ballot = facts.ballot
    if need is Requirement.NONE or (ballot is not None and ballot.approves(facts.head_sha)):
        return None
    if need is Requirement.ONE_TAP and facts.one_tap is not None:
        if facts.one_tap.state is OneTapState.APPROVED:
            return None
        if facts.one_tap.state is OneTapState.PENDING:
            return "waiting for a one-tap 👍 from an owner"
    if ballot is None or ballot.status is BallotStatus.PENDING:
        return "waiting for an owner's ballot answer"
    if ballot.status.mergeable:
        return f"the ballot approved {short_sha(ballot.head_sha)}, not this head"
    if ballot.status is BallotStatus.DEFERRED:
        return "the owner deferred the decision (decision:deferred)"
    return f"rejected by {ballot.decided_by or 'an owner'}"


def _files_table(files: tuple[FileVerdict, ...], cap: int = MAX_FILE_ROWS) -> list[str]:
    if not files:
        return ["No changed files."]
    out = ["| path | IR | CR | quadrant | reason |", "|---|---|---|---|---|"]
    for f in files[:cap]:
        path = md(f.path) if not f.previous_path else f"{md(f.previous_path)} → {md(f.path)}"
        ir = "irreversible" if f.irreversible else "reversible"
        cr = "critical" if f.critical else "non-critical"
        out.append(f"| {path} | {ir} | {cr} | {f.quadrant.value} | {md('; '.join(f.reasons))} |")
    if len(files) > cap:
        out.append(f"\n…and {len(files) - cap} more files.")
    return out


def _blocking_reasons(verdict: Verdict, facts: CheckFacts) -> list[str]:
    """P0 findings, the caller's blocking reasons, then a missing owner decision."""
    p0 = [f for f in verdict.findings if f.severity is Severity.P0]
    blocking = [f"P0 {f.validator}: {f.message}" for f in p0] + list(facts.blocking)
    waiting = _waiting(verdict, facts)
    if waiting:
        blocking.append(waiting)
    return blocking


def _check_title(q: str, blocking: list[str], facts: CheckFacts) -> str:
    """The first blocking reason, the approving owner, or "ok" (in shadow mode "would merge",
    never a word that says it merges); capped at MAX_TITLE_CHARS."""
    if blocking:
        title = f"Quadrant {q}: {blocking[0]}"
    elif facts.ballot is not None and facts.ballot.approves(facts.head_sha):
        title = f"Quadrant {q}: approved by {facts.ballot.decided_by}"
    else:
        title = f"Quadrant {q}: ok"
    if facts.shadow and not blocking:
        title += f"; {SHADOW_WOULD_MERGE}"
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1] + "…"
    return title


def _section(heading: str, items: list[str]) -> list[str]:
    """A `###` heading with one bullet per item, or nothing when there are no items."""
    if not items:
        return []
    return [f"### {heading}", "", *(f"- {item}" for item in items), ""]


def _finding_items(verdict: Verdict, severity: Severity) -> list[str]:
    return [
        f"{md(f.validator)}: {md(f.message)}" for f in verdict.findings if f.severity is severity
    ]


def _tier_lines(tier: TierDecision | None) -> list[str]:
    """The tier line of L1.C3, and why its merge policy applies (a PR linking no task)."""
    if tier is None:
        return []
    why = f": {md('; '.join(tier.reasons))}" if tier.reasons else ""
    out = [f"Tier {tier.tier} (merge_policy {md(tier.merge_policy)}){why}", ""]
    if tier.policy_reason:
        out += [f"Merge policy {md(tier.merge_policy)}: {md(tier.policy_reason)}", ""]
    return out


def _ballot_lines(facts: CheckFacts) -> list[str]:
    if facts.ballot is None and not facts.ballot_url:
        return []
    line = link("ballot issue", facts.ballot_url) if facts.ballot_url else "ballot"
    if facts.ballot is not None:
        b = facts.ballot
        line += f": {b.status.value}, bound to {short_sha(b.head_sha)} ({md(b.reason)})"
    return ["### Ballot", "", line, ""]


def _one_tap_lines(facts: CheckFacts) -> list[str]:
    if facts.one_tap is None:
        return []
    line = link("one-tap request", facts.one_tap_url) if facts.one_tap_url else "one-tap"
    return [
        "### One-tap",
        "",
        f"{line}: {facts.one_tap.state.value} ({md(facts.one_tap.reason)})",
        "",
    ]


def _rules_lines(verdict: Verdict) -> list[str]:
    if not verdict.rules:
        return []
    out = ["### Rules fired", "", "| rule | result | vote | reason |", "|---|---|---|---|"]
    for r in verdict.rules:
        vote = r.vote.value if r.vote else ""
        out.append(f"| {md(r.rule)} | {r.result.value} | {vote} | {md(r.reason)} |")
    out.append("")
    return out


def _capped_summary(summary: str) -> str:
    if len(summary) > MAX_SUMMARY_CHARS:
        return summary[:MAX_SUMMARY_CHARS] + "\n\n…(truncated; see `capdaemon why`)\n"
    return summary


def render_check(verdict: Verdict, facts: CheckFacts) -> CheckOutput:
    """The L1.C3 conclusion, title and Markdown summary.

    failure: any P0 finding, any blocking reason, or a missing owner decision (pending,
    deferred or rejected D ballot; a tier 2/3 requirement not yet met; an approval for
    another head). success otherwise — including an approved D for exactly this head.
    """
    blocking = _blocking_reasons(verdict, facts)
    q = verdict.quadrant.value
    title = _check_title(q, blocking, facts)
    out = [f"**Quadrant {q}** on {short_sha(facts.head_sha)}: {md(verdict.reasoning)}", ""]
    out += _tier_lines(facts.tier)
    out += _section("Blocking", [md(b) for b in blocking])
    notes = (SHADOW_NOTE, *facts.notes) if facts.shadow else facts.notes
    out += _section("Notes", [md(n) for n in notes])
    out += _section("Attention (P1)", _finding_items(verdict, Severity.P1))
    out += _ballot_lines(facts)
    out += _one_tap_lines(facts)
    out += [f"### Files ({len(verdict.files)})", "", *_files_table(verdict.files), ""]
    out += _rules_lines(verdict)
    out += _section("Advisory (P2)", _finding_items(verdict, Severity.P2))
    summary = _capped_summary("\n".join(out))
    return CheckOutput("failure" if blocking else "success", title, summary)


# ----------------------------------------------------------------------------- issue bodies


def _pr_line(pr_ref: str, pr_url: str, title: str) -> str:
    head = link(pr_ref, pr_url) if pr_url else ref(pr_ref)
    return f"{head}: {md(title)}" if title else head


def ballot_issue_body(
    pr_ref: str,
    pr_url: str,
    pr_title: str,
    head_sha: str,
    round_no: int,
    verdict: Verdict,
    *,
    max_files: int = 50,
) -> str:
    """The `decision:pending-owner` ballot: the PR, why it is D, the four options, how to answer."""
    return "\n".join(
        [
            f"## Owner decision needed: {_pr_line(pr_ref, pr_url, pr_title)}",
            "",
            f"**Quadrant {verdict.quadrant.value}**: {md(verdict.reasoning)}",
            "",
            f"This ballot is bound to head **{md(head_sha)}** (round {round_no}). If the PR's "
            "head changes, the PR is reclassified and earlier votes no longer count.",
            "",
            "### Options",
            "",
            "| option | answer with |",
            "|---|---|",
            "| **A**: approve as proposed | `/approve A` or a 👍 reaction on this issue |",
            "| **B**: approve with the alternate (see the PR description) | `/approve B` |",
            "| **C**: defer, needs more information (stays unmerged) | `/approve C` |",
            "| **Reject**: the PR is closed with a comment | `/reject` or a 👎 reaction |",
            "",
            "Write the command alone on its own line in a new comment. Only owners count, never "
            "the PR's author; edited comments do not count; the newest owner answer wins; a 👍 "
            "and a 👎 with no later command comment leave the ballot pending.",
            "",
            f"### Files ({len(verdict.files)})",
            "",
            *_files_table(verdict.files, cap=max_files),
            "",
        ]
    )


def new_round_comment(old_sha: str, new_sha: str, round_no: int) -> str:
    """Said on the ballot when the head moved and a new round starts."""
    return (
        f"The PR's head moved from {short_sha(old_sha)} to {short_sha(new_sha)}. "
        f"This is round {round_no}: earlier votes and reactions no longer count. "
        "Owners, please answer again (remove and re-add a reaction to re-vote with it)."
    )


_PASSIVE = {Quadrant.B: "critical but reversible", Quadrant.C: "irreversible but not critical"}


def passive_issue_body(
    quadrant: Quadrant,
    pr_ref: str,
    pr_url: str,
    pr_title: str,
    verdict: Verdict,
    days: float = 7,
    *,
    shadow: bool = False,
) -> str:
    """The passive-review issue for a B or C PR capdaemon approves by itself: opened before
    the merge, so it says "auto-approved" (it merges once its checks pass), and in shadow
    mode "would merge" (nothing merges)."""
    if quadrant not in _PASSIVE:
        raise ValueError(f"passive reviews are for quadrants B and C, not {quadrant}")
    what = _PASSIVE[quadrant]
    pr = _pr_line(pr_ref, pr_url, pr_title)
    if shadow:
        head = f"## Would merge ({quadrant.value}, {what}), shadow mode, not merged: {pr}"
        when = (
            "Shadow mode: capdaemon merged nothing. In enforce mode it would merge this PR by "
            "itself once its checks pass; switching to enforce judges it again first."
        )
    else:
        head = f"## Auto-approved ({quadrant.value}, {what}): {pr}"
        when = "capdaemon merges this PR by itself once its checks pass."
    return "\n".join(
        [
            head,
            "",
            when,
            "",
            f"Classifier reasoning: {md(verdict.reasoning)}",
            "",
            f"This is a passive review. It closes by itself after {days:g} days unless an owner "
            "comments; an owner comment keeps it open.",
            "",
            f"### Files ({len(verdict.files)})",
            "",
            *_files_table(verdict.files, cap=50),
            "",
        ]
    )


def random_review_body(
    pr_ref: str, pr_url: str, pr_title: str, head_sha: str, share: float, days: float = 7
) -> str:
    """The `decision:random-review` issue for a sampled auto-merged PR."""
    return (
        f"## Random review: {_pr_line(pr_ref, pr_url, pr_title)}\n\n"
        f"This auto-merged PR (head {short_sha(head_sha)}) was picked for a human look "
        f"({share:.0%} of auto-merges are, chosen from the PR and head sha). "
        f"It closes by itself after {days:g} days unless an owner comments.\n"
    )


def one_tap_issue_body(
    pr_ref: str, pr_url: str, pr_title: str, head_sha: str, tier: TierDecision, ttl: timedelta
) -> str:
    """The `decision:one-tap` request: one owner 👍 within the TTL approves."""
    reasons = "\n".join(f"- {md(r)}" for r in tier.reasons) or "- tier 2"
    return (
        f"## One-tap approval: {_pr_line(pr_ref, pr_url, pr_title)}\n\n"
        f"Tier {tier.tier} because:\n\n{reasons}\n\n"
        f"One owner 👍 on this issue within {format_age(ttl)} approves head "
        f"{short_sha(head_sha)}. A 👎, or no answer in time, turns it into a full owner ballot.\n"
    )


def rejected_check(quadrant: str, outcome: BallotOutcome) -> CheckOutput:
    """The L1.C3 left on a PR closed by an owner's `/reject` or 👎: a failure that says who
    rejected it (not "waiting for an owner's ballot answer": nothing is awaited any more)."""
    who = outcome.decided_by or "an owner"
    title = f"Quadrant {quadrant}: rejected by {who}"[:MAX_TITLE_CHARS]
    summary = (
        f"**Rejected** by {md(who)} on the owner ballot for {short_sha(outcome.head_sha)}"
        f" ({md(outcome.reason)}). The PR is closed; reopening it starts a new ballot round."
    )
    return CheckOutput("failure", title, summary)


def reject_comment(outcome: BallotOutcome) -> str:
    """The comment the PR is closed with after a rejection."""
    who = md(outcome.decided_by or "an owner")
    return f"Closed: rejected by {who} on the owner ballot for {short_sha(outcome.head_sha)}."

"""Issue titles and the daemon's own comments (check and ballot bodies come from decide.checks)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from capdaemon.decide import checks
from capdaemon.decide._text import md, ref, short_sha
from capdaemon.decide.ballot import BallotOutcome, BallotStatus
from capdaemon.decide.rounds import RoundReason


def issue_web_url(api_base_url: str, repo: str | None, number: int | None) -> str:
    """An issue's web address when the API is github.com's, else "" (a raw ref is shown)."""
    if number is None or not repo or api_base_url.rstrip("/") != "https://api.github.com":
        return ""
    return f"https://github.com/{repo}/issues/{number}"


def ballot_title(repo: str, number: int, title: str) -> str:
    """Title of a quadrant-D ballot issue."""
    return f"[D] owner decision needed: {repo}#{number} {title}"[:240]


def review_title(quadrant: str, repo: str, number: int, title: str, *, shadow: bool = False) -> str:
    """Title of a passive B/C review issue ("would merge" in shadow mode: nothing merges)."""
    what = "critical, reversible" if quadrant == "B" else "irreversible, non-critical"
    verb = "would merge, shadow mode" if shadow else "auto-approved"
    return f"[{quadrant}] {verb} ({what}): {repo}#{number} {title}"[:240]


def scope_title(repo: str, number: int) -> str:
    """Title of a scope-violation issue."""
    return f"[scope] capability check failed: {repo}#{number}"


def scope_body(*, pr_ref: str, task: str | None, head_sha: str, problems: Iterable[str]) -> str:
    """A scope-violation issue: which task, which head, each problem on its own line."""
    items = [f"- {md(p)}" for p in problems] or ["- (none)"]
    return "\n".join(
        [
            f"## Capability check failed for {ref(pr_ref)}",
            "",
            f"- task: {md(task) if task else 'none linked'}",
            f"- head: {short_sha(head_sha)}",
            "",
            *items,
            "",
            "L1.C3 fails until the PR stays inside its task's allowed_resources "
            "(or an owner dispatches a task with the scope it needs).",
        ]
    )


def escalation_title(task: str, layer: str) -> str:
    """Title of an escalation issue raised by scope-guard / finish-task."""
    return f"[scope] escalation from {layer}: task {task}"[:240]


def escalation_body(record: Mapping[str, Any]) -> str:
    """An escalation issue: the record's facts, one violation per line."""
    lines = [
        f"## Escalation: task {md(record.get('task', '?'))} went out of scope",
        "",
        f"- raised by: {md(record.get('layer', '?'))}",
        f"- at: {md(record.get('when', '?'))}",
        f"- record: {md(record.get('id', '?'))}",
        "",
    ]
    for v in record.get("violations") or ():
        if isinstance(v, Mapping):
            lines.append(f"- {md(v.get('subject', ''))}: {md(v.get('reason', ''))}")
    lines += ["", "An owner decides: widen the task's scope (a new dispatch) or drop the change."]
    return "\n".join(lines)


def new_round_comment(old_sha: str, new_sha: str, round_no: int, voided: str | None) -> str:
    """Posted on the ballot issue when the PR head moved and a new round starts."""
    text = f"New round for head {new_sha}.\n\n" + checks.new_round_comment(
        old_sha, new_sha, round_no
    )
    if voided:
        text += f"\n\nThe approval given for {short_sha(voided)} is void."
    return text


def round_reason(why: RoundReason | None, old_base: str, new_base: str) -> str:
    """Why a ballot round ended, in words (audit records and the new-round comment)."""
    if why is RoundReason.BASE_CHANGED:
        return f"the PR's base changed from {old_base or '?'} to {new_base}"
    if why is RoundReason.REOPENED_AFTER_REJECTION:
        return "the PR was reopened after an owner's rejection closed it"
    if why is RoundReason.ISSUE_RESTORED:
        return "the ballot was edited by someone else"
    return "the PR's head moved"


def rebound_round_comment(
    why: str, head_sha: str, base_ref: str, round_no: int, voided: str | None
) -> str:
    """Posted on the ballot issue when a new round starts for the same head (base retargeted,
    PR reopened after a rejection)."""
    text = (
        f"New round for head {head_sha} into `{md(base_ref)}`: {md(why)}.\n\n"
        f"This is round {round_no}: earlier votes and reactions no longer count, whatever "
        "happens to them now. Owners, please answer again (remove and re-add a reaction to "
        "re-vote with it)."
    )
    if voided:
        text += f"\n\nThe approval given for {short_sha(voided)} is void."
    return text


def outcome_comment(outcome: BallotOutcome, *, shadow: bool) -> str:
    """Posted on the ballot issue when an owner's answer changes the ballot's state."""
    tail = " (shadow mode: nothing is merged or closed)" if shadow else ""
    why = md(outcome.reason)
    sha = short_sha(outcome.head_sha)
    if outcome.status.mergeable:
        return (
            f"Approved ({why}) for {sha}: it merges at exactly that sha once its checks pass{tail}."
        )
    if outcome.status is BallotStatus.DEFERRED:
        return (
            f"Deferred ({why}): labelled decision:deferred; not mergeable until an owner approves."
        )
    if outcome.status is BallotStatus.REJECTED:
        return f"Rejected ({why}): the PR is closed{tail}."
    return f"Back to pending: {why}."


def passive_close_comment(days: float) -> str:
    """Posted when a passive review closes by itself."""
    return f"Closing: no owner commented within {days:g} days (passive review)."


def gone_comment(state: str) -> str:
    """Posted on a ballot when its PR is no longer open."""
    return f"Closing this ballot: the PR was {state} outside the ballot."


def settled_comment(kind: str, state: str, merge_sha: str | None) -> str:
    """Posted when a decision issue closes because its PR left: the PR's outcome."""
    noun = {"ballot": "ballot", "one-tap": "one-tap request", "scope-violation": "scope issue"}
    what = noun.get(kind, "review issue")
    if state == "merged":
        sha = f" (merge commit {short_sha(merge_sha)})" if merge_sha else ""
        return f"The PR was merged{sha}: this {what} is settled."
    return f"The PR was closed without merging: this {what} is settled."


def restored_comment(kind: str, what: str, round_no: int | None = None) -> str:
    """Posted when someone else edited (or closed) one of the bot's decision issues."""
    noun = "ballot" if kind == "ballot" else "review issue"
    text = (
        f"This {noun} was {what} by someone other than capdaemon. Its text was restored to "
        "what capdaemon wrote; only that text describes the change."
    )
    if round_no is not None:
        text += (
            f"\n\nA new round ({round_no}) starts for the same head: votes cast before this "
            "comment do not count. Please read the ballot again and vote again."
        )
    return text

"""What the demo saw: decision issues and merges read back over REST, compared with the scenario."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capdaemon.audit import story
from capdaemon.demo.scenario import BOT_REPO, OWNER, PRS, REPO, DemoPR
from capdaemon.forge.markers import parse_marker
from ghsandbox import testing as std
from ghsandbox.rest import RestClient

Issue = tuple[int, str, tuple[str, ...]]  # a decision issue: number, state, labels


@dataclass
class DemoResult:
    """What the demo saw, per PR, and whether every expectation held."""

    root: Path
    base_url: str
    numbers: dict[str, int] = field(default_factory=dict)
    rows: list[list[str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every expected outcome happened."""
        return not self.failures


def _issues_by_pr(api: RestClient) -> dict[str, list[Issue]]:
    """Decision issues in the bot repo, by the PR their marker names: (number, state, labels)."""
    out: dict[str, list[Issue]] = {}
    for issue in api.pages(f"/repos/{BOT_REPO}/issues", state="all"):
        marker = parse_marker(issue.get("body")) or {}
        if marker.get("pr"):
            out.setdefault(marker["pr"], []).append(
                (
                    int(issue["number"]),
                    str(issue["state"]),
                    tuple(str(lb["name"]) for lb in issue.get("labels") or ()),
                )
            )
    return out


def _last_classification(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The PR's last classification record in the audit story ({} when there is none)."""
    classes = [r for r in records if "quadrant" in r and "action" not in r]
    return classes[-1] if classes else {}


def _action(pr: DemoPR, merged: bool, blocking: bool, mine: list[Issue]) -> str:
    """The table's action column: what happened to the PR, and its decision issues."""
    if merged:
        action = "merged"
        if pr.expect == "merged-after-approval":
            action = f"ballot approved by {OWNER} → merged"
    elif blocking:
        action = "blocked: L1.C3 failed (scope violation)"
    else:
        action = "waiting: owner ballot pending"
    kinds = ", ".join(
        f"#{n} {'/'.join(lb.split(':')[-1] for lb in labels)} ({state})"
        for n, state, labels in mine
    )
    if kinds:
        action += f"; issues {kinds}"
    return action


def _failures(
    pr: DemoPR, quadrant: str, merged: bool, mine: list[Issue], last: dict[str, Any]
) -> list[str]:
    """Each way the PR's outcome differs from what the scenario expects (none: as expected)."""
    out: list[str] = []
    if quadrant != pr.expect_quadrant:
        out.append(f"quadrant {quadrant}, expected {pr.expect_quadrant}")
    want_merged = pr.expect in ("merged", "merged-after-approval")
    if merged != want_merged:
        out.append(f"merged={merged}, expected {want_merged}")
    if pr.expect == "blocked-scope" and not any(
        "decision:scope-violation" in lb for _, _, lb in mine
    ):
        out.append("no decision:scope-violation issue")
    if pr.expect_quadrant in ("B", "C") and not mine:
        out.append("no passive review issue")
    if pr.self_label:
        fired = {r.get("rule"): r for r in last.get("rules_fired", [])}
        if fired.get("auto_revert_marker", {}).get("result") != "abstain":
            out.append("the self-applied label was not ignored")
    return out


def check_outcomes(base_url: str, state_dir: Path, result: DemoResult) -> None:
    """Compare what happened with what each PR expects; fill the table rows and the failures."""
    api = RestClient(base_url, std.token_for(OWNER))
    issues = _issues_by_pr(api)
    for pr in PRS:
        number = result.numbers[pr.key]
        ref = f"{REPO}#{number}"
        last = _last_classification(story(state_dir, ref))
        quadrant = last.get("quadrant", "?")
        merged = bool(api.get(f"/repos/{REPO}/pulls/{number}").get("merged"))
        mine = issues.get(ref, [])
        action = _action(pr, merged, bool(last.get("blocking", [])), mine)
        files = ", ".join(("-" if t is None else "") + p for p, t in pr.files.items())
        result.rows.append([f"#{number}", files, quadrant, last.get("reasoning", ""), action])
        for failure in _failures(pr, quadrant, merged, mine, last):
            result.failures.append(f"{ref} ({pr.key}): {failure}")

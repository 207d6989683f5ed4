"""What the demo saw: decision issues and merges read back over REST, compared with the scenario."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from capdaemon.audit import story
from capdaemon.demo.scenario import BOT_REPO, OWNER, PRS, REPO
from capdaemon.forge.markers import parse_marker
from ghsandbox import testing as std
from ghsandbox.rest import RestClient


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


def _issues_by_pr(api: RestClient) -> dict[str, list[tuple[int, str, tuple[str, ...]]]]:
    """Decision issues in the bot repo, by the PR their marker names: (number, state, labels)."""
    out: dict[str, list[tuple[int, str, tuple[str, ...]]]] = {}
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


def check_outcomes(base_url: str, state_dir: Path, result: DemoResult) -> None:
    """Compare what happened with what each PR expects; fill the table rows and the failures."""
    api = RestClient(base_url, std.token_for(OWNER))
    issues = _issues_by_pr(api)
    for pr in PRS:
        number = result.numbers[pr.key]
        ref = f"{REPO}#{number}"
        records = story(state_dir, ref)
        classes = [r for r in records if "quadrant" in r and "action" not in r]
        quadrant = classes[-1]["quadrant"] if classes else "?"
        reasoning = classes[-1].get("reasoning", "") if classes else ""
        blocking = classes[-1].get("blocking", []) if classes else []
        merged = bool(api.get(f"/repos/{REPO}/pulls/{number}").get("merged"))
        mine = issues.get(ref, [])
        kinds = ", ".join(
            f"#{n} {'/'.join(lb.split(':')[-1] for lb in labels)} ({state})"
            for n, state, labels in mine
        )
        if merged:
            action = "merged"
            if pr.expect == "merged-after-approval":
                action = f"ballot approved by {OWNER} → merged"
        elif blocking:
            action = "blocked: L1.C3 failed (scope violation)"
        else:
            action = "waiting: owner ballot pending"
        if kinds:
            action += f"; issues {kinds}"
        files = ", ".join(("-" if t is None else "") + p for p, t in pr.files.items())
        result.rows.append([f"#{number}", files, quadrant, reasoning, action])
        if quadrant != pr.expect_quadrant:
            result.failures.append(
                f"{ref} ({pr.key}): quadrant {quadrant}, expected {pr.expect_quadrant}"
            )
        want_merged = pr.expect in ("merged", "merged-after-approval")
        if merged != want_merged:
            result.failures.append(f"{ref} ({pr.key}): merged={merged}, expected {want_merged}")
        if pr.expect == "blocked-scope" and not any(
            "decision:scope-violation" in lb for _, _, lb in mine
        ):
            result.failures.append(f"{ref} ({pr.key}): no decision:scope-violation issue")
        if pr.expect_quadrant in ("B", "C") and not mine:
            result.failures.append(f"{ref} ({pr.key}): no passive review issue")
        if pr.self_label:
            fired = (
                {r.get("rule"): r for r in classes[-1].get("rules_fired", [])} if classes else {}
            )
            if fired.get("auto_revert_marker", {}).get("result") != "abstain":
                result.failures.append(f"{ref} ({pr.key}): the self-applied label was not ignored")

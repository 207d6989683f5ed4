"""The tier overlay (SPEC 4.1): tier 1 merges, tier 2 one-tap (and its expiry), tier 3 ballot."""

from __future__ import annotations

import json
from datetime import timedelta

from capdaemon.config import TierConfig
from capdaemon.decide.tiers import Requirement, tier_for
from capdaemon.model import Quadrant
from tests.classify.classify_builders import added, modified

from .conftest import SESSION, SafetyHarness

EXAMPLE = {"examples/old.py": "print('v2')\n"}


def _task_pr(
    safe: SafetyHarness, task: str, files: dict[str, str], title: str = "task work"
) -> int:
    return safe.open_pr(files, title=title, trailers=f"{SESSION}\nTask-Id: {task}")


def _one_tap_issue(safe: SafetyHarness, number: int) -> object:
    ref = f"{safe.sb.repo}#{number}"
    found = [i for i in safe.issues("one-tap") if f"{ref}@" in i.body or ref in i.body]
    assert len(found) == 1, found
    return found[0]


def test_tier1_merges_by_quadrant(safe: SafetyHarness) -> None:
    """A level-1 tiered task with a small A change merges without any owner request."""
    safe.configure()
    safe.task("t-1", level=1)
    number = _task_pr(safe, "t-1", EXAMPLE)
    safe.tick()
    assert safe.pull(number).merged
    assert not safe.issues("one-tap") and not safe.issues("ballot")


def test_tier2_needs_one_owner_tap(safe: SafetyHarness) -> None:
    """Level 2 opens a decision:one-tap issue, fails L1.C3, and merges after one owner 👍."""
    safe.configure()
    safe.task("t-2", level=2)
    number = _task_pr(safe, "t-2", EXAMPLE)
    safe.tick()
    assert not safe.pull(number).merged
    issue = _one_tap_issue(safe, number)
    assert "decision:one-tap" in [lb.name for lb in issue.labels]  # type: ignore[attr-defined]
    assert safe.check(number).conclusion == "failure"
    safe.gh("agent-1").get_repo(safe.sb.bot_repo).get_issue(issue.number).create_reaction("+1")  # type: ignore[attr-defined]
    safe.tick()
    assert not safe.pull(number).merged  # the author's/agent's 👍 does not count
    safe.gh("bob").get_repo(safe.sb.bot_repo).get_issue(issue.number).create_reaction("+1")  # type: ignore[attr-defined]
    safe.tick()
    safe.tick()
    assert safe.pull(number).merged
    assert safe.actions("one_tap", number)[0]["by"] == "bob"


def test_tier2_one_tap_expires_into_a_full_ballot(safe: SafetyHarness) -> None:
    """No 👍 in time: the one-tap expires into a pending-owner ballot; `/approve A` merges."""
    safe.configure(tiers={"one_tap_ttl_hours": 2})
    safe.task("t-3", level=2)
    number = _task_pr(safe, "t-3", EXAMPLE)
    safe.tick()
    assert not safe.issues("ballot")
    safe.advance(hours=3)
    safe.tick()
    assert safe.actions("one_tap", number)[0]["status"] == "expired"
    safe.tick()
    ballot = safe.issue_for(number, "ballot")
    assert "decision:pending-owner" in [lb.name for lb in ballot.labels]
    assert _one_tap_issue(safe, number).state == "closed"  # type: ignore[attr-defined]
    safe.ballot(number, "alice").create_comment("/approve A")
    safe.tick()
    safe.tick()
    assert safe.pull(number).merged


def test_tier3_protected_path_needs_a_ballot(safe: SafetyHarness) -> None:
    """An AGENTS.md change under a tiered task needs a full ballot though its quadrant is not D."""
    safe.configure()
    safe.task("t-4", level=1)
    number = _task_pr(safe, "t-4", {"AGENTS.md": "# Agents\n\nBe careful.\n"}, title="instructions")
    safe.tick()
    assert safe.classifications(number)[-1]["quadrant"] != "D"
    tier = safe.actions("tier", number)[0]
    assert tier["tier"] == 3 and "protected path AGENTS.md" in tier["reasons"][0]
    assert safe.check(number).conclusion == "failure"
    safe.ballot(number, "alice").create_comment("/approve A")
    safe.tick()
    safe.tick()
    assert safe.pull(number).merged


def test_auto_skips_only_the_one_tap_and_manual_never_merges(safe: SafetyHarness) -> None:
    """merge_policy auto merges a level-2 task's A change (tier 2's one-tap skipped) but a
    level-3 task waits for a ballot (tier 3 is a floor); manual never auto-merges."""
    safe.configure()
    safe.task("t-auto2", level=2, policy="auto")
    safe.task("t-auto3", level=3, policy="auto")
    safe.task("t-man", level=0, policy="manual")
    auto2 = _task_pr(safe, "t-auto2", EXAMPLE, title="auto level 2")
    auto3 = _task_pr(safe, "t-auto3", {"examples/a3.py": "print(3)\n"}, title="auto level 3")
    manual = _task_pr(safe, "t-man", {"examples/m.py": "print('m')\n"}, title="manual")
    safe.tick()
    safe.tick()
    assert safe.pull(auto2).merged and not safe.issues("one-tap")
    assert not safe.pull(auto3).merged and not safe.pull(manual).merged
    assert safe.check(auto3).conclusion == "failure"
    safe.ballot(auto3, "alice").create_comment("/approve A")
    safe.tick()
    safe.tick()
    assert safe.pull(auto3).merged


def test_tier_table() -> None:
    """Manifests, big diffs, many files, production paths raise the tier; no level adds nothing."""
    cfg = TierConfig()
    big = modified("src/a.py", ["x"], ["y"], additions=150, deletions=150)
    cases = [
        ([added("docs/guide/a.md")], None, 1),
        ([added("requirements.txt")], 1, 2),
        ([big], 1, 2),
        ([added(f"f{i}.txt") for i in range(21)], 0, 2),
        ([added("a.txt"), added("b.txt")], 0, 2),
        ([added("deploy/app.yaml")], 0, 3),
        ([added("CLAUDE.md")], 0, 3),
        ([added("docs/guide/a.md")], 3, 3),
    ]
    for files, level, tier in cases:
        assert tier_for(level, files, cfg, "tiered").tier == tier, (files[0].path, level)
    assert tier_for(3, [], cfg, "auto").requirement is Requirement.BALLOT
    assert tier_for(2, [], cfg, "auto").requirement is Requirement.NONE
    assert timedelta(hours=cfg.one_tap_ttl_hours) == timedelta(hours=24)


def test_a_tier_recorded_under_the_old_no_task_policy_is_computed_again(
    safe: SafetyHarness,
) -> None:
    """safety.json written when a PR without a task was judged under `auto`: the next tick
    computes its tier again under `tiered` (it is not left on the "not computed" fallback)."""
    safe.configure()
    number = safe.open_pr({"AGENTS.md": "# Agents\n"}, title="no task")
    safe.tick()
    safe.stop()
    path = safe.state_dir / "safety.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    ref = f"{safe.sb.repo}#{number}"
    data["tiers"][ref]["merge_policy"] = "auto"
    path.write_text(json.dumps(data), encoding="utf-8")
    safe.tick()
    entry = safe.safety()["tiers"][ref]
    assert entry["merge_policy"] == "tiered" and entry["tier"] == 3
    assert "protected path AGENTS.md" in entry["reasons"][0]


def test_needs_an_owners_ballot_has_one_answer_for_quadrant_and_tier(
    safe: SafetyHarness,
) -> None:
    """A D quadrant needs a ballot whatever the tier; a tier-3 head (protected path) needs one
    whatever the quadrant; a tier-1 head of another quadrant does not."""
    safe.configure()
    safe.task("t-1", level=1)
    small = _task_pr(safe, "t-1", EXAMPLE)
    protected = safe.open_pr({"AGENTS.md": "# Agents\n"}, title="no task")
    safe.tick()
    ticker = safe.ticker or safe.start()
    tiers = ticker.safety.tiers
    tier1, tier3 = (ticker.prs.get(safe.sb.repo, n) for n in (small, protected))
    assert tier1 is not None and tier3 is not None
    assert not tiers.needs_ballot(tier1, Quadrant.A) and not tiers.needs_ballot(tier1, None)
    assert tiers.needs_ballot(tier1, Quadrant.D)
    assert all(tiers.needs_ballot(tier3, q) for q in (None, *Quadrant))

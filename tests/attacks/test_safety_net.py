"""Attacks on the safety net end to end: one-tap, tiers, breaker, reverts, probes, burn-in,
random review and protection drift. Every test names the attack and the refusal expected."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from capdaemon.config import TierConfig
from capdaemon.decide.burnin import AgentClock, BurnInStatus
from capdaemon.decide.probe import ProbeWatch, evaluate_probe, reverts_in_window
from capdaemon.decide.review import sampled
from capdaemon.decide.tiers import OneTapState, one_tap_state, tier_for
from capdaemon.forge.types import Reaction
from capdaemon.model import CheckRun, FileChange, FileStatus
from capdaemon.state import StateError
from tests.safety.conftest import SESSION, SafetyHarness

EXAMPLE = {"examples/old.py": "print('v2')\n"}
T = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)


def _task_pr(safe: SafetyHarness, task: str, files: dict[str, str], user: str = "agent-1") -> int:
    return safe.open_pr(files, title="task work", trailers=f"{SESSION}\nTask-Id: {task}", user=user)


def _one_tap(safe: SafetyHarness, number: int, login: str) -> object:
    ref = f"{safe.sb.repo}#{number}"
    found = [i for i in safe.issues("one-tap") if f"{ref}@" in i.body and i.state == "open"]
    assert len(found) == 1, found
    return safe.gh(login).get_repo(safe.sb.bot_repo).get_issue(found[0].number)


def _tap(safe: SafetyHarness, number: int, login: str, content: str = "+1") -> None:
    _one_tap(safe, number, login).create_reaction(content)  # type: ignore[attr-defined]


def _fc(path: str, status: FileStatus = FileStatus.MODIFIED, prev: str | None = None) -> FileChange:
    return FileChange(path=path, status=status, previous_path=prev, additions=1, deletions=1)


# ============================================================================ one-tap
def test_one_tap_approved_by_a_non_owner_does_not_merge(safe: SafetyHarness) -> None:
    """A 👍 by a non-owner (mallory) on a one-tap request: refused, the tier-2 PR stays open."""
    safe.configure()
    safe.task("t-a", level=2)
    number = _task_pr(safe, "t-a", EXAMPLE)
    safe.tick()
    _tap(safe, number, "mallory")
    safe.tick()
    safe.tick()
    assert not safe.pull(number).merged and not safe.actions("one_tap", number)


def test_one_tap_approved_by_the_author_owner_does_not_merge(safe: SafetyHarness) -> None:
    """The PR author (an owner) taps 👍 on their own one-tap: refused; another owner's counts."""
    safe.configure()
    safe.task("t-b", level=2)
    number = _task_pr(safe, "t-b", EXAMPLE, user=safe.sb.owner)
    safe.tick()
    _tap(safe, number, safe.sb.owner)
    safe.tick()
    safe.tick()
    assert not safe.pull(number).merged
    _tap(safe, number, safe.sb.second_owner)
    safe.tick()
    safe.tick()
    assert safe.pull(number).merged
    assert safe.actions("one_tap", number)[-1]["by"] == safe.sb.second_owner


def test_one_tap_thumbs_up_before_a_push_does_not_approve_the_new_head(
    safe: SafetyHarness,
) -> None:
    """Owner 👍 approved head 1, which waits for a required check; the agent pushes head 2 and
    the check passes on it: refused, a new request for head 2."""
    safe.configure()
    safe.task("t-c", level=2)
    number = _task_pr(safe, "t-c", EXAMPLE)
    safe.tick()
    required = {"required_status_checks": {"strict": False, "contexts": ["ci/test"]}}
    safe.sb.set_protection(safe.sb.repo, "main", required)
    _tap(safe, number, "bob")
    safe.tick()  # approved for head 1, which waits for ci/test
    assert safe.actions("one_tap", number)[-1]["status"] == "approved"
    assert not safe.pull(number).merged
    safe.advance(minutes=1)
    head2 = safe.push(number, {"examples/other.py": "print('x')\n"})
    safe.ci(head2, "success", "ci/test")
    safe.tick()
    safe.tick()
    assert not safe.pull(number).merged
    assert safe.safety()["one_tap"][f"{safe.sb.repo}#{number}"]["head_sha"] == head2
    assert safe.safety()["one_tap"][f"{safe.sb.repo}#{number}"]["state"] == "pending"
    assert safe.check(number).conclusion == "failure"


def test_one_tap_expiry_boundary_is_exact() -> None:
    """A 👍 at exactly the deadline counts; one second later it does not (expired into a ballot)."""
    ttl = timedelta(hours=24)
    owners = {"alice", "bob"}

    def state(offset: timedelta, now: datetime) -> OneTapState:
        r = Reaction(1, "bob", "+1", T + offset)
        return one_tap_state(T, [r], owners, now, ttl, pr_author="agent-1").state

    assert state(ttl, T + ttl) is OneTapState.APPROVED
    assert state(ttl + timedelta(seconds=1), T + ttl + timedelta(seconds=1)) is OneTapState.EXPIRED
    assert state(-timedelta(seconds=1), T + timedelta(hours=1)) is OneTapState.PENDING  # pre-dated
    assert one_tap_state(T, [], owners, T + ttl, ttl).state is OneTapState.EXPIRED


# ============================================================================ tiers
@pytest.mark.parametrize(
    "files",
    [
        [_fc("agents.md")],
        [_fc("docs/Claude.MD")],
        [_fc(".GitHub/x")],
        [_fc(".GITHUB/workflows/ci.yml")],
        [_fc("docs/notes.md", FileStatus.RENAMED, "AGENTS.md")],
        [_fc("docs/ci.yml", FileStatus.RENAMED, ".github/workflows/ci.yml")],
        [_fc("AGENTS.md", FileStatus.RENAMED, "docs/notes.md")],
    ],
    ids=["lower", "nested-mixed-case", "dot-GitHub", "upper", "rename-from", "rename-wf", "to"],
)
def test_tier3_paths_survive_case_and_rename_tricks(files: list[FileChange]) -> None:
    """A protected path hidden by case (agents.md, .GitHub/x) or a rename (either side): tier 3."""
    td = tier_for(1, files, TierConfig(), "tiered")
    assert td.tier == 3 and td.requirement.value == "ballot", td


def test_tier2_many_files_split_vs_lockfile_rename() -> None:
    """With `many_files: 20`, many files split over two PRs (≤20 each) is tier 1 (fine); by
    default (the seed's "several files") two files are already tier 2; a lockfile rename:
    tier 2."""
    half = [_fc(f"examples/f{i}.py") for i in range(20)]
    twenty = TierConfig(many_files=20)
    assert tier_for(1, half, twenty, "tiered").tier == 1
    assert tier_for(1, [*half, _fc("examples/g.py")], twenty, "tiered").tier == 2
    assert tier_for(1, half[:2], TierConfig(), "tiered").tier == 2
    assert tier_for(1, half[:1], TierConfig(), "tiered").tier == 1
    renamed = [_fc("old/locks.txt", FileStatus.RENAMED, "poetry.lock")]
    assert tier_for(1, renamed, TierConfig(), "tiered").tier == 2
    into = [_fc("sub/Package-Lock.JSON", FileStatus.RENAMED, "examples/x.json")]
    assert tier_for(1, into, TierConfig(), "tiered").tier == 2


def test_tier3_lowercase_agents_md_needs_a_ballot_end_to_end(safe: SafetyHarness) -> None:
    """A level-1 tiered task renaming docs into `agents.md`: no merge without an owner ballot."""
    safe.configure()
    safe.sb.commit_files(safe.sb.repo, "main", {"docs/n.md": "hi\n"}, "docs", author=safe.sb.owner)
    safe.task("t-d", level=1)
    number = _task_pr(safe, "t-d", {"docs/n.md": None, "agents.md": "hi\n"})
    safe.tick()
    safe.tick()
    assert not safe.pull(number).merged
    assert safe.issue_for(number, "ballot").state == "open"
    assert safe.safety()["tiers"][f"{safe.sb.repo}#{number}"]["tier"] == 3


# ============================================================================ breaker
def _trip(safe: SafetyHarness, **extra: object) -> int:
    from capdaemon.decide.breaker import Incident, IncidentKind

    safe.configure(breaker={"threshold": 1, "window_hours": 24}, **extra)
    ticker = safe.start()
    ticker.safety.breaker.record(Incident(safe.sb.now(), IncidentKind.OTHER, "x"), safe.sb.now())
    safe.tick()
    issues = [i for i in safe.issues("incident") if i.state == "open"]
    assert len(issues) == 1
    return issues[0].number


def test_breaker_reset_on_a_random_review_issue_is_refused(safe: SafetyHarness) -> None:
    """An owner's `/breaker reset` on a random-review issue, not the incident one: still tripped."""
    safe.configure(random_review_share=1.0)
    safe.open_pr(EXAMPLE)
    safe.tick()
    safe.step7()
    review = safe.issues("random-review")[0]
    number = _trip(safe, random_review_share=1.0)
    assert review.number != number
    safe.gh("alice").get_repo(safe.sb.bot_repo).get_issue(review.number).create_comment(
        "/breaker reset"
    )
    safe.tick()
    safe.tick()
    assert safe.breaker().tripped and not safe.actions("breaker.reset")


def test_breaker_reset_quoted_or_edited_on_the_incident_issue_is_refused(
    safe: SafetyHarness,
) -> None:
    """`> /breaker reset` quoted, or a comment edited into `/breaker reset`: still tripped."""
    number = _trip(safe)
    issue = safe.gh("alice").get_repo(safe.sb.bot_repo).get_issue(number)
    issue.create_comment("> /breaker reset\n\nshould we?")
    comment = issue.create_comment("looking into it")
    safe.tick()
    safe.advance(seconds=30)
    comment.edit("/breaker reset")
    safe.tick()
    assert safe.breaker().tripped and not safe.actions("breaker.reset")
    late = issue.create_comment("thinking")
    safe.advance(seconds=30)
    late.edit("/breaker reset")  # edited before the daemon ever read it
    safe.tick()
    assert safe.breaker().tripped
    assert any(r["reason"] == "edited after posting" for r in safe.actions("command_ignored"))


def test_deleting_breaker_json_while_tripped_is_refused(safe: SafetyHarness) -> None:
    """breaker.json deleted while tripped (no reset audited): refused, never silently closed."""
    _trip(safe)
    (safe.state_dir / "breaker.json").unlink()
    ticker = safe.ticker or safe.start()
    with pytest.raises(StateError, match="breaker"):
        ticker.safety.breaker.state()


def test_agent_labelled_revert_lookalike_gets_no_breaker_exception(safe: SafetyHarness) -> None:
    """An agent labels its own 'Revert …' PR decision:auto-revert while tripped: blocked."""
    _trip(safe)
    sneaky = safe.open_pr({"examples/old.py": "print('v1')\n"}, title="Revert acme/widgets#1")
    safe.gh("agent-1").get_repo(safe.sb.repo).get_issue(sneaky).add_to_labels(
        "decision:auto-revert"
    )
    safe.tick()
    safe.tick()
    assert not safe.pull(sneaky).merged


def test_agent_push_onto_the_bots_revert_branch_gets_no_exception(safe: SafetyHarness) -> None:
    """An agent pushes a payload onto the bot's revert PR: blocked while tripped."""
    safe.configure(post_merge={"auto_revert_pr": True}, breaker={"threshold": 1})
    bad = safe.open_pr(EXAMPLE)
    safe.tick()
    safe.ci(safe.merge_sha(bad), "failure")
    safe.step7()
    revert_no = next(r for r in safe.actions("revert") if r["status"] == "done")["revert_pr"]
    safe.advance(minutes=1)
    safe.push(revert_no, {"examples/payload.py": "print('p')\n"}, user="agent-1")
    safe.tick()
    safe.tick()
    assert safe.breaker().tripped and not safe.pull(revert_no).merged


# ============================================================================ reverts and probes
def test_revert_cap_holds_across_utc_midnight_and_a_restart(safe: SafetyHarness) -> None:
    """Cap 1: revert at 23:50 UTC, restart, another failure at 00:10: incident only, no 2nd PR."""
    safe.configure(post_merge={"auto_revert_pr": True, "revert_daily_cap": 1},
                   breaker={"threshold": 10})  # fmt: skip
    safe.advance(hours=20, minutes=50)  # 23:50 UTC
    first = safe.open_pr(EXAMPLE)
    safe.tick()
    safe.ci(safe.merge_sha(first), "failure")
    safe.step7()
    assert [r["status"] for r in safe.actions("revert")] == ["attempted", "done"]
    safe.stop()  # restart
    safe.advance(minutes=20)  # 00:10 UTC the next day
    second = safe.open_pr({"examples/two.py": "print(2)\n"})
    safe.tick()
    safe.tick()  # a merge earlier in the tick moved main: GitHub recomputes mergeability first
    assert safe.pull(second).merged
    safe.ci(safe.merge_sha(second), "failure")
    safe.step7()
    failed = safe.actions("probe.failed", second)
    assert failed and failed[-1]["revert"] == "incident_only" and "cap" in failed[-1]["reason"]
    assert len([r for r in safe.actions("revert") if r["status"] == "done"]) == 1


def test_revert_cap_is_a_rolling_window_counting_future_times() -> None:
    """Reverts at 23:59 and 00:01 count together; a future-dated (tampered) revert counts too."""
    now = datetime(2026, 5, 26, 0, 5, tzinfo=UTC)
    times = [now - timedelta(minutes=6), now - timedelta(minutes=4), now + timedelta(days=3)]
    assert reverts_in_window(times, now) == 3
    assert reverts_in_window([now - timedelta(hours=25)], now) == 0


def test_probe_failure_on_a_merge_the_bot_did_not_make_is_never_auto_reverted(
    safe: SafetyHarness,
) -> None:
    """A reconciled merge whose merged head is not the bot's: probe fails → incident only."""
    safe.configure(post_merge={"auto_revert_pr": True}, breaker={"threshold": 10})
    number = safe.open_pr({".github/workflows/ci.yml": "name: evil\n"}, title="D change")
    ticker = safe.start()
    safe.tick()
    assert not safe.pull(number).merged
    pull = safe.gh(safe.sb.owner).get_repo(safe.sb.repo).get_pull(number)
    pull.merge(merge_method="squash")  # a human merged it, not capdaemon
    merge_sha = safe.pull(number).merge_commit_sha
    ticker.actions_log.append(
        {"action": "merge", "pr": f"{safe.sb.repo}#{number}", "head_sha": "0" * 40,
         "reconciled": True, "status": "done", "merge_sha": merge_sha},
        now=safe.sb.now(),
    )  # fmt: skip
    safe.ci(merge_sha, "failure")
    safe.step7()
    failed = safe.actions("probe.failed", number)
    assert failed and failed[-1]["revert"] == "incident_only"
    assert not [r for r in safe.actions("revert") if r["status"] == "done"]


def test_another_apps_green_run_does_not_mask_a_failed_probe() -> None:
    """A later green run of the same check name from another source never hides a failure."""
    watch = ProbeWatch("o/r", 1, "m" * 40, 1, T)
    failed = CheckRun("build", "completed", "failure", "ci", 1, completed_at=T, id=1)
    forged = CheckRun("build", "completed", "success", "evil", 9,
                      completed_at=T + timedelta(minutes=1), id=2)  # fmt: skip
    res = evaluate_probe(watch, [failed, forged], T + timedelta(hours=2), _pm())
    assert res.status.value == "failed"


def _pm() -> object:
    from capdaemon.config import PostMergeConfig

    return PostMergeConfig()


# ============================================================================ burn-in
def _observed(safe: SafetyHarness) -> None:
    safe.configure()
    safe.open_pr({".github/workflows/ci.yml": "name: ci2\n"}, title="CI")
    safe.tick()
    assert safe.actions("burn_in.observed")


def test_malformed_burn_in_state_is_refused(safe: SafetyHarness) -> None:
    """safety.json's burn_in replaced by garbage: refused (StateError), never rewritten."""
    _observed(safe)
    safe.stop()
    path: Path = safe.state_dir / "safety.json"
    data = json.loads(path.read_text())
    data["burn_in"] = {"claude-code/claude-opus-4": {"first_seen": "soon"}}
    path.write_text(json.dumps(data))
    before = path.read_text()
    with pytest.raises(StateError):
        safe.tick()
    assert path.read_text() == before


def test_deleted_burn_in_clocks_are_refused_not_restarted(safe: SafetyHarness) -> None:
    """safety.json and the metrics mirror lose the clocks: refused, no silent fresh clock."""
    _observed(safe)
    safe.stop()
    (safe.state_dir / "safety.json").unlink()
    metrics = safe.state_dir / "tick_metrics.json"
    data = json.loads(metrics.read_text())
    data.pop("l4_burn_in", None)
    metrics.write_text(json.dumps(data))
    with pytest.raises(StateError, match="burn-in"):
        safe.start().safety.burn_in.state()


def test_undone_promotion_is_refused() -> None:
    """A promoted clock flipped back to burn_in (or an inconsistent clock): refused."""
    with pytest.raises(ValueError, match="disagree"):
        AgentClock("claude-code/claude-opus-4", T, T, BurnInStatus.BURN_IN, 0, promoted_at=T)
    with pytest.raises(ValueError, match="disagree"):
        AgentClock("claude-code/claude-opus-4", T, T, BurnInStatus.HARD_BLOCK)
    with pytest.raises(ValueError, match="first_seen"):
        AgentClock("claude-code/claude-opus-4", T, T - timedelta(days=1))


# ============================================================================ random review
def test_random_review_share_edges() -> None:
    """Share 0 never samples, share 1 always samples, a share outside [0, 1] is refused."""
    shas = [f"{i:040x}" for i in range(200)]
    assert not any(sampled("o/r", 1, s, 0.0) for s in shas)
    assert all(sampled("o/r", 1, s, 1.0) for s in shas)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises((ValueError, TypeError)):
            sampled("o/r", 1, shas[0], bad)


# ============================================================================ protection
def test_removing_only_the_app_pin_is_drift(safe: SafetyHarness) -> None:
    """After `protect`, someone keeps L1.C3 required but drops its App pin: a drift incident."""
    from capdaemon.cli import main as cli

    safe.configure()
    safe.state_dir.mkdir(parents=True, exist_ok=True)
    assert cli(["protect", safe.sb.repo, "--config", str(safe.config_dir),
                "--state", str(safe.state_dir)]) == 0  # fmt: skip
    safe.tick()
    safe.step7()
    body = {
        "required_status_checks": {"strict": False, "checks": [{"context": "L1.C3"}]},
        "enforce_admins": False,
        "required_pull_request_reviews": {"required_approving_review_count": 0},
        "restrictions": None,
        "allow_force_pushes": False,
        "allow_deletions": False,
    }  # the same protection, minus the App pin: any source may now satisfy L1.C3
    safe.gh(safe.sb.owner).requester.requestJsonAndCheck(
        "PUT", f"/repos/{safe.sb.repo}/branches/main/protection", input=body
    )
    prot = (safe.ticker or safe.start()).forge.get_protection(safe.sb.repo, "main")
    assert not [c for c in prot["required_status_checks"]["checks"] if c.get("app_id")]
    safe.step7()
    drift = safe.actions("protection.drift")
    assert len(drift) == 1 and "not pinned" in drift[0]["problems"][0]
    assert [i.kind.value for i in safe.breaker().incidents] == ["protection_drift"]


def test_agent_green_status_after_ci_failure_does_not_hide_the_probe_failure(
    safe: SafetyHarness,
) -> None:
    """CI fails on the merge commit, an agent then posts the same context green: still a failure."""
    safe.configure()
    number = safe.open_pr(EXAMPLE)
    safe.tick()
    sha = safe.merge_sha(number)
    safe.ci(sha, "failure")
    safe.gh("agent-1").get_repo(safe.sb.repo).get_commit(sha).create_status(
        state="success", context="ci/build"
    )
    safe.advance(hours=2)
    safe.step7()
    assert safe.actions("probe.failed", number)

"""Tier overlay (SPEC 4.1): tier per level and files, effective requirement, one-tap expiry."""

from __future__ import annotations

from datetime import timedelta

import pytest

from capdaemon.config import TierConfig
from capdaemon.config.types import PROTECTED_FAMILIES
from capdaemon.decide.tiers import (
    MERGE_POLICIES,
    OneTapRequest,
    OneTapState,
    Requirement,
    TierDecision,
    effective_requirement,
    one_tap_state,
    policy_of,
    tier_for,
)
from capdaemon.model import FileChange, FileStatus, Quadrant

from .factories import at, reaction

CFG = TierConfig()


def f(path: str, add: int = 1, rm: int = 0, *, prev: str | None = None) -> FileChange:
    """A modified (or renamed, with prev) file."""
    status = FileStatus.RENAMED if prev else FileStatus.MODIFIED
    return FileChange(path, status, previous_path=prev, additions=add, deletions=rm)


TIER_CASES = [
    ("small-level-0", 0, [f("src/app.py")], 1, ""),
    ("small-level-1", 1, [f("src/app.py", 100, 99)], 1, ""),
    ("no-task-level", None, [f("src/app.py")], 1, ""),
    ("level-2", 2, [f("src/app.py")], 2, "task level 2"),
    ("21-files", 1, [f(f"src/m{i}.py") for i in range(21)], 2, "21 files changed"),
    ("two-files-are-several", 1, [f("src/a.py"), f("src/b.py")], 2, "2 files changed"),
    ("one-file-is-single", 1, [f("src/a.py")], 1, ""),
    ("lockfile", 1, [f("web/package-lock.json")], 2, "dependency manifest"),
    ("pyproject", 0, [f("pyproject.toml")], 2, "dependency manifest"),
    ("requirements", 0, [f("requirements-dev.txt")], 2, "dependency manifest"),
    ("300-lines", 1, [f("src/a.py", 200, 100)], 2, "300 changed lines"),
    ("299-lines", 1, [f("src/a.py", 200, 99)], 1, ""),
    ("level-3", 3, [f("src/app.py")], 3, "task level 3"),
    ("level-5", 5, [f("src/app.py")], 3, "task level 5"),
    ("claude-md", 0, [f("CLAUDE.md")], 3, "protected path CLAUDE.md"),
    ("nested-agents-md", 0, [f("pkg/AGENTS.md")], 3, "protected path"),
    ("github-dir", 0, [f(".github/dependabot.yml")], 3, "protected path"),
    ("github-case", 0, [f(".GitHub/x.yml")], 3, "protected path"),
    ("memory", 1, [f("memory/plans/p.md")], 3, "protected path"),
    ("bot-settings", 1, [f("config/bot_settings.yml")], 3, "protected path"),
    ("production", 1, [f("deploy/prod.yml")], 3, "production path"),
    ("production-name", 1, [f("conf/production.ini")], 3, "production path"),
    ("external-key", 1, [f("keys/service.pem")], 3, "external key"),
    ("rename-from-protected", 1, [f("docs/x.md", prev="CLAUDE.md")], 3, "protected path"),
    ("tier3-beats-tier2", 2, [f("CLAUDE.md"), f("poetry.lock")], 3, "protected path"),
]


@pytest.mark.parametrize(
    ("level", "files", "tier", "reason"),
    [c[1:] for c in TIER_CASES],
    ids=[c[0] for c in TIER_CASES],
)
def test_tier_table(level, files, tier: int, reason: str) -> None:
    """Each level and file set gets the expected tier, with a reason naming the cause."""
    d = tier_for(level, files, CFG, "tiered")
    assert d.tier == tier
    assert (reason in "; ".join(d.reasons)) if reason else d.reasons == ()


def test_custom_thresholds() -> None:
    """many_files and large_diff_lines come from the config."""
    cfg = TierConfig(many_files=2, large_diff_lines=10)
    assert tier_for(0, [f("a"), f("b"), f("c")], cfg, "tiered").tier == 2
    assert tier_for(0, [f("a", 10)], cfg, "tiered").tier == 2


def test_secret_globs_parameter() -> None:
    """External keys use the secret globs passed in."""
    assert tier_for(0, [f("vault/x.token")], CFG, "tiered").tier == 1
    assert tier_for(0, [f("vault/x.token")], CFG, "tiered", secret_globs=("**/*.token",)).tier == 3


REQ_CASES = [
    ("auto-tier3-is-a-floor", "auto", 3, Quadrant.A, Requirement.BALLOT),
    ("auto-skips-one-tap", "auto", 2, Quadrant.A, Requirement.NONE),
    ("auto-d-ballot", "auto", 1, Quadrant.D, Requirement.BALLOT),
    ("tiered-1-a", "tiered", 1, Quadrant.A, Requirement.NONE),
    ("tiered-2-a", "tiered", 2, Quadrant.A, Requirement.ONE_TAP),
    ("tiered-2-b", "tiered", 2, Quadrant.B, Requirement.ONE_TAP),
    ("tiered-3-c", "tiered", 3, Quadrant.C, Requirement.BALLOT),
    ("tiered-2-d-is-ballot", "tiered", 2, Quadrant.D, Requirement.BALLOT),
    ("manual-never", "manual", 1, Quadrant.A, Requirement.NEVER),
    ("manual-d-never", "manual", 3, Quadrant.D, Requirement.NEVER),
]


@pytest.mark.parametrize(
    ("policy", "tier", "quadrant", "req"), [c[1:] for c in REQ_CASES], ids=[c[0] for c in REQ_CASES]
)
def test_effective_requirement(policy, tier, quadrant, req) -> None:
    """The effective requirement is the higher of quadrant and tier; manual never merges."""
    assert effective_requirement(quadrant, TierDecision(tier, (), policy)) is req


def test_tier3_floor_binds_every_policy_and_no_task_is_tiered() -> None:
    """Tier 3 needs an owner's ballot under auto, tiered and manual (a human merges after
    it); a PR without a task is judged as tiered, so leaving Task-Id out loosens nothing."""
    for policy in MERGE_POLICIES:
        assert TierDecision(3, (), policy).owner_requirement is Requirement.BALLOT
    assert policy_of(None) == "tiered" and policy_of("manual") == "manual"
    no_task = tier_for(None, [f("AGENTS.md")], CFG, policy_of(None))
    assert effective_requirement(Quadrant.B, no_task) is Requirement.BALLOT
    two = tier_for(None, [f("a.py"), f("b.py")], CFG, policy_of(None))
    assert effective_requirement(Quadrant.A, two) is Requirement.ONE_TAP


# One example per protected family of the seed (agent instructions, bot settings in any
# folder and format, memory, .github, production, external keys), each tier 3.
FAMILY_CASES = [
    ("claude-md-nested", "svc/CLAUDE.md", "protected path"),
    ("agents-md", "AGENTS.md", "protected path"),
    ("claude-dir", "tools/.claude/settings.local.json", "protected path"),
    ("cursor-rules", ".cursorrules", "protected path"),
    ("bot-settings-root-json", "bot_settings.json", "protected path"),
    ("bot-settings-nested-yaml", "services/bot/bot_settings.yaml", "protected path"),
    ("bot-settings-toml", "bot-settings.toml", "protected path"),
    ("cron-settings", "cron_settings.json", "protected path"),
    ("settings-folder", "app/settings/prod.py", "protected path"),
    ("bot-config", "bot.config.ini", "protected path"),
    ("memory-root", "memory/events/x.cron-daily", "protected path"),
    ("memory-nested", "agents/memory/notes.md", "protected path"),
    ("github-root", ".github/CODEOWNERS", "protected path"),
    ("github-nested", "pkg/.github/workflows/ci.yml", "protected path"),
    ("env-file", "services/.env.local", "protected path"),
    ("production-deploy", "deploy/app.yaml", "production path"),
    ("production-prod-dir", "ops/prod/db.yaml", "production path"),
    ("external-key-pem", "examples/certs/server.pem", "external key"),
    ("external-key-secret", "examples/api_secret.txt", "external key"),
]


@pytest.mark.parametrize(
    ("path", "reason"), [c[1:] for c in FAMILY_CASES], ids=[c[0] for c in FAMILY_CASES]
)
def test_protected_families_are_tier3(path: str, reason: str) -> None:
    """Each protected family of the seed is tier 3 by default, at level 0, a single file."""
    d = tier_for(0, [f(path)], CFG, "auto")
    assert d.tier == 3 and reason in "; ".join(d.reasons), d
    assert d.requirement is Requirement.BALLOT


def test_every_protected_family_is_in_the_default_list() -> None:
    """The default protected list is the union of the named families (one home)."""
    assert set(CFG.protected_globs) == {g for fam in PROTECTED_FAMILIES.values() for g in fam}
    assert {"agent instructions", "bot settings", "memory", "GitHub configuration"} <= set(
        PROTECTED_FAMILIES
    )


@pytest.mark.parametrize("bad", ["sometimes", "", "AUTO"])
def test_bad_merge_policy(bad: str) -> None:
    """An unknown merge_policy is a ValueError."""
    with pytest.raises(ValueError, match="merge_policy"):
        tier_for(0, [], CFG, bad)


def test_negative_level() -> None:
    """A negative level is a ValueError."""
    with pytest.raises(ValueError, match="level"):
        tier_for(-1, [], CFG, "tiered")


TTL = timedelta(hours=24)
OWNERS = {"alice", "bob"}
ONE_TAP_CASES = [
    ("nothing-yet", [], at(hours=1), OneTapState.PENDING),
    ("owner-thumbs-up", [reaction("alice", "+1", at(5))], at(hours=1), OneTapState.APPROVED),
    (
        "approved-stays-after-ttl",
        [reaction("alice", "+1", at(5))],
        at(hours=48),
        OneTapState.APPROVED,
    ),
    ("expired", [], at(hours=24), OneTapState.EXPIRED),
    ("just-before-expiry", [], at(hours=24) - timedelta(seconds=1), OneTapState.PENDING),
    ("late-thumbs-up", [reaction("alice", "+1", at(hours=25))], at(hours=26), OneTapState.EXPIRED),
    (
        "thumbs-up-at-deadline",
        [reaction("alice", "+1", at(hours=24))],
        at(hours=26),
        OneTapState.APPROVED,
    ),
    ("non-owner", [reaction("mallory", "+1", at(5))], at(hours=1), OneTapState.PENDING),
    ("author-owner", [reaction("bob", "+1", at(5))], at(hours=1), OneTapState.PENDING),
    ("bot", [reaction("capdaemon[bot]", "+1", at(5))], at(hours=1), OneTapState.PENDING),
    ("before-opened", [reaction("alice", "+1", at(-5))], at(hours=1), OneTapState.PENDING),
    ("thumbs-down-escalates", [reaction("alice", "-1", at(5))], at(hours=1), OneTapState.EXPIRED),
    (
        "first-answer-wins",
        [reaction("alice", "+1", at(5)), reaction("alice", "-1", at(6))],
        at(hours=1),
        OneTapState.APPROVED,
    ),
]


@pytest.mark.parametrize(
    ("reactions", "now", "state"), [c[1:] for c in ONE_TAP_CASES], ids=[c[0] for c in ONE_TAP_CASES]
)
def test_one_tap_state(reactions, now, state: OneTapState) -> None:
    """One owner 👍 within the TTL approves; otherwise the request expires into a ballot."""
    res = one_tap_state(at(0), reactions, OWNERS | {"BOB"}, now, TTL, pr_author="Bob",
                        bot_login="capdaemon[bot]")  # fmt: skip
    assert res.state is state
    assert (res.approved_by is not None) is (state is OneTapState.APPROVED)


def test_one_tap_request_round_trip() -> None:
    """OneTapRequest survives to_json/from_json."""
    req = OneTapRequest("o/r", 3, "a" * 40, at(0), issue=9)
    assert OneTapRequest.from_json(req.to_json()) == req

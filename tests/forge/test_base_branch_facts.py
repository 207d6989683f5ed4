"""The page of open PRs carries the base branch's head and protection: no REST read, same answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capdaemon.daemon.core.tickdata import required_checks
from capdaemon.daemon.safety.protection import protection_problems
from capdaemon.forge.client import CHECK_NAME, Forge
from capdaemon.forge.convert import review_count
from ghsandbox import Sandbox
from ghsandbox.api_access import add_ruleset

PROTECTION_READS = (
    "GET /repos/{owner}/{repo}/branches/{branch}",
    "GET /repos/{owner}/{repo}/branches/{branch}/protection",
    "GET /repos/{owner}/{repo}/rules/branches/{branch}",
)


def _seen(sandbox: Sandbox) -> dict[str, int]:
    return {
        k: v["requests"]
        for k, v in sandbox.counters()["endpoints"].items()
        if v["requests"] and not k.endswith("/access_tokens")
    }


def _protect(sandbox: Sandbox, *, force: bool = False, reviews: bool = True) -> None:
    sandbox.backend.set_protection(
        sandbox.repo,
        "main",
        {
            "required_status_checks": {
                "strict": True,
                "checks": [{"context": CHECK_NAME, "app_id": sandbox.app_id}, {"context": "lint"}],
            },
            "enforce_admins": False,
            "required_pull_request_reviews": (
                {"required_approving_review_count": 1} if reviews else None
            ),
            "restrictions": None,
            "allow_force_pushes": force,
            "allow_deletions": False,
        },
    )


def _ruleset(sandbox: Sandbox, name: str, rules: list[dict[str, Any]]) -> None:
    add_ruleset(
        sandbox.backend,
        sandbox.repo,
        {
            "name": name,
            "enforcement": "active",
            "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
            "rules": rules,
        },
    )


CI_RULES = [
    {"type": "non_fast_forward"},
    {"type": "pull_request", "parameters": {"required_approving_review_count": 2}},
    {
        "type": "required_status_checks",
        "parameters": {
            "strict_required_status_checks_policy": False,
            "required_status_checks": [{"context": "ci", "integration_id": 4242}],
        },
    },
]


def _what_capdaemon_reads(prot: dict[str, Any] | None, app_id: int) -> tuple[Any, ...]:
    """Every judgement the daemon draws from an effective protection document."""
    return (
        protection_problems(prot, app_id),
        sorted(required_checks(prot or {}), key=str),
        review_count(prot),
        bool(((prot or {}).get("required_status_checks") or {}).get("strict")),
    )


def _via_rest(make_forge: Callable[..., Forge], sandbox: Sandbox) -> tuple[Any, ...]:
    rest = make_forge(app=True)
    prot = rest.effective_protection(sandbox.repo, "main")
    return _what_capdaemon_reads(prot, sandbox.app_id)


def test_carried_protection_equals_rest_and_costs_no_read(
    forge: Forge, make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """Classic protection plus a ruleset: the page's answer is the REST answer, with no branch,
    protection or rules request, and the policy file is read at the carried head."""
    open_pr({"docs/a.md": "a\n"})
    _protect(sandbox)
    _ruleset(sandbox, "ci", CI_RULES)
    sandbox.commit_files(sandbox.repo, "main", {".capdaemon.yml": "version: 1\n"}, "policy")
    expected = _via_rest(make_forge, sandbox)
    assert expected[0] == [] and expected[2] == 2  # the ruleset's 2 reviews win
    sandbox.reset_counters()
    forge.new_tick()
    forge.list_open_prs(sandbox.repo, "main")
    got = forge.effective_protection(sandbox.repo, "main")
    assert _what_capdaemon_reads(got, sandbox.app_id) == expected
    assert forge.policy_text(sandbox.repo, "main") == "version: 1\n"
    seen = _seen(sandbox)
    assert not set(seen) & set(PROTECTION_READS), seen
    assert seen["POST /graphql CapdaemonOpenPulls"] == 1


def test_a_weakened_protection_shows_in_the_next_tick(
    forge: Forge, make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """Attack: protection is weakened between two ticks (force pushes allowed, PRs no longer
    required). The next tick's page says so; nothing stale is kept across ticks."""
    open_pr({"docs/a.md": "a\n"})
    _protect(sandbox)
    forge.new_tick()
    forge.list_open_prs(sandbox.repo, "main")
    before = forge.effective_protection(sandbox.repo, "main")
    assert protection_problems(before, sandbox.app_id) == []
    _protect(sandbox, force=True, reviews=False)
    forge.new_tick()
    forge.list_open_prs(sandbox.repo, "main")
    got = forge.effective_protection(sandbox.repo, "main")
    assert protection_problems(got, sandbox.app_id) == [
        "force pushes are allowed",
        "pull requests are not required",
    ]
    assert _what_capdaemon_reads(got, sandbox.app_id) == _via_rest(make_forge, sandbox)


def test_unprotected_branch_is_carried_as_unprotected(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """No classic rule and no ruleset: None (not protected), still without a REST read."""
    open_pr({"docs/a.md": "a\n"})
    sandbox.reset_counters()
    forge.new_tick()
    forge.list_open_prs(sandbox.repo, "main")
    assert forge.effective_protection(sandbox.repo, "main") is None
    assert not set(_seen(sandbox)) & set(PROTECTION_READS)


def test_a_rule_hidden_from_us_is_never_taken_for_no_rule(
    make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """Attack on fail-closed: a caller without admin rights gets a null branchProtectionRule.
    That is not "unprotected": the page's base facts are dropped and REST is asked, whose
    refusal is an error (the protection cannot be read), never a silent None."""
    open_pr({"docs/a.md": "a\n"})
    _protect(sandbox)
    agent = make_forge(token=sandbox.tokens["agent-1"])  # write access, not admin
    sandbox.reset_counters()
    agent.new_tick()
    agent.list_open_prs(sandbox.repo, "main")
    try:
        got: Any = agent.effective_protection(sandbox.repo, "main")
    except Exception as exc:
        got = exc
    assert got is not None and not isinstance(got, dict)
    assert "GET /repos/{owner}/{repo}/branches/{branch}/protection" in _seen(sandbox)


def test_more_rules_than_a_page_fall_back_to_rest(
    forge: Forge, make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """Over 100 ruleset rules (the page holds 100): the rest could hold a required check, so the
    page's answer is not used; REST reads give the full answer."""
    open_pr({"docs/a.md": "a\n"})
    _protect(sandbox)
    _ruleset(sandbox, "ci", CI_RULES[2:])  # the one that matters: oldest, past the first page
    _ruleset(sandbox, "filler", [{"type": "deletion"}] * 100)
    sandbox.reset_counters()
    forge.new_tick()
    forge.list_open_prs(sandbox.repo, "main")
    got = forge.effective_protection(sandbox.repo, "main")
    assert "ci" in {c.context for c in required_checks(got or {})}
    assert "GET /repos/{owner}/{repo}/rules/branches/{branch}" in _seen(sandbox)

"""GraphQL ``Repository.ref``: head, classic rule and ruleset rules, the same state REST shows."""

from __future__ import annotations

from typing import Any

import github

from ghsandbox.api_access import add_ruleset

from .helpers import gh

REF = """
query($owner: String!, $name: String!, $ref: String!) {
  repository(owner: $owner, name: $name) {
    ref(qualifiedName: $ref) {
      name prefix
      target { __typename oid }
      refUpdateRule { pattern allowsForcePushes requiredApprovingReviewCount }
      branchProtectionRule {
        pattern isAdminEnforced allowsForcePushes allowsDeletions requiresApprovingReviews
        requiredApprovingReviewCount requiresStatusChecks requiresStrictStatusChecks
        requiredStatusChecks { context app { databaseId slug } }
      }
      rules(first: 10) {
        pageInfo { hasNextPage }
        nodes {
          type
          parameters {
            __typename
            ... on PullRequestParameters { requiredApprovingReviewCount }
            ... on RequiredStatusChecksParameters {
              strictRequiredStatusChecksPolicy requiredStatusChecks { context integrationId }
            }
          }
        }
      }
    }
  }
}
"""


def _ref(client: github.Github, ref: str = "refs/heads/main") -> Any:
    _headers, data = client.requester.graphql_query(
        REF, {"owner": "acme", "name": "widgets", "ref": ref}
    )
    assert "errors" not in data, data
    return data["data"]["repository"]["ref"]


def _protect(sandbox: Any) -> None:
    sandbox.backend.set_protection(
        "acme/widgets",
        "main",
        {
            "required_status_checks": {
                "strict": True,
                "checks": [{"context": "capdaemon/L1.C3", "app_id": sandbox.app_id}],
                "contexts": ["lint"],
            },
            "enforce_admins": True,
            "required_pull_request_reviews": {"required_approving_review_count": 1},
            "restrictions": None,
            "allow_force_pushes": False,
            "allow_deletions": True,
        },
    )


def test_ref_matches_the_rest_branch_protection_and_rules(sandbox: Any) -> None:
    """Head, classic rule and ruleset rules are what REST's branch, protection and
    rules/branches answers say (for the repo's admin)."""
    _protect(sandbox)
    add_ruleset(
        sandbox.backend,
        "acme/widgets",
        {
            "name": "ci",
            "enforcement": "active",
            "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
            "rules": [
                {"type": "non_fast_forward"},
                {
                    "type": "required_status_checks",
                    "parameters": {
                        "strict_required_status_checks_policy": True,
                        "required_status_checks": [{"context": "ci", "integration_id": 7}],
                    },
                },
                {"type": "pull_request", "parameters": {"required_approving_review_count": 2}},
            ],
        },
    )
    owner = gh(sandbox, sandbox.owner)
    repo = owner.get_repo("acme/widgets")
    branch = repo.get_branch("main")
    rest = branch.get_protection()
    _h, rest_rules = owner.requester.requestJsonAndCheck(
        "GET", "/repos/acme/widgets/rules/branches/main"
    )
    got = _ref(owner)
    assert got["name"] == "main" and got["prefix"] == "refs/heads/"
    assert got["target"] == {"__typename": "Commit", "oid": branch.commit.sha}
    rule = got["branchProtectionRule"]
    assert rule["pattern"] == "main"
    assert rule["isAdminEnforced"] is rest.enforce_admins is True
    assert rule["allowsForcePushes"] is False and rule["allowsDeletions"] is True
    assert rule["requiresApprovingReviews"] is True
    reviews = rest.required_pull_request_reviews
    assert rule["requiredApprovingReviewCount"] == reviews.required_approving_review_count == 1
    assert rule["requiresStatusChecks"] and rule["requiresStrictStatusChecks"]
    checks = rest.raw_data["required_status_checks"]["checks"]
    assert [
        {"context": c["context"], "app_id": (c["app"] or {}).get("databaseId")}
        for c in rule["requiredStatusChecks"]
    ] == checks
    assert rule["requiredStatusChecks"][0]["app"]["slug"] == sandbox.app_slug
    assert [n["type"].lower() for n in got["rules"]["nodes"]] == [r["type"] for r in rest_rules]
    params = {n["type"]: n["parameters"] for n in got["rules"]["nodes"]}
    assert params["NON_FAST_FORWARD"] is None
    assert params["PULL_REQUEST"] == {
        "__typename": "PullRequestParameters",
        "requiredApprovingReviewCount": 2,
    }
    assert params["REQUIRED_STATUS_CHECKS"] == {
        "__typename": "RequiredStatusChecksParameters",
        "strictRequiredStatusChecksPolicy": True,
        "requiredStatusChecks": [{"context": "ci", "integrationId": 7}],
    }
    assert got["rules"]["pageInfo"]["hasNextPage"] is False


def test_a_reader_sees_that_a_rule_exists_but_not_the_rule(sandbox: Any) -> None:
    """Without admin rights branchProtectionRule is null, refUpdateRule is not; an unprotected
    branch has neither; a missing branch is a null ref."""
    _protect(sandbox)
    agent = _ref(gh(sandbox, "agent-1"))
    assert agent["branchProtectionRule"] is None
    assert agent["refUpdateRule"] == {
        "pattern": "main",
        "allowsForcePushes": False,
        "requiredApprovingReviewCount": 1,
    }
    sandbox.commit_files("acme/widgets", "feat", {"f.txt": "f\n"}, "f", parent_branch="main")
    free = _ref(gh(sandbox, sandbox.owner), "refs/heads/feat")
    assert free["branchProtectionRule"] is None and free["refUpdateRule"] is None
    assert free["rules"]["nodes"] == []
    assert _ref(gh(sandbox, sandbox.owner), "refs/heads/nope") is None
    assert _ref(gh(sandbox, sandbox.owner), "refs/tags/main") is None


def test_a_rule_whose_parameters_are_not_modelled_is_an_error(sandbox: Any) -> None:
    """Never a silent null: parameters the sandbox does not model are an error naming the rule."""
    add_ruleset(
        sandbox.backend,
        "acme/widgets",
        {
            "name": "upd",
            "enforcement": "active",
            "conditions": {"ref_name": {"include": ["~ALL"], "exclude": []}},
            "rules": [{"type": "update", "parameters": {"update_allows_fetch_and_merge": True}}],
        },
    )
    client = gh(sandbox, sandbox.owner)
    variables = {"owner": "acme", "name": "widgets", "ref": "refs/heads/main"}
    try:
        _headers, data = client.requester.graphql_query(REF, variables)
    except github.GithubException as exc:  # PyGithub raises on an answer with errors
        data = exc.data
    assert "`update` rule" in str(data["errors"])

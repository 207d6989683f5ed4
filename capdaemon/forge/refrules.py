"""A base branch's head and protection from GraphQL's ``Ref`` (carried by the open-PR page).

The first page of a repo's open PRs also asks for the supervised base branch: its head commit
and the entry of `.capdaemon.yml` in that commit's tree (its blob sha, or none), its classic
protection rule (``branchProtectionRule``) and the rules of every active ruleset
on it (``rules``). ``branch_facts`` turns that into what the REST reads give (the head sha and
the classic protection document with the rulesets folded in, see ``protection.fold_rules``),
so a steady tick needs no branch, protection or rules request, and a new base commit needs no
read of `.capdaemon.yml` unless the file itself changed (a blob sha names its content).

It fails closed: whenever the answer could say less than REST would, it says nothing (None)
and the caller reads through REST as before. That is the case for a ref that is missing, a
classic rule that exists (``refUpdateRule``, visible to any reader) but is hidden from us
(``branchProtectionRule`` null without admin rights), more rules than one page, a rule of a
kind capdaemon folds whose parameters did not come, or any value of an unexpected type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from capdaemon.filenames import REPO_POLICY_FILE
from capdaemon.forge.protection import fold_rules

# The part of the open-PR query that reads the base branch (GitHub's Ref, variable $base).
BASE_REF_FIELDS = """
    ref(qualifiedName: $base) {
      target { oid ... on Commit { file(path: POLICY_PATH) { oid mode type } } }
      refUpdateRule { pattern }
      branchProtectionRule {
        pattern isAdminEnforced allowsForcePushes allowsDeletions
        requiresApprovingReviews requiredApprovingReviewCount
        requiresStatusChecks requiresStrictStatusChecks
        requiredStatusChecks { context app { databaseId } }
      }
      rules(first: 100) {
        pageInfo { hasNextPage }
        nodes {
          type
          parameters {
            __typename
            ... on PullRequestParameters { requiredApprovingReviewCount }
            ... on RequiredStatusChecksParameters {
              strictRequiredStatusChecksPolicy
              requiredStatusChecks { context integrationId }
            }
          }
        }
      }
    }""".replace("POLICY_PATH", json.dumps(REPO_POLICY_FILE))

# Rule kinds whose parameters fold into the protection document, with their GraphQL type.
FOLDED_PARAMETERS = {
    "pull_request": "PullRequestParameters",
    "required_status_checks": "RequiredStatusChecksParameters",
}


# git's modes of a plain file (GraphQL gives them as integers): a link, a directory or a
# submodule named `.capdaemon.yml` is read through REST, as before
_FILE_MODES = frozenset({0o100644, 0o100755})


@dataclass(frozen=True)
class BranchFacts:
    """A branch's head sha and its effective protection (None: nothing protects it), and the
    blob sha of `.capdaemon.yml` at that head ("": no such file; None: the page did not say)."""

    sha: str
    protection: dict[str, Any] | None
    policy_blob: str | None = None


class _Unsure(Exception):
    """The answer cannot stand in for the REST reads (control flow inside branch_facts)."""


def _bool(node: dict[str, Any], name: str) -> bool:
    value = node.get(name)
    if not isinstance(value, bool):
        raise _Unsure(name)
    return value


def _count(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Unsure("review count")
    return value


def _classic(rule: dict[str, Any]) -> dict[str, Any]:
    """A BranchProtectionRule as REST's protection document (the keys capdaemon reads)."""
    checks = []
    for c in rule.get("requiredStatusChecks") or ():
        if not isinstance(c, dict) or not isinstance(c.get("context"), str):
            raise _Unsure("required check")
        app = c.get("app")
        app_id = app.get("databaseId") if isinstance(app, dict) else None
        checks.append({"context": c["context"], "app_id": app_id})
    reviews = _bool(rule, "requiresApprovingReviews")
    rsc = {
        "strict": _bool(rule, "requiresStrictStatusChecks"),
        "checks": checks,
        "contexts": [c["context"] for c in checks],
    }
    count = _count(rule.get("requiredApprovingReviewCount"))
    return {
        "required_status_checks": rsc if _bool(rule, "requiresStatusChecks") else None,
        "enforce_admins": {"enabled": _bool(rule, "isAdminEnforced")},
        "required_pull_request_reviews": (
            {"required_approving_review_count": count} if reviews else None
        ),
        "allow_force_pushes": {"enabled": _bool(rule, "allowsForcePushes")},
        "allow_deletions": {"enabled": _bool(rule, "allowsDeletions")},
    }


def _parameters(kind: str, params: Any) -> dict[str, Any]:
    """A rule's GraphQL parameters as REST's (only the kinds ``fold_rules`` reads)."""
    want = FOLDED_PARAMETERS.get(kind)
    if want is None:
        return {}
    if not isinstance(params, dict) or params.get("__typename") != want:
        raise _Unsure(f"parameters of {kind}")
    if kind == "pull_request":
        return {"required_approving_review_count": _count(params["requiredApprovingReviewCount"])}
    checks = []
    for c in params.get("requiredStatusChecks") or ():
        if not isinstance(c, dict) or not isinstance(c.get("context"), str):
            raise _Unsure("ruleset check")
        checks.append({"context": c["context"], "integration_id": c.get("integrationId")})
    return {
        "required_status_checks": checks,
        "strict_required_status_checks_policy": _bool(params, "strictRequiredStatusChecksPolicy"),
    }


def _rules(conn: Any) -> list[dict[str, Any]]:
    """The ref's ruleset rules as REST's ``GET /rules/branches/{branch}`` lists them."""
    if not isinstance(conn, dict) or not isinstance(conn.get("nodes"), list):
        raise _Unsure("rules")
    if (conn.get("pageInfo") or {}).get("hasNextPage") is not False:
        raise _Unsure("more rules")
    out = []
    for node in conn["nodes"]:
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            raise _Unsure("rule")
        kind = node["type"].lower()
        out.append({"type": kind, "parameters": _parameters(kind, node.get("parameters"))})
    return out


def branch_facts(ref: Any) -> BranchFacts | None:
    """What GraphQL's ``Ref`` says of a base branch; None when REST must be asked instead."""
    if not isinstance(ref, dict):
        return None
    try:
        sha = (ref.get("target") or {}).get("oid")
        if not isinstance(sha, str) or not sha:
            raise _Unsure("head")
        rule = ref.get("branchProtectionRule")
        if rule is None and ref.get("refUpdateRule") is not None:
            raise _Unsure("a classic rule we may not read")
        if rule is not None and not isinstance(rule, dict):
            raise _Unsure("classic rule")
        classic = None if rule is None else _classic(rule)
        blob = policy_blob(ref["target"])
        return BranchFacts(sha, fold_rules(classic, _rules(ref.get("rules"))), blob)
    except (_Unsure, KeyError, AttributeError):
        return None


def policy_blob(target: dict[str, Any]) -> str | None:
    """The blob sha of `.capdaemon.yml` in the head commit's tree, "" when it has none, None
    when the answer does not say (no `file` field, or an entry that is not a plain file)."""
    if "file" not in target:
        return None
    entry = target["file"]
    if entry is None:
        return ""
    if not isinstance(entry, dict) or entry.get("type") != "blob":
        return None
    oid, mode = entry.get("oid"), entry.get("mode")
    if not isinstance(oid, str) or len(oid) not in (40, 64) or mode not in _FILE_MODES:
        return None
    return oid

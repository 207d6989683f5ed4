"""GraphQL ``Repository.ref``: a branch's head, its classic protection rule and its ruleset rules.

``Repository.object`` serves a commit by its sha (null when the repository has none);
``Commit.file(path:)`` the tree entry at a path of a commit (null when there is none), with its
``oid``, ``mode`` (an integer, as GitHub gives it: 33188 for a plain file), ``type``, ``name``
and ``path``.

GitHub serves on ``Ref``:

- ``target``: the commit the branch points at;
- ``branchProtectionRule``: the classic rule matching the branch, shown only to callers who
  may administer the repository (others get null, as from GitHub);
- ``refUpdateRule``: the same rule's push constraints, shown to anyone who may read the repo
  (so a reader can tell "no rule" from "a rule I may not see");
- ``rules``: the rules of every active ruleset that applies to the branch (REST's
  ``GET /repos/{o}/{r}/rules/branches/{branch}``), newest ruleset first.

A ruleset rule whose parameters the sandbox does not model is answered with an error naming
it, never with a silent null.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLError, GraphQLResolveInfo

from ..auth import require
from ..errors import SandboxApiError
from ..gittypes import is_sha
from ..protection import ruleset_applies
from .nodes import CommitN, Conn, page

RULE_PARAMETERS = {
    "pull_request": "PullRequestParameters",
    "required_status_checks": "RequiredStatusChecksParameters",
}


@dataclass
class RefN:
    """A branch of a repository (``refs/heads/<name>``) and the commit it points at."""

    full: str
    name: str
    sha: str
    typename: str = "Ref"


@dataclass
class TreeEntryN:
    """One entry of a commit's tree (``git ls-tree``'s mode, type, sha and path)."""

    e: dict[str, Any]
    typename: str = "TreeEntry"


@dataclass
class RuleN:
    """One rule of an active ruleset (the REST rule object: ``type``, ``parameters``)."""

    rule: dict[str, Any]
    ruleset_id: int
    typename: str = "RepositoryRule"


@dataclass
class ParamsN:
    """The parameters of a ruleset rule, typed by the rule's kind (a ``RuleParameters`` union)."""

    p: dict[str, Any]
    typename: str


def repo_ref(repo: Any, info: GraphQLResolveInfo, qualifiedName: str) -> RefN | None:
    """``Repository.ref``: a branch by ``refs/heads/<name>`` or ``<name>``; null when absent."""
    name = qualifiedName.removeprefix("refs/heads/")
    if qualifiedName.startswith("refs/") and not qualifiedName.startswith("refs/heads/"):
        return None  # tags and other refs are not served: no branch by that name
    sha = info.context.b.git(repo.full).resolve(f"refs/heads/{name}")
    return None if sha is None else RefN(repo.full, name, sha)


def repo_object(
    repo: Any, info: GraphQLResolveInfo, oid: str | None = None, expression: str | None = None
) -> CommitN | None:
    """``Repository.object``: a commit by ``oid`` (or by an ``expression`` that names a branch,
    a tag or a sha); null when the repository has no such object, as on GitHub. Trees, blobs
    and tags are not served: asking for one is an error naming it, never a silent null."""
    g = info.context.b.git(repo.full)
    if (oid is None) == (expression is None):
        raise GraphQLError("Repository.object takes exactly one of `oid` and `expression`")
    sha = oid if oid is not None else g.resolve_ref_or_sha(str(expression))
    if sha is None or not is_sha(sha):
        return None
    typ = g.object_type(sha)
    if typ is None:
        return None
    if typ != "commit":
        raise GraphQLError(f"the sandbox serves only commits from Repository.object, not a {typ}")
    return CommitN(repo.full, sha)


def commit_file(c: CommitN, info: GraphQLResolveInfo, path: str) -> TreeEntryN | None:
    """``Commit.file``: the entry at `path` (a file, a directory, a link or a submodule)."""
    path = path.strip("/")
    if not path:
        return None
    g = info.context.b.git(c.full)
    found = next((e for e in g.ls_tree(c.sha, path=path) if e["path"] == path), None)
    return None if found is None else TreeEntryN(found)


def _classic(ref: RefN, info: GraphQLResolveInfo) -> dict[str, Any] | None:
    """The classic rule of the branch with its pattern (the sandbox keys rules by branch name)."""
    rule: dict[str, Any] | None = info.context.b.repo(ref.full)["protection"].get(ref.name)
    return None if rule is None else {**rule, "pattern": ref.name}


def ref_protection_rule(ref: RefN, info: GraphQLResolveInfo) -> dict[str, Any] | None:
    """``Ref.branchProtectionRule``: null unless the caller may administer the repository (an
    App: read it with `administration: read`)."""
    ctx = info.context
    try:
        require(ctx.b, ctx.ident, ref.full, "admin", "administration", app_level="read")
    except SandboxApiError:
        return None
    return _classic(ref, info)


def ref_update_rule(ref: RefN, info: GraphQLResolveInfo) -> dict[str, Any] | None:
    """``Ref.refUpdateRule``: the classic rule's push constraints, for any reader."""
    return _classic(ref, info)


def ref_rules(ref: RefN, info: GraphQLResolveInfo, **args: Any) -> Conn:
    """``Ref.rules``: the rules of the active rulesets covering the branch, newest first."""
    rec = info.context.b.repo(ref.full)
    sets = sorted((rec.get("rulesets") or {}).values(), key=lambda r: r["id"], reverse=True)
    rules = [
        RuleN(dict(rule), int(rs["id"]))
        for rs in sets
        if ruleset_applies(rs, ref.name, rec["default_branch"])
        for rule in rs["rules"]
    ]
    return page(rules, args, "rules")


def rule_parameters(r: RuleN, _info: GraphQLResolveInfo) -> ParamsN | None:
    """``RepositoryRule.parameters``: null for a rule without parameters."""
    params = r.rule.get("parameters")
    if not params:
        return None
    kind = str(r.rule["type"])
    typename = RULE_PARAMETERS.get(kind)
    if typename is None:
        raise GraphQLError(f"the sandbox does not serve the parameters of a `{kind}` rule")
    return ParamsN(params, typename)


def _checks(rule: dict[str, Any]) -> list[dict[str, Any]]:
    return list((rule.get("required_status_checks") or {}).get("checks") or ())


def _check_app(check: dict[str, Any], info: GraphQLResolveInfo) -> dict[str, Any] | None:
    app_id = check.get("app_id")
    if app_id is None:
        return None
    app: dict[str, Any] | None = info.context.b.data["apps"].get(str(app_id))
    return app


def _reviews(rule: dict[str, Any]) -> dict[str, Any] | None:
    reviews: dict[str, Any] | None = rule.get("required_pull_request_reviews")
    return reviews


def _get(fn: Callable[[Any], Any]) -> Callable[..., Any]:
    def resolve(obj: Any, _info: GraphQLResolveInfo, **_: Any) -> Any:
        return fn(obj)

    return resolve


_PUSH_RULE: dict[str, Callable[..., Any]] = {
    "pattern": _get(lambda r: r["pattern"]),
    "allowsForcePushes": _get(lambda r: bool(r["allow_force_pushes"])),
    "allowsDeletions": _get(lambda r: bool(r["allow_deletions"])),
    "requiredApprovingReviewCount": _get(
        lambda r: (_reviews(r) or {}).get("required_approving_review_count")
    ),
    "requiredStatusCheckContexts": _get(lambda r: [c["context"] for c in _checks(r)]),
}

REF_FIELDS: dict[str, dict[str, Callable[..., Any]]] = {
    "Ref": {
        "name": _get(lambda r: r.name),
        "prefix": _get(lambda _r: "refs/heads/"),
        "target": _get(lambda r: CommitN(r.full, r.sha)),
        "branchProtectionRule": ref_protection_rule,
        "refUpdateRule": ref_update_rule,
        "rules": ref_rules,
    },
    "GitObject": {"oid": _get(lambda c: c.sha)},
    "TreeEntry": {
        "oid": _get(lambda t: t.e["sha"]),
        "mode": _get(lambda t: int(t.e["mode"], 8)),
        "type": _get(lambda t: t.e["type"]),
        "path": _get(lambda t: t.e["path"]),
        "name": _get(lambda t: t.e["path"].rsplit("/", 1)[-1]),
    },
    "BranchProtectionRule": {
        **_PUSH_RULE,
        "isAdminEnforced": _get(lambda r: bool(r["enforce_admins"])),
        "requiresApprovingReviews": _get(lambda r: _reviews(r) is not None),
        "requiresStatusChecks": _get(lambda r: r["required_status_checks"] is not None),
        "requiresStrictStatusChecks": _get(
            lambda r: bool((r["required_status_checks"] or {}).get("strict"))
        ),
        "requiredStatusChecks": _get(_checks),
        "requiresLinearHistory": _get(lambda r: bool(r["required_linear_history"])),
        "blocksCreations": _get(lambda r: bool(r["block_creations"])),
        "lockBranch": _get(lambda r: bool(r["lock_branch"])),
    },
    "RefUpdateRule": dict(_PUSH_RULE),
    "RequiredStatusCheckDescription": {"context": _get(lambda c: c["context"]), "app": _check_app},
    "RepositoryRule": {
        "id": _get(lambda r: f"RRU_{r.ruleset_id}_{r.rule['type']}"),
        "type": _get(lambda r: str(r.rule["type"]).upper()),
        "parameters": rule_parameters,
    },
    "PullRequestParameters": {
        "requiredApprovingReviewCount": _get(
            lambda p: int(p.p.get("required_approving_review_count") or 0)
        ),
        "dismissStaleReviewsOnPush": _get(lambda p: bool(p.p.get("dismiss_stale_reviews_on_push"))),
        "requireCodeOwnerReview": _get(lambda p: bool(p.p.get("require_code_owner_review"))),
        "requireLastPushApproval": _get(lambda p: bool(p.p.get("require_last_push_approval"))),
        "requiredReviewThreadResolution": _get(
            lambda p: bool(p.p.get("required_review_thread_resolution"))
        ),
    },
    "RequiredStatusChecksParameters": {
        "requiredStatusChecks": _get(lambda p: list(p.p.get("required_status_checks") or ())),
        "strictRequiredStatusChecksPolicy": _get(
            lambda p: bool(p.p.get("strict_required_status_checks_policy"))
        ),
    },
    "StatusCheckConfiguration": {
        "context": _get(lambda c: c["context"]),
        "integrationId": _get(lambda c: c.get("integration_id")),
    },
}

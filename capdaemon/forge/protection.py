"""Branch protection as GitHub enforces it (classic rules plus rulesets) and the repo policy file.

Both are read every tick, so both are read the cheap way: the branch object (ETag-cached, a
free 304 while nothing changed) says whether classic protection exists and which commit the
branch is at; a missing protection or a missing `.capdaemon.yml` is then known without asking
again (on GitHub every 404 is a counted request and never a 304).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from capdaemon.filenames import REPO_POLICY_FILE
from capdaemon.forge.errors import NotFound
from capdaemon.forge.files import Files

if TYPE_CHECKING:
    from capdaemon.forge.session import ForgeSession


def _fold_pull_request(out: dict[str, Any], params: dict[str, Any]) -> None:
    """Fold a `pull_request` rule in: the larger required approving review count wins."""
    reviews = dict(out.get("required_pull_request_reviews") or {})
    count = int(params.get("required_approving_review_count") or 0)
    reviews["required_approving_review_count"] = max(
        count, int(reviews.get("required_approving_review_count") or 0)
    )
    out["required_pull_request_reviews"] = reviews


def _fold_status_checks(out: dict[str, Any], params: dict[str, Any]) -> None:
    """Fold a `required_status_checks` rule in: its checks are added, strict if either is."""
    rsc = dict(out.get("required_status_checks") or {})
    checks = list(rsc.get("checks") or [{"context": c} for c in rsc.get("contexts") or ()])
    for c in params.get("required_status_checks") or ():
        if isinstance(c, dict) and isinstance(c.get("context"), str):
            checks.append({"context": c["context"], "app_id": c.get("integration_id")})
    rsc["checks"] = checks
    rsc["contexts"] = [c["context"] for c in checks]
    rsc["strict"] = bool(rsc.get("strict") or params.get("strict_required_status_checks_policy"))
    out["required_status_checks"] = rsc


def fold_rules(
    classic: dict[str, Any] | None, rules: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Classic protection with the branch's active ruleset rules folded in (stricter wins).

    The result has the classic API's shape (what `protection_problems` and `required_checks`
    read): `required_status_checks.checks` gains the rulesets' checks (`integration_id` pins the
    App), a `pull_request` rule requires PRs, `non_fast_forward` forbids force pushes,
    `deletion` forbids deletion. None when neither protects the branch.
    """
    if not rules:
        return classic
    out: dict[str, Any] = dict(classic) if classic is not None else {}
    for rule in rules:
        kind = rule.get("type")
        params = rule.get("parameters") or {}
        if kind == "non_fast_forward":
            out["allow_force_pushes"] = {"enabled": False}
        elif kind == "deletion":
            out["allow_deletions"] = {"enabled": False}
        elif kind == "pull_request":
            _fold_pull_request(out, params)
        elif kind == "required_status_checks":
            _fold_status_checks(out, params)
    if "allow_force_pushes" not in out:  # rulesets alone: force pushes are not forbidden
        out["allow_force_pushes"] = {"enabled": True}
    out.setdefault("required_pull_request_reviews", None)
    return out


class Protection:
    """Forge reads of branch protection, rulesets and the repo's `.capdaemon.yml`."""

    def __init__(self, session: ForgeSession, files: Files) -> None:
        self._http = session.http
        self._caches = session.caches
        self._memo = session.memo
        self._files = files

    def branch_rules(self, repo: str, branch: str) -> list[dict[str, Any]]:
        """The active ruleset rules on `branch` (`GET /repos/{repo}/rules/branches/{branch}`);
        [] when none apply or the server has no rulesets (404)."""
        try:
            return list(self._http.pages(f"/repos/{repo}/rules/branches/{quote(branch, safe='')}"))
        except NotFound:
            return []

    def _branch(self, repo: str, branch: str) -> dict[str, Any] | None:
        """The branch object (its head commit, `protected`), read once a tick."""
        key = (repo, branch)
        if key not in self._memo.branches:
            try:
                data = self._http.get(f"/repos/{repo}/branches/{quote(branch, safe='')}")
            except NotFound:
                data = None
            self._memo.branches[key] = data if isinstance(data, dict) else None
        return self._memo.branches[key]

    def get_protection(self, repo: str, branch: str) -> dict[str, Any] | None:
        """The branch protection document, or None when the branch is not protected."""
        try:
            data = self._http.get(f"/repos/{repo}/branches/{quote(branch, safe='')}/protection")
        except NotFound:
            return None
        return cast(dict[str, Any], data)

    def effective_protection(self, repo: str, branch: str) -> dict[str, Any] | None:
        """What protects `branch`: classic protection plus rulesets (see `fold_rules`).

        GitHub's branch object says `protected` when classic protection or an active ruleset
        applies, so an unprotected branch costs one ETag-cached read (a free 304) per tick and
        nothing else; a protected one adds the classic document and the ruleset rules. Read
        once a tick (the merge gate and the probes both ask), or carried by the tick's page of
        open PRs (``refrules``). GitHub enforces both at merge time whatever this says.
        """
        key = (repo, branch)
        if key not in self._memo.effective:
            info = self._branch(repo, branch)
            if info is not None and info.get("protected") is False:
                self._memo.effective[key] = None
            else:
                classic = self.get_protection(repo, branch)
                rules = self.branch_rules(repo, branch)
                self._memo.effective[key] = fold_rules(classic, rules)
        found = self._memo.effective[key]
        return None if found is None else dict(found)

    def policy_text(self, repo: str, branch: str) -> str | None:
        """`.capdaemon.yml` at the head of `branch` (None when absent), remembered per commit.

        The branch read is a free 304 while the branch does not move; the file (or its absence)
        at a given commit never changes, so it is read once per commit. When this tick's page
        of open PRs carried the head, it also carried the file's blob sha in that commit's tree
        (``refrules``): no file is then known without a read, and a blob sha already read (the
        file did not change since the last base commit) is its text without one.
        """
        sha = self._memo.heads.get((repo, branch))
        blob = self._memo.policy_blobs.get((repo, branch)) if sha is not None else None
        if sha is None:
            info = self._branch(repo, branch)
            sha = ((info or {}).get("commit") or {}).get("sha")
        if not isinstance(sha, str):
            return self._files.read_file(repo, REPO_POLICY_FILE, branch)
        key = (repo, sha)
        cached = self._caches.policy.get_(key)
        if cached is not None:
            return cached[0]
        if blob is None:
            text = self._files.read_file(repo, REPO_POLICY_FILE, sha)
        else:
            text = self._files.blob(repo, blob) if blob else None
        self._caches.policy.put(key, (text,))
        return text

"""Backend layer: check runs, commit statuses and branch protection."""

from __future__ import annotations

from typing import Any

from ..errors import SandboxApiError
from ..protection import effective_rule, missing_required_checks
from .issues import Issues


class Checks(Issues):
    """Check runs, commit statuses and branch protection."""

    def check_runs_for(self, full: str, sha: str) -> list[dict[str, Any]]:
        """All check runs on a commit, newest first."""
        runs = [r for r in self.repo(full)["check_runs"].values() if r["head_sha"] == sha]
        return sorted(runs, key=lambda r: r["id"], reverse=True)

    def statuses_for(self, full: str, sha: str) -> list[dict[str, Any]]:
        """All commit statuses on a commit, newest first."""
        return sorted(
            (s for s in self.repo(full)["statuses"] if s["sha"] == sha),
            key=lambda s: s["id"],
            reverse=True,
        )

    def latest_statuses(self, full: str, sha: str) -> list[dict[str, Any]]:
        """The newest status per context."""
        seen: dict[str, dict[str, Any]] = {}
        for s in self.statuses_for(full, sha):
            seen.setdefault(s["context"], s)
        return list(seen.values())

    def set_protection(self, full: str, branch: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store a branch protection rule (GitHub's PUT body) and refresh the push hook table."""
        with self.lock:
            repo = self.repo(full)
            rsc = body.get("required_status_checks")
            if rsc is not None:
                checks = [
                    {
                        "context": c["context"],
                        "app_id": c.get("app_id") if c.get("app_id") not in (None, -1) else None,
                    }
                    for c in rsc.get("checks") or []
                ]
                known = {c["context"] for c in checks}
                for ctx in rsc.get("contexts") or []:
                    if ctx not in known:
                        checks.append({"context": ctx, "app_id": None})
                rsc = {"strict": bool(rsc.get("strict", False)), "checks": checks}
            reviews = body.get("required_pull_request_reviews")
            if reviews is not None:
                reviews = {
                    "dismiss_stale_reviews": bool(reviews.get("dismiss_stale_reviews", False)),
                    "require_code_owner_reviews": bool(
                        reviews.get("require_code_owner_reviews", False)
                    ),
                    "required_approving_review_count": int(
                        reviews.get("required_approving_review_count", 0) or 0
                    ),
                    "require_last_push_approval": bool(
                        reviews.get("require_last_push_approval", False)
                    ),
                }
            rule = {
                "required_status_checks": rsc,
                "enforce_admins": bool(body.get("enforce_admins")),
                "required_pull_request_reviews": reviews,
                "restrictions": body.get("restrictions"),
                "required_linear_history": bool(body.get("required_linear_history", False)),
                "allow_force_pushes": bool(body.get("allow_force_pushes", False)),
                "allow_deletions": bool(body.get("allow_deletions", False)),
                "block_creations": bool(body.get("block_creations", False)),
                "required_conversation_resolution": bool(
                    body.get("required_conversation_resolution", False)
                ),
                "lock_branch": bool(body.get("lock_branch", False)),
                "allow_fork_syncing": bool(body.get("allow_fork_syncing", False)),
            }
            repo["protection"][branch] = rule
            self.store.save()
            return rule

    def delete_protection(self, full: str, branch: str) -> None:
        """Remove a branch's protection (404 if it had none)."""
        with self.lock:
            repo = self.repo(full)
            if branch not in repo["protection"]:
                raise SandboxApiError(404, "Branch not protected")
            del repo["protection"][branch]
            self.store.save()

    def missing_required_checks(self, full: str, branch: str, sha: str) -> list[tuple[str, str]]:
        """Required checks of ``branch`` not satisfied on ``sha``: [(context, why)]."""
        return missing_required_checks(self.repo(full), branch, sha)

    def check_ref_update(
        self, full: str, branch: str, old: str, new: str, fast_forward: bool, is_admin: bool
    ) -> None:
        """Branch protection for API ref updates (mirrors the pre-receive hook used for pushes)."""
        rule = effective_rule(self.repo(full), branch)
        if not rule:
            return
        if not fast_forward and not rule["allow_force_pushes"]:
            raise SandboxApiError(422, "Cannot force-push to this branch")
        if rule["required_pull_request_reviews"] is not None and (
            not is_admin or rule["enforce_admins"]
        ):
            raise SandboxApiError(422, "Changes must be made through a pull request.")
        if rule["required_status_checks"] and (not is_admin or rule["enforce_admins"]):
            missing = self.missing_required_checks(full, branch, new)
            if missing:
                raise SandboxApiError(
                    422, f'Required status check "{missing[0][0]}" is {missing[0][1]}.'
                )

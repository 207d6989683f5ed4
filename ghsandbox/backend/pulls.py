"""Backend layer: pull requests, their mergeability and merges."""

from __future__ import annotations

from typing import Any

from ..errors import SandboxApiError, not_found, validation
from ..fidelity import settings
from ..gittypes import Person
from ..protection import SUCCESSFUL, effective_rule
from .checks import Checks


class Pulls(Checks):
    """Pull requests, mergeability and merges."""

    def open_pr(
        self,
        full: str,
        head: str,
        base: str,
        title: str,
        body: str | None,
        user: str,
        draft: bool = False,
        maintainer_can_modify: bool = False,
    ) -> int:
        """Open a pull request from branch ``head`` into ``base``; return its number."""
        with self.lock:
            g = self.git(full)
            head_ref = head.split(":", 1)[1] if ":" in head else head
            head_sha = g.resolve(f"refs/heads/{head_ref}")
            base_sha = g.resolve(f"refs/heads/{base}")
            if base_sha is None:
                raise validation("PullRequest", "base", "invalid")
            if head_sha is None:
                raise validation("PullRequest", "head", "invalid")
            for other in self.repo(full)["issues"].values():
                p = other.get("pull")
                if (
                    p
                    and other["state"] == "open"
                    and p["head_ref"] == head_ref
                    and p["base_ref"] == base
                ):
                    raise validation(
                        "PullRequest",
                        "head",
                        "custom",
                        f"A pull request already exists for {full.split('/')[0]}:{head_ref}.",
                    )
            if head_sha == base_sha or g.is_ancestor(head_sha, base_sha):
                raise validation(
                    "PullRequest", "head", "custom", f"No commits between {base} and {head_ref}"
                )
            rec = self._new_issue(full, title, body, user)
            rec["pull"] = {
                "id": self.store.new_id(),
                "head_ref": head_ref,
                "base_ref": base,
                "head_sha": head_sha,
                "base_sha": base_sha,
                "draft": bool(draft),
                "merged": False,
                "merged_at": None,
                "merged_by": None,
                "merge_commit_sha": None,
                "maintainer_can_modify": bool(maintainer_can_modify),
            }
            g.update_ref(f"refs/pull/{rec['number']}/head", head_sha)
            self.store.save()
            self.feed(full, "PullRequestEvent", user, {"action": "opened", "number": rec["number"]})
            return int(rec["number"])

    def bulk_open_prs(self, full: str, prs: list[dict[str, Any]]) -> list[int]:
        """Open many PRs at once (dicts with head, base, title, body, user, draft); one git call.

        Unlike :meth:`open_pr` it does not check for duplicates or empty ranges (benchmarks, demo).
        """
        with self.store.batch():
            g = self.git(full)
            refs = g.refs("refs/heads/")
            numbers = []
            updates: dict[str, str] = {}
            for spec in prs:
                head_sha = refs.get(f"refs/heads/{spec['head']}")
                base_sha = refs.get(f"refs/heads/{spec.get('base', 'main')}")
                if head_sha is None or base_sha is None:
                    raise validation(
                        "PullRequest", "head" if head_sha is None else "base", "invalid"
                    )
                rec = self._new_issue(
                    full,
                    spec.get("title", spec["head"]),
                    spec.get("body"),
                    spec.get("user", "agent-1"),
                )
                rec["pull"] = {
                    "id": self.store.new_id(),
                    "head_ref": spec["head"],
                    "base_ref": spec.get("base", "main"),
                    "head_sha": head_sha,
                    "base_sha": base_sha,
                    "draft": bool(spec.get("draft", False)),
                    "merged": False,
                    "merged_at": None,
                    "merged_by": None,
                    "merge_commit_sha": None,
                    "maintainer_can_modify": False,
                }
                numbers.append(int(rec["number"]))
                updates[f"refs/pull/{rec['number']}/head"] = head_sha
            g.update_refs(updates)
            self.store.save()
            return numbers

    def mergeability(self, full: str, rec: dict[str, Any]) -> tuple[bool | None, str]:
        """(mergeable, mergeable_state) computed with git and branch protection."""
        pr = rec["pull"]
        if rec["state"] != "open":
            return None, "unknown"
        g = self.git(full)
        base_sha = g.resolve(f"refs/heads/{pr['base_ref']}") or pr["base_sha"]
        clean, _ = g.merge_tree(base_sha, pr["head_sha"])
        if not clean:
            return False, "dirty"
        if pr["draft"]:
            return True, "draft"
        rule = effective_rule(self.repo(full), pr["base_ref"])
        if self.missing_required_checks(full, pr["base_ref"], pr["head_sha"]):
            return True, "blocked"
        if (
            rule
            and (rule.get("required_pull_request_reviews") or {}).get(
                "required_approving_review_count", 0
            )
            > 0
        ):
            return True, "blocked"
        if (
            rule
            and rule["required_status_checks"]
            and rule["required_status_checks"]["strict"]
            and not g.is_ancestor(base_sha, pr["head_sha"])
        ):
            return True, "behind"
        runs = self.check_runs_for(full, pr["head_sha"])
        latest_runs: dict[tuple[int, str], dict[str, Any]] = {}
        for r in runs:
            latest_runs.setdefault((r["app_id"], r["name"]), r)
        bad = any(
            r["status"] == "completed" and r["conclusion"] not in SUCCESSFUL
            for r in latest_runs.values()
        )
        bad = bad or any(
            s["state"] in ("failure", "error") for s in self.latest_statuses(full, pr["head_sha"])
        )
        return True, "unstable" if bad else "clean"

    def observed_mergeability(
        self, full: str, rec: dict[str, Any], count: bool = True
    ) -> tuple[bool | None, str]:
        """What a read of the PR shows: ``(None, "unknown")`` while GitHub would still be
        computing (the first reads or seconds after it opened or its base or head moved);
        ``count=False`` for a write's answer, which is not one of those reads."""
        pr = rec["pull"]
        if rec["state"] == "open":
            base = self.git(full).resolve(f"refs/heads/{pr['base_ref']}") or pr["base_sha"]
            now = self.clock.window_time()
            cfg = settings(self.data)
            if self.merge_clock.pending(
                full, rec["number"], (base, pr["head_sha"]), now, cfg, count
            ):
                return None, "unknown"
        return self.mergeability(full, rec)

    def merge_pr(
        self,
        full: str,
        number: int,
        actor: str,
        actor_is_admin: bool,
        sha: str | None,
        method: str = "merge",
        title: str | None = None,
        message: str | None = None,
    ) -> dict[str, Any]:
        """Merge a PR like GitHub: state, head sha, conflicts, protection; real commits."""
        with self.lock:
            rec = self.issue(full, number)
            pr = rec["pull"]
            if pr is None:
                raise not_found()
            if method not in ("merge", "squash", "rebase"):
                raise validation("PullRequest", "merge_method", "invalid")
            if rec["state"] != "open" or pr["merged"]:
                raise SandboxApiError(405, "Pull Request is not mergeable")
            g = self.git(full)
            self.after_push(full)
            head = pr["head_sha"]
            if sha is not None and sha != head:
                raise SandboxApiError(
                    409, "Head branch was modified. Review and try the merge again."
                )
            if pr["draft"]:
                raise SandboxApiError(405, "Pull Request is still a draft")
            base_ref = f"refs/heads/{pr['base_ref']}"
            base_sha = g.resolve(base_ref)
            if base_sha is None:
                raise SandboxApiError(405, "Base branch was deleted")
            clean, tree = g.merge_tree(base_sha, head)
            if not clean or tree is None:
                raise SandboxApiError(405, "Pull Request is not mergeable")
            self._check_merge_rule(full, pr, head, base_sha, actor_is_admin)
            new = self._merge_commit(
                full, number, rec, method, tree, base_sha, actor, title, message
            )
            g.update_ref(base_ref, new, base_sha)
            now = self.now()
            pr.update(
                {"merged": True, "merged_at": now, "merged_by": actor, "merge_commit_sha": new}
            )
            rec["state"] = "closed"
            rec["closed_at"] = now
            rec["updated_at"] = now
            self.add_event(full, number, "merged", actor, commit_id=new)
            self.add_event(full, number, "closed", actor, commit_id=new)
            self.feed(full, "PullRequestEvent", actor, {"action": "closed", "number": number})
            self.after_push(full, actor)
            self.store.save()
            return {"sha": new, "merged": True, "message": "Pull Request successfully merged"}

    def _check_merge_rule(
        self, full: str, pr: dict[str, Any], head: str, base_sha: str, actor_is_admin: bool
    ) -> None:
        """Branch protection on the base: required checks, reviews, up to date (admins may
        bypass when the rule does not enforce admins); a 405 with GitHub's message otherwise."""
        rule = effective_rule(self.repo(full), pr["base_ref"])
        bypass = actor_is_admin and rule is not None and not rule["enforce_admins"]
        if not rule or bypass:
            return
        missing = self.missing_required_checks(full, pr["base_ref"], head)
        if missing:
            ctx, why = missing[0]
            raise SandboxApiError(405, f'Required status check "{ctx}" is {why}.')
        reviews = rule.get("required_pull_request_reviews") or {}
        count = reviews.get("required_approving_review_count", 0)
        if count > 0:
            raise SandboxApiError(
                405,
                f"At least {count} approving review{'s are' if count > 1 else ' is'} "
                "required by "
                "reviewers with write access.",
            )
        if (
            rule["required_status_checks"]
            and rule["required_status_checks"]["strict"]
            and not self.git(full).is_ancestor(base_sha, head)
        ):
            raise SandboxApiError(405, "Head branch is not up to date with the base branch")

    def _merge_commit(
        self,
        full: str,
        number: int,
        rec: dict[str, Any],
        method: str,
        tree: str,
        base_sha: str,
        actor: str,
        title: str | None,
        message: str | None,
    ) -> str:
        """The new base tip: a merge commit, a squashed commit, or the rebased commits."""
        g = self.git(full)
        pr = rec["pull"]
        head = pr["head_sha"]
        when = self.clock.now()
        committer = Person("GitHub", "noreply@github.com")
        if method == "merge":
            head_label = f"{full.split('/')[0]}:{pr['head_ref']}"
            msg = title or f"Merge pull request #{number} from {head_label.replace(':', '/')}"
            msg += "\n\n" + (message if message is not None else rec["title"])
            author = self.person(actor)
            return g.commit_tree(
                tree, [base_sha, head], msg.rstrip("\n") + "\n", author, when, committer
            )
        commits = g.log_range([f"{base_sha}..{head}"], reverse=True)
        if method == "squash":
            if message is None:
                message = "\n\n".join(f"* {c.message}" for c in commits)
            msg = (title or f"{rec['title']} (#{number})") + "\n\n" + message
            pr_author = self.person(rec["user"])
            return g.commit_tree(
                tree, [base_sha], msg.rstrip("\n") + "\n", pr_author, when, committer
            )
        new_tip = g.rebase_commits(base_sha, commits, committer, when)
        if new_tip is None:
            raise SandboxApiError(405, "This branch can't be rebased")
        return new_tip

"""Forge writes, idempotent and marked: checks, issues, comments, labels, merges, reverts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from capdaemon.forge.convert import (
    CHECK_NAME,
    COMPARE_MAX_FILES,
    LABEL_COLOR,
    _dt,
    _iso,
    _login,
    log,
    protection_ok,
)
from capdaemon.forge.errors import (
    BaseMoved,
    ForgeError,
    HeadMoved,
    Invalid,
    NotFound,
    NotMergeable,
    RevertConflict,
)
from capdaemon.forge.markers import marker_key, parse_marker
from capdaemon.forge.overflow import CHECK_SUMMARY_LIMIT, fit_body
from capdaemon.forge.types import (
    MarkedIssue,
)
from capdaemon.state import canonical_json


class WritesMixin:
    """Forge methods that compare desired with current, then write (never a duplicate)."""

    # ================================================================ writes
    def publish_check(
        self,
        repo: str,
        head_sha: str,
        *,
        success: bool,
        title: str,
        summary: str,
        marker: dict[str, Any],
        name: str = CHECK_NAME,
        details_url: str | None = None,
    ) -> bool:
        """Publish L1.C3 on `head_sha` (a check run as an App, a commit status with a token).

        Returns False when the same conclusion and text are already there (no write).
        """
        conclusion = "success" if success else "failure"
        if not self.as_app:
            return self._publish_status(repo, head_sha, conclusion, title, name, details_url)
        text = fit_body(summary, marker, self.state_dir, limit=CHECK_SUMMARY_LIMIT)
        out = {"title": title[:1000], "summary": text}
        app_id = self.app_id
        runs = self._pages(
            f"/repos/{repo}/commits/{head_sha}/check-runs", {"check_name": name}, key="check_runs"
        )
        mine = [
            r for r in runs if r.get("name") == name and (r.get("app") or {}).get("id") == app_id
        ]
        mine.sort(key=lambda r: int(r.get("id") or 0), reverse=True)
        if mine:
            cur = mine[0]
            co = cur.get("output") or {}
            if (
                cur.get("status") == "completed"
                and cur.get("conclusion") == conclusion
                and co.get("title") == out["title"]
                and co.get("summary") == out["summary"]
            ):
                log.info("forge.write", op="publish_check", repo=repo, sha=head_sha[:12], noop=True)
                return False
            body: dict[str, Any] = {
                "status": "completed",
                "conclusion": conclusion,
                "output": out,
                "completed_at": _iso(self.clock()),
            }
            if details_url:
                body["details_url"] = details_url
            self._req("PATCH", f"/repos/{repo}/check-runs/{cur['id']}", body=body)
        else:
            body = {
                "name": name,
                "head_sha": head_sha,
                "status": "completed",
                "conclusion": conclusion,
                "completed_at": _iso(self.clock()),
                "output": out,
            }
            if details_url:
                body["details_url"] = details_url
            self._req("POST", f"/repos/{repo}/check-runs", body=body)
        log.info(
            "forge.write", op="publish_check", repo=repo, sha=head_sha[:12], conclusion=conclusion
        )
        return True

    def _publish_status(
        self, repo: str, sha: str, conclusion: str, title: str, name: str, details_url: str | None
    ) -> bool:
        description = title[:140]
        statuses = self._get(f"/repos/{repo}/commits/{sha}/statuses", {"per_page": 100})
        for s in statuses:  # newest first
            if s.get("context") == name and self._ours(_login(s.get("creator"))):
                if s.get("state") == conclusion and (s.get("description") or "") == description:
                    log.info("forge.write", op="publish_status", repo=repo, sha=sha[:12], noop=True)
                    return False
                break
        body: dict[str, Any] = {"state": conclusion, "context": name, "description": description}
        if details_url:
            body["target_url"] = details_url
        self._req("POST", f"/repos/{repo}/statuses/{sha}", body=body)
        log.info("forge.write", op="publish_status", repo=repo, sha=sha[:12], conclusion=conclusion)
        return True

    def find_issue(self, repo: str, marker: dict[str, Any]) -> MarkedIssue | None:
        """Our issue with the same marker kind+key (one scan per repo per Forge, then an index)."""
        key = marker_key(marker)
        if repo not in self._indexed:
            self.marked_issues(repo)
        number = self._issue_index.get((repo, key))
        if number is None:
            return None
        try:
            it = self._get(f"/repos/{repo}/issues/{number}")
        except NotFound:
            self._issue_index.pop((repo, key), None)
            return None
        mi = self._marked(repo, it)
        return mi if mi is not None and marker_key(mi.marker) == key else None

    def _ours_by_number(self, repo: str, number: int, marker: dict[str, Any]) -> MarkedIssue | None:
        """Issue `number` when we opened it (whatever its body says now), as if marked `marker`."""
        try:
            it = self._get(f"/repos/{repo}/issues/{number}")
        except NotFound:
            return None
        if "pull_request" in it or not self._ours(_login(it.get("user"))):
            return None
        self._issue_index[(repo, marker_key(marker))] = number
        return MarkedIssue(
            repo=repo,
            number=number,
            state=it.get("state", "open"),
            title=it.get("title") or "",
            body=it.get("body") or "",
            labels=tuple(lb["name"] for lb in it.get("labels") or ()),
            marker=dict(marker),
            created_at=_dt(it.get("created_at")),
            closed_at=_dt(it.get("closed_at")),
            author=_login(it.get("user")),
        )

    def ensure_issue(
        self,
        repo: str,
        marker: dict[str, Any],
        title: str,
        body: str,
        labels: Iterable[str] = (),
        *,
        reopen: bool = False,
        number: int | None = None,
    ) -> MarkedIssue:
        """Create the issue for `marker` (kind+key), or update title/body, add missing labels.

        Labels are only added, never removed here (an owner's or the daemon's extra labels stay).
        A closed issue stays closed unless `reopen`. `number`: the issue the caller recorded for
        this marker; when it is still one of ours it is used even if someone rewrote its body
        and marker (so the body is restored instead of a duplicate being opened).
        """
        labels = list(dict.fromkeys(labels))
        text = fit_body(body, marker, self.state_dir)
        if (repo, marker_key(marker)) in self._unsure:
            self._indexed.discard(repo)  # a lost create may have landed since the last scan
        cur = self.find_issue(repo, marker)
        if cur is None and number is not None:
            cur = self._ours_by_number(repo, number, marker)
        if cur is not None:
            self._unsure.discard((repo, marker_key(marker)))
        else:
            self._ensure_repo_labels(repo, labels)
            try:
                _, it = self._req(
                    "POST",
                    f"/repos/{repo}/issues",
                    body={"title": title, "body": text, "labels": labels},
                )
            except ForgeError:
                # the reply was lost or refused: GitHub may still have created the issue, so the
                # marker index is no longer complete — rescan before the next create (no duplicate)
                self._indexed.discard(repo)
                self._unsure.add((repo, marker_key(marker)))
                raise
            mi = self._marked(repo, it)
            assert mi is not None
            self._unsure.discard((repo, marker_key(marker)))
            self._issue_index[(repo, marker_key(marker))] = mi.number
            log.info(
                "forge.write",
                op="create_issue",
                repo=repo,
                number=mi.number,
                kind=marker.get("kind"),
            )
            return mi
        patch: dict[str, Any] = {}
        if cur.title != title:
            patch["title"] = title
        if cur.body != text:
            patch["body"] = text
        if reopen and cur.state != "open":
            patch["state"] = "open"
        result = cur
        if patch:
            _, it = self._req("PATCH", f"/repos/{repo}/issues/{cur.number}", body=patch)
            result = self._marked(repo, it) or cur
            log.info(
                "forge.write", op="update_issue", repo=repo, number=cur.number, fields=sorted(patch)
            )
        missing = [lb for lb in labels if lb not in result.labels]
        if missing:
            self._ensure_repo_labels(repo, missing)
            _, data = self._req(
                "POST", f"/repos/{repo}/issues/{cur.number}/labels", body={"labels": missing}
            )
            result = dataclasses.replace(result, labels=tuple(lb["name"] for lb in data))
            log.info("forge.write", op="add_labels", repo=repo, number=cur.number, labels=missing)
        if not patch and not missing:
            log.info("forge.write", op="ensure_issue", repo=repo, number=cur.number, noop=True)
        return result

    def close_issue(self, repo: str, number: int, comment: str | None = None) -> bool:
        """Close an issue (optional one-time comment); False when already closed and commented."""
        wrote = False
        if comment:
            wrote = self.comment_once(
                repo, number, {"kind": "close", "issue": f"{repo}#{number}"}, comment
            )
        it = self._get(f"/repos/{repo}/issues/{number}")
        if it.get("state") != "closed":
            self._req(
                "PATCH",
                f"/repos/{repo}/issues/{number}",
                body={"state": "closed", "state_reason": "completed"},
            )
            log.info("forge.write", op="close_issue", repo=repo, number=number)
            wrote = True
        return wrote

    def comment_once(self, repo: str, number: int, marker: dict[str, Any], body: str) -> bool:
        """Post `body` unless one of our comments carries an equal marker; True when posted."""
        want = canonical_json(dict(marker))
        for c in self._pages(f"/repos/{repo}/issues/{number}/comments"):
            if self._ours(_login(c.get("user"))):
                m = parse_marker(c.get("body"))
                if m is not None and canonical_json(m) == want:
                    log.info("forge.write", op="comment", repo=repo, number=number, noop=True)
                    return False
        self._req(
            "POST",
            f"/repos/{repo}/issues/{number}/comments",
            body={"body": fit_body(body, marker, self.state_dir)},
        )
        log.info("forge.write", op="comment", repo=repo, number=number, kind=marker.get("kind"))
        return True

    def add_labels(self, repo: str, number: int, labels: Iterable[str]) -> bool:
        """Add the labels the issue/PR lacks (created in the repo if needed); False if none."""
        it = self._get(f"/repos/{repo}/issues/{number}")
        have = {lb["name"] for lb in it.get("labels") or ()}
        missing = [lb for lb in dict.fromkeys(labels) if lb not in have]
        if not missing:
            return False
        self._ensure_repo_labels(repo, missing)
        self._req("POST", f"/repos/{repo}/issues/{number}/labels", body={"labels": missing})
        log.info("forge.write", op="add_labels", repo=repo, number=number, labels=missing)
        return True

    def remove_label(self, repo: str, number: int, label: str) -> bool:
        """Remove a label if present; False when it was not there."""
        it = self._get(f"/repos/{repo}/issues/{number}")
        if label not in {lb["name"] for lb in it.get("labels") or ()}:
            return False
        try:
            self._req("DELETE", f"/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}")
        except NotFound:
            return False
        log.info("forge.write", op="remove_label", repo=repo, number=number, label=label)
        return True

    def _ensure_repo_labels(self, repo: str, labels: Iterable[str]) -> None:
        labels = list(labels)
        if not labels:
            return
        known = self._labels.get(repo)
        if known is None or any(lb not in known for lb in labels):
            known = {lb["name"] for lb in self._pages(f"/repos/{repo}/labels")}
            self._labels[repo] = known
        for lb in labels:
            if lb in known:
                continue
            try:
                self._req("POST", f"/repos/{repo}/labels", body={"name": lb, "color": LABEL_COLOR})
                log.info("forge.write", op="create_label", repo=repo, label=lb)
            except Invalid:  # already exists (created meanwhile)
                pass
            known.add(lb)

    def close_pr(self, repo: str, number: int, comment: str | None) -> bool:
        """Comment once and close the PR; False when it was already closed and commented."""
        wrote = False
        if comment:
            wrote = self.comment_once(
                repo, number, {"kind": "close-pr", "pr": f"{repo}#{number}"}, comment
            )
        pr = self._get(f"/repos/{repo}/pulls/{number}")
        if pr.get("state") != "closed":
            self._req("PATCH", f"/repos/{repo}/pulls/{number}", body={"state": "closed"})
            log.info("forge.write", op="close_pr", repo=repo, number=number)
            wrote = True
        return wrote

    def merge(
        self, repo: str, number: int, sha: str, method: str, *, base: str | None = None
    ) -> str:
        """Merge at exactly `sha` with `method`; the merge commit's sha. HeadMoved if head moved;
        BaseMoved if `base` is given and the PR targets another branch (read right before the
        merge call; GitHub's merge call guards the head sha only).

        Idempotent: a PR already merged at `sha` returns its merge commit without a second merge.
        """
        pr = self._get(f"/repos/{repo}/pulls/{number}")
        found = str((pr.get("base") or {}).get("ref") or "")
        if base is not None and found != base:
            raise BaseMoved(
                f"{repo}#{number} targets {found or '?'}, not the approved base {base}",
                found=found,
                status=409,
            )
        if pr.get("merged"):
            if pr["head"]["sha"] != sha:
                raise HeadMoved(
                    f"{repo}#{number} was merged at {pr['head']['sha'][:12]}, not {sha[:12]}",
                    status=409,
                )
            return str(pr.get("merge_commit_sha"))
        if pr["head"]["sha"] != sha:
            raise HeadMoved(
                f"{repo}#{number} head is {pr['head']['sha'][:12]}, expected {sha[:12]}", status=409
            )
        try:
            _, data = self._req(
                "PUT",
                f"/repos/{repo}/pulls/{number}/merge",
                body={"sha": sha, "merge_method": method},
            )
        except NotMergeable:
            again = self._get(f"/repos/{repo}/pulls/{number}")  # a retried PUT after a lost reply
            if again.get("merged") and again["head"]["sha"] == sha:
                return str(again.get("merge_commit_sha"))
            raise
        log.info("forge.write", op="merge", repo=repo, number=number, sha=sha[:12], method=method)
        return str(data["sha"])

    def create_revert_pr(
        self, repo: str, merge_sha: str, base: str, *, title: str, body: str, label: str
    ) -> int:
        """Open (once) a PR reverting single-parent commit `merge_sha` on `base`; its number."""
        number, _ = self.open_revert_pr(repo, merge_sha, base, title=title, body=body, label=label)
        return number

    def open_revert_pr(
        self, repo: str, merge_sha: str, base: str, *, title: str, body: str, label: str
    ) -> tuple[int, str]:
        """Open (once) a PR reverting single-parent commit `merge_sha` on `base`.

        Returns (PR number, the revert commit sha the PR was opened with). The daemon trusts
        the bot's own `decision:auto-revert` label only at exactly that head. When the PR
        already existed (a retry after a crash), its head as listed now is returned.

        The revert tree is the parent's tree when `base` is still at `merge_sha`; else each path
        the commit changed is restored to its parent version, and RevertConflict is raised when such
        a path changed since (the revert does not apply cleanly) or the commit has several parents.
        """
        branch = f"capdaemon/revert-{merge_sha[:12]}"
        marker = {"kind": "revert", "key": f"{repo}@{merge_sha}"}
        owner = repo.split("/")[0]
        for p in self._pages(f"/repos/{repo}/pulls", {"state": "all", "head": f"{owner}:{branch}"}):
            if p["head"].get("ref") == branch and self._ours(_login(p.get("user"))):
                self.add_labels(repo, int(p["number"]), [label])
                return int(p["number"]), str(p["head"].get("sha") or "")
        commit_sha = self._ref_sha(repo, branch)
        if commit_sha is None:
            commit_sha = self._revert_commit(repo, merge_sha, base)
            try:
                self._req(
                    "POST",
                    f"/repos/{repo}/git/refs",
                    body={"ref": f"refs/heads/{branch}", "sha": commit_sha},
                )
            except Invalid:  # created meanwhile
                pass
        _, pr = self._req(
            "POST",
            f"/repos/{repo}/pulls",
            body={
                "title": title,
                "head": branch,
                "base": base,
                "body": fit_body(body, marker, self.state_dir),
            },
        )
        number = int(pr["number"])
        self.add_labels(repo, number, [label])
        log.info(
            "forge.write", op="create_revert_pr", repo=repo, number=number, reverts=merge_sha[:12]
        )
        return number, commit_sha

    def _ref_sha(self, repo: str, branch: str) -> str | None:
        try:
            data = self._get(f"/repos/{repo}/git/ref/heads/{quote(branch, safe='/')}")
        except NotFound:
            return None
        return str(data["object"]["sha"])

    def _revert_commit(self, repo: str, merge_sha: str, base: str) -> str:
        m = self._get(f"/repos/{repo}/git/commits/{merge_sha}")
        parents = [p["sha"] for p in m.get("parents") or ()]
        if len(parents) != 1:
            raise RevertConflict(
                f"{merge_sha[:12]} has {len(parents)} parents; only single-parent commits revert"
            )
        parent = parents[0]
        base_head = self._ref_sha(repo, base)
        if base_head is None:
            raise NotFound(f"branch {base} of {repo} not found", status=404)
        if base_head == merge_sha:
            tree = self._get(f"/repos/{repo}/git/commits/{parent}")["tree"]["sha"]
        else:
            cmp = self._get(f"/repos/{repo}/compare/{parent}...{merge_sha}")
            changed = cmp.get("files") or []
            if len(changed) >= COMPARE_MAX_FILES:
                raise RevertConflict(
                    f"{merge_sha[:12]} changes {len(changed)}+ files; too many to revert per path"
                )
            paths = set()
            for f in changed:
                paths.add(f["filename"])
                if f.get("previous_filename"):
                    paths.add(f["previous_filename"])
            at_parent = self._entries(repo, parent, paths)
            at_merge = self._entries(repo, merge_sha, paths)
            at_base = self._entries(repo, base_head, paths)
            items: list[dict[str, Any]] = []
            for p in sorted(paths):
                if at_base.get(p) != at_merge.get(p):
                    raise RevertConflict(
                        f"revert of {merge_sha[:12]} does not apply cleanly: {p} changed since"
                    )
                want = at_parent.get(p)
                if want is None:
                    if p in at_base:
                        items.append(
                            {"path": p, "mode": at_base[p][0], "type": at_base[p][1], "sha": None}
                        )
                else:
                    items.append({"path": p, "mode": want[0], "type": want[1], "sha": want[2]})
            base_tree = self._get(f"/repos/{repo}/git/commits/{base_head}")["tree"]["sha"]
            _, t = self._req(
                "POST", f"/repos/{repo}/git/trees", body={"base_tree": base_tree, "tree": items}
            )
            tree = t["sha"]
        subject = (m.get("message") or "").splitlines()[0] if m.get("message") else merge_sha[:12]
        message = f'Revert "{subject}"\n\nThis reverts commit {merge_sha}.\n'
        _, c = self._req(
            "POST",
            f"/repos/{repo}/git/commits",
            body={"message": message, "tree": tree, "parents": [base_head]},
        )
        return str(c["sha"])

    def set_protection(
        self,
        repo: str,
        branch: str,
        check_name: str = CHECK_NAME,
        app_id: int | None = None,
        *,
        enforce_admins: bool = False,
    ) -> bool:
        """Require `check_name` (from `app_id`), PRs, no force pushes on `branch`; False if so."""
        cur = self.get_protection(repo, branch)
        if cur is not None and protection_ok(cur, check_name, app_id):
            return False
        checks: list[dict[str, Any]] = []
        strict = False
        if cur is not None:
            rsc = cur.get("required_status_checks") or {}
            strict = bool(rsc.get("strict"))
            for c in rsc.get("checks") or [{"context": ctx} for ctx in rsc.get("contexts") or ()]:
                if c.get("context") != check_name:
                    checks.append(
                        {k: v for k, v in c.items() if k in ("context", "app_id") and v is not None}
                    )
        mine: dict[str, Any] = {"context": check_name}
        if app_id is not None:
            mine["app_id"] = app_id
        checks.append(mine)
        body = {
            "required_status_checks": {"strict": strict, "checks": checks},
            "enforce_admins": enforce_admins,
            "required_pull_request_reviews": {"required_approving_review_count": 0},
            "restrictions": None,
            "allow_force_pushes": False,
            "allow_deletions": False,
        }
        self._req("PUT", f"/repos/{repo}/branches/{quote(branch, safe='')}/protection", body=body)
        log.info("forge.write", op="set_protection", repo=repo, branch=branch, check=check_name)
        return True

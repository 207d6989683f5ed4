"""Revert PRs: a commit that undoes one merged change, opened once as a labelled PR."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from capdaemon.forge.convert import COMPARE_MAX_FILES, _login, log
from capdaemon.forge.errors import Invalid, NotFound, RevertConflict
from capdaemon.forge.overflow import fit_body

if TYPE_CHECKING:
    from capdaemon.forge.files import Files
    from capdaemon.forge.issues import Issues
    from capdaemon.forge.session import ForgeSession


class Reverts:
    """Opens the PR that reverts a merge (idempotent: a retry finds the PR it opened)."""

    def __init__(self, session: ForgeSession, files: Files, issues: Issues) -> None:
        self._http = session.http
        self._identity = session.identity
        self._overflow = session.overflow
        self._files = files
        self._issues = issues

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
        for p in self._http.pages(
            f"/repos/{repo}/pulls", {"state": "all", "head": f"{owner}:{branch}"}
        ):
            if p["head"].get("ref") == branch and self._identity.ours(_login(p.get("user"))):
                self._issues.add_labels(repo, int(p["number"]), [label])
                return int(p["number"]), str(p["head"].get("sha") or "")
        commit_sha = self._ref_sha(repo, branch)
        if commit_sha is None:
            commit_sha = self._revert_commit(repo, merge_sha, base)
            try:
                self._http.req(
                    "POST",
                    f"/repos/{repo}/git/refs",
                    body={"ref": f"refs/heads/{branch}", "sha": commit_sha},
                )
            except Invalid:  # created meanwhile
                pass
        _, pr = self._http.req(
            "POST",
            f"/repos/{repo}/pulls",
            body={
                "title": title,
                "head": branch,
                "base": base,
                "body": fit_body(body, marker, self._overflow.path),
            },
        )
        number = int(pr["number"])
        self._issues.add_labels(repo, number, [label])
        log.info(
            "forge.write", op="create_revert_pr", repo=repo, number=number, reverts=merge_sha[:12]
        )
        return number, commit_sha

    def _ref_sha(self, repo: str, branch: str) -> str | None:
        try:
            data = self._http.get(f"/repos/{repo}/git/ref/heads/{quote(branch, safe='/')}")
        except NotFound:
            return None
        return str(data["object"]["sha"])

    def _revert_commit(self, repo: str, merge_sha: str, base: str) -> str:
        m = self._http.get(f"/repos/{repo}/git/commits/{merge_sha}")
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
            tree = str(self._http.get(f"/repos/{repo}/git/commits/{parent}")["tree"]["sha"])
        else:
            tree = self._restored_tree(repo, merge_sha, parent, base_head)
        subject = (m.get("message") or "").splitlines()[0] if m.get("message") else merge_sha[:12]
        message = f'Revert "{subject}"\n\nThis reverts commit {merge_sha}.\n'
        _, c = self._http.req(
            "POST",
            f"/repos/{repo}/git/commits",
            body={"message": message, "tree": tree, "parents": [base_head]},
        )
        return str(c["sha"])

    def _restored_tree(self, repo: str, merge_sha: str, parent: str, base_head: str) -> str:
        """A tree: `base_head`'s with each path `merge_sha` changed restored to `parent`'s
        version (RevertConflict when such a path changed since, or too many changed)."""
        cmp = self._http.get(f"/repos/{repo}/compare/{parent}...{merge_sha}")
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
        at_parent = self._files.entries(repo, parent, paths)
        at_merge = self._files.entries(repo, merge_sha, paths)
        at_base = self._files.entries(repo, base_head, paths)
        items: list[dict[str, Any]] = []
        for p in sorted(paths):
            if at_base.get(p) != at_merge.get(p):
                raise RevertConflict(
                    f"revert of {merge_sha[:12]} does not apply cleanly: {p} changed since"
                )
            want = at_parent.get(p)
            if want is None:
                if p in at_base:
                    mode, kind, _ = at_base[p]
                    items.append({"path": p, "mode": mode, "type": kind, "sha": None})
            else:
                items.append({"path": p, "mode": want[0], "type": want[1], "sha": want[2]})
        base_tree = self._http.get(f"/repos/{repo}/git/commits/{base_head}")["tree"]["sha"]
        body = {"base_tree": base_tree, "tree": items}
        _, t = self._http.req("POST", f"/repos/{repo}/git/trees", body=body)
        return str(t["sha"])

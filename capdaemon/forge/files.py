"""Forge reads of git objects: tree entries (modes), blobs and files at a ref, cached by sha."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from capdaemon.forge.convert import Entry, _decode
from capdaemon.forge.errors import Incomplete, NotFound

if TYPE_CHECKING:
    from capdaemon.forge.session import ForgeSession


class Files:
    """Trees, blobs and file contents (a sha never changes, so each is read once)."""

    def __init__(self, session: ForgeSession) -> None:
        self._http = session.http
        self._caches = session.caches

    def entries(
        self, repo: str, commit_sha: str, paths: set[str], *, shared: bool = False
    ) -> dict[str, Entry]:
        """(mode, type, sha) of each of `paths` at a commit (absent paths left out).

        `shared`: the commit is a merge base many PRs share; its whole tree is kept apart
        (``ShaCaches.base_tree``, also across processes), not pushed out by PR heads.

        The answer for the paths asked is kept per commit (``ShaCaches.paths``, also across
        processes); otherwise one recursive tree per commit (cached: a sha never changes); if
        GitHub truncates it (huge repos), walk only the directories on the changed paths, one
        non-recursive tree each.
        """
        if not paths:
            return {}
        key = (repo, commit_sha)
        known = self._caches.paths.get_(key)
        if known is not None and paths <= known.keys():
            return {p: e for p in paths if (e := known[p]) is not None}
        found = self._entries(repo, commit_sha, paths, shared)
        record = dict(known or {})
        record.update({p: found.get(p) for p in paths})
        self._caches.paths.put(key, record)
        return found

    def _entries(
        self, repo: str, commit_sha: str, paths: set[str], shared: bool
    ) -> dict[str, Entry]:
        key = (repo, commit_sha)
        trees = self._caches.base_tree if shared else self._caches.tree
        index = trees.get_(key)
        if index is None:
            data = self._http.get(f"/repos/{repo}/git/trees/{commit_sha}", {"recursive": "1"})
            if not data.get("truncated"):
                index = {
                    e["path"]: (e["mode"], e["type"], e["sha"])
                    for e in data.get("tree", ())
                    if e.get("type") != "tree"
                }
                trees.put(key, index)
        if index is not None:
            return {p: index[p] for p in paths if p in index}
        return {p: e for p in paths if (e := self._walk(repo, commit_sha, p)) is not None}

    def _listing(self, repo: str, tree_sha: str) -> dict[str, Entry]:
        """The entries of one tree, not recursive (cached)."""
        listing = self._caches.subtree.get_((repo, tree_sha))
        if listing is None:
            data = self._http.get(f"/repos/{repo}/git/trees/{tree_sha}")
            if data.get("truncated"):
                raise Incomplete(f"tree {tree_sha} of {repo} is truncated")
            listing = {e["path"]: (e["mode"], e["type"], e["sha"]) for e in data.get("tree", ())}
            self._caches.subtree.put((repo, tree_sha), listing)
        return listing

    def _walk(self, repo: str, tree_ish: str, path: str) -> Entry | None:
        parts = path.split("/")
        cur = tree_ish
        for i, name in enumerate(parts):
            e = self._listing(repo, cur).get(name)
            if e is None:
                return None
            if i == len(parts) - 1:
                return e
            if e[1] != "tree":
                return None
            cur = e[2]
        return None

    def blob(self, repo: str, sha: str) -> str | None:
        """A blob's text (None when binary or too big)."""
        key = (repo, sha)
        found, hit = self._caches.blob.find(key)  # None is a valid answer (binary or too big)
        if found:
            return hit
        data = self._http.get(f"/repos/{repo}/git/blobs/{sha}")
        text: str | None = (
            _decode(data.get("content"))
            if data.get("encoding", "base64") == "base64"
            else data.get("content")
        )
        self._caches.blob.put(key, text)
        return text

    def read_file(self, repo: str, path: str, ref: str, *, strict: bool = False) -> str | None:
        """A file's text at `ref` (None when absent or binary; strict: absence raises NotFound)."""
        try:
            data = self._http.get(f"/repos/{repo}/contents/{quote(path)}", {"ref": ref})
        except NotFound:
            if strict:
                raise
            return None
        if not isinstance(data, dict) or data.get("type") not in ("file", "symlink", None):
            return None
        if data.get("content") is None and data.get("sha"):
            return self.blob(repo, data["sha"])
        return _decode(data.get("content"))

"""Plumbing over real bare git repositories: commits, trees, blobs, logs, diffs, merges."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .gitrefs import GitRefs
from .gittypes import SHA_RANGE, ZERO, CommitInfo, CommitSpec, Person, epoch, is_sha, quote_path


class GitRepo(GitRefs):
    """A bare repository on disk, driven through git plumbing commands."""

    def fast_import(self, commits: list[CommitSpec]) -> list[str]:
        """Write commits with one ``git fast-import`` run; return their shas in order."""
        if not commits:
            return []
        chunks: list[bytes] = []
        for i, c in enumerate(commits, start=1):
            committer = c.committer or c.author
            msg = c.message.encode()
            ts = epoch(c.when)
            chunks.append(
                f"commit refs/heads/{c.branch}\nmark :{i}\n"
                f"author {c.author.name} <{c.author.email}> {ts} +0000\n"
                f"committer {committer.name} <{committer.email}> {ts} +0000\n"
                f"data {len(msg)}\n".encode()
                + msg
                + b"\n"
            )
            if c.parent:
                chunks.append(f"from {c.parent}\n".encode())
            for p in c.extra_parents:
                chunks.append(f"merge {p}\n".encode())
            for path, value in c.files.items():
                qp = quote_path(path).encode()
                if value is None:
                    chunks.append(b"D " + qp + b"\n")
                    continue
                mode = "100644"
                content: Any = value
                if isinstance(value, dict):
                    mode = str(value.get("mode", "100644"))
                    content = value.get("content", "")
                if mode == "160000":
                    chunks.append(f"M 160000 {content} ".encode() + qp + b"\n")
                    continue
                data = content.encode() if isinstance(content, str) else bytes(content)
                chunks.append(
                    f"M {mode} inline ".encode()
                    + qp
                    + f"\ndata {len(data)}\n".encode()
                    + data
                    + b"\n"
                )
            chunks.append(b"\n")
        with tempfile.NamedTemporaryFile(prefix="marks-", dir=self.path, delete=False) as fh:
            marks = Path(fh.name)
        table, gen = self._ref_snapshot()
        try:
            self.run(
                "fast-import",
                "--quiet",
                "--force",
                f"--export-marks={marks}",
                input=b"".join(chunks),
            )
            marks_table = {}
            for line in marks.read_text().splitlines():
                mark, _, sha = line.partition(" ")
                marks_table[int(mark[1:])] = sha
        finally:
            marks.unlink(missing_ok=True)
        shas = [marks_table[i] for i in range(1, len(commits) + 1)]
        tips = {f"refs/heads/{c.branch}": sha for c, sha in zip(commits, shas, strict=True)}
        self._patch_refs(table, gen, {ref: (sha, "commit", sha) for ref, sha in tips.items()})
        for sha in shas:
            self._memo.put(("type", sha), "commit")
        return shas

    def commit_tree(
        self,
        tree: str,
        parents: list[str],
        message: str,
        author: Person,
        when: datetime,
        committer: Person | None = None,
        committer_when: datetime | None = None,
    ) -> str:
        """Create a commit object from a tree and parents."""
        committer = committer or author
        env = {
            "GIT_AUTHOR_NAME": author.name,
            "GIT_AUTHOR_EMAIL": author.email,
            "GIT_AUTHOR_DATE": f"{epoch(when)} +0000",
            "GIT_COMMITTER_NAME": committer.name,
            "GIT_COMMITTER_EMAIL": committer.email,
            "GIT_COMMITTER_DATE": f"{epoch(committer_when or when)} +0000",
        }
        args = ["commit-tree", tree]
        for p in parents:
            args += ["-p", p]
        return self.out(*args, input=message.encode(), env=env)

    def hash_blob(self, data: bytes) -> str:
        """Store a blob and return its sha."""
        return self.out("hash-object", "-w", "--stdin", input=data)

    def build_tree(self, base_tree: str | None, entries: list[dict[str, Any]]) -> str:
        """Create a tree from ``base_tree`` plus GitHub-style tree entries."""
        with tempfile.TemporaryDirectory(prefix="idx-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if base_tree:
                self.run("read-tree", base_tree, env=env)
            else:
                self.run("read-tree", "--empty", env=env)
            lines: list[bytes] = []
            subtrees: list[tuple[str, str]] = []
            for e in entries:
                path = e["path"].strip("/")
                if e.get("type") == "tree" or e.get("mode") == "040000":
                    if e.get("sha"):
                        subtrees.append((path, e["sha"]))
                    else:
                        lines.append(f"0 {ZERO}\t{path}".encode() + b"\0")
                    continue
                sha = e.get("sha")
                if "content" in e and e["content"] is not None:
                    sha = self.hash_blob(e["content"].encode())
                if sha is None:
                    lines.append(f"0 {ZERO}\t{path}".encode() + b"\0")
                else:
                    lines.append(f"{e['mode']} {sha}\t{path}".encode() + b"\0")
            if lines:
                self.run("update-index", "-z", "--index-info", input=b"".join(lines), env=env)
            for path, sha in subtrees:
                existing = self.run("ls-files", "-z", "--", f"{path}/", env=env).stdout
                if existing:
                    self.run(
                        "update-index", "-z", "--force-remove", "--stdin", input=existing, env=env
                    )
                self.run("read-tree", f"--prefix={path}/", sha, env=env)
            return self.out("write-tree", env=env)

    def commit_info(self, rev: str) -> CommitInfo | None:
        """Parse one commit, or None if ``rev`` is not a commit."""
        infos = self.log_range([rev], limit=1, no_walk=True)
        return infos[0] if infos else None

    def log_range(
        self,
        revs: list[str],
        limit: int | None = None,
        no_walk: bool = False,
        reverse: bool = False,
    ) -> list[CommitInfo]:
        """Commits selected by ``git log revs`` (newest first unless ``reverse``)."""
        if revs and all(SHA_RANGE.match(r) for r in revs):
            key = ("log", tuple(revs), limit, no_walk, reverse)
            hit = self._memo.get(key)
            if hit is None:
                hit = self._memo.put(key, tuple(self._log_range(revs, limit, no_walk, reverse)))
            return list(hit)
        return self._log_range(revs, limit, no_walk, reverse)

    def _log_range(
        self, revs: list[str], limit: int | None, no_walk: bool, reverse: bool
    ) -> list[CommitInfo]:
        fmt = "%x1e%H%x1f%T%x1f%P%x1f%an%x1f%ae%x1f%at%x1f%cn%x1f%ce%x1f%ct%x1f%B"
        args = ["log", f"--format={fmt}"]
        if no_walk:
            args.append("--no-walk")
        if reverse:
            args.append("--reverse")
        if limit is not None and not reverse:
            args.append(f"--max-count={limit}")
        proc = self.run(*args, *revs, "--", ok_codes=(0, 128))
        if proc.returncode != 0:
            return []
        out = []
        for rec in proc.stdout.decode("utf-8", "replace").split("\x1e")[1:]:
            f = rec.split("\x1f")
            out.append(
                CommitInfo(
                    sha=f[0],
                    tree=f[1],
                    parents=f[2].split() if f[2] else [],
                    author=Person(f[3], f[4]),
                    author_date=datetime.fromtimestamp(int(f[5]), UTC),
                    committer=Person(f[6], f[7]),
                    committer_date=datetime.fromtimestamp(int(f[8]), UTC),
                    message=f[9].rstrip("\n"),
                )
            )
        if limit is not None and reverse:
            out = out[:limit]
        return out

    def count_range(self, base: str, head: str) -> int:
        """How many commits are in ``base..head``."""
        return int(
            self._memoised(
                ("count", base, head),
                (base, head),
                lambda: int(self.out("rev-list", "--count", f"{base}..{head}")),
            )
        )

    def cat_blob(self, sha: str) -> bytes:
        """The raw bytes of a blob (small blobs are remembered by sha)."""
        if is_sha(sha):
            hit = self._memo.get(("blob", sha))
            if hit is not None:
                return hit  # type: ignore[no-any-return]
        data = self.run("cat-file", "blob", sha).stdout
        if is_sha(sha) and len(data) <= 64 * 1024:
            self._memo.put(("blob", sha), data)
        return data

    def ls_tree(
        self, tree: str, recursive: bool = False, path: str | None = None
    ) -> list[dict[str, Any]]:
        """Tree entries (mode, type, sha, size, path)."""
        if is_sha(tree):
            key = ("ls-tree", tree, recursive, path)
            hit = self._memo.get(key)
            if hit is None:
                hit = self._memo.put(key, tuple(self._ls_tree(tree, recursive, path)))
            return [dict(e) for e in hit]
        return self._ls_tree(tree, recursive, path)

    def _ls_tree(self, tree: str, recursive: bool, path: str | None) -> list[dict[str, Any]]:
        args = ["ls-tree", "-z", "-l", "--full-tree"]
        if recursive:
            args += ["-r", "-t"]
        args.append(tree)
        if path is not None:
            args += ["--", path]
        proc = self.run(*args, ok_codes=(0, 128))
        if proc.returncode != 0:
            return []
        out = []
        for rec in proc.stdout.split(b"\0"):
            if not rec:
                continue
            meta, _, p = rec.partition(b"\t")
            mode, typ, sha, size = meta.decode().split(maxsplit=3)
            out.append(
                {
                    "mode": mode,
                    "type": typ,
                    "sha": sha,
                    "size": None if size.strip() == "-" else int(size),
                    "path": p.decode("utf-8", "replace"),
                }
            )
        return out

    def merge_tree(self, ours: str, theirs: str) -> tuple[bool, str | None]:
        """Three-way merge with ``git merge-tree --write-tree``: (clean, tree sha or None)."""
        key = (ours, theirs)
        cached = self._merge_cache.get(key) if is_sha(ours) and is_sha(theirs) else None
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        proc = self.run(
            "merge-tree", "--write-tree", "--no-messages", ours, theirs, ok_codes=(0, 1)
        )
        tree = proc.stdout.decode().split("\n", 1)[0].strip() or None
        result = (proc.returncode == 0, tree if proc.returncode == 0 else None)
        if is_sha(ours) and is_sha(theirs):
            self._merge_cache.put(key, result)
        return result

    def diff_files(self, base: str, head: str) -> list[dict[str, Any]]:
        """GitHub-style changed files between two commits (status, counts, patch)."""
        key = (base, head)
        immutable = is_sha(base) and is_sha(head)
        cached = self._diff_cache.get(key) if immutable else None
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        raw = self.run("diff", "--raw", "--numstat", "-z", "-M", "--no-abbrev", base, head).stdout
        tokens = raw.split(b"\0")
        entries: list[dict[str, Any]] = []
        stats: list[tuple[str, str]] = []
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if not tok:
                i += 1
                continue
            if tok.startswith(b":"):
                meta = tok[1:].decode().split()
                old_mode, new_mode, old_sha, new_sha, status = meta[:5]
                letter = status[0]
                if letter in "RC":
                    prev, path = (
                        tokens[i + 1].decode("utf-8", "replace"),
                        tokens[i + 2].decode("utf-8", "replace"),
                    )
                    i += 3
                else:
                    prev, path = None, tokens[i + 1].decode("utf-8", "replace")
                    i += 2
                entries.append(
                    {
                        "letter": letter,
                        "old_mode": old_mode,
                        "new_mode": new_mode,
                        "old_sha": old_sha,
                        "new_sha": new_sha,
                        "filename": path,
                        "previous_filename": prev,
                    }
                )
            else:
                parts = tok.decode().split("\t")
                if len(parts) >= 3 and parts[2] == "":
                    i += 3  # rename: path pair follows
                else:
                    i += 1
                stats.append((parts[0], parts[1]))
        patches = self._split_patches(
            self.run("diff", "-M", "--no-color", "--no-ext-diff", base, head).stdout
        )
        status_names = {
            "A": "added",
            "D": "removed",
            "M": "modified",
            "R": "renamed",
            "C": "copied",
            "T": "changed",
        }
        files: list[dict[str, Any]] = []
        for n, e in enumerate(entries):
            add, dele = stats[n] if n < len(stats) else ("0", "0")
            binary = add == "-"
            adds = 0 if binary else int(add)
            dels = 0 if binary else int(dele)
            status = status_names.get(e["letter"], "modified")
            if status == "modified" and e["old_mode"] != e["new_mode"] and adds == dels == 0:
                status = "changed"
            item: dict[str, Any] = {
                "filename": e["filename"],
                "status": status,
                "additions": adds,
                "deletions": dels,
                "changes": adds + dels,
                "sha": e["old_sha"] if e["letter"] == "D" else e["new_sha"],
                "old_mode": e["old_mode"],
                "new_mode": e["new_mode"],
                "binary": binary,
            }
            if e["previous_filename"]:
                item["previous_filename"] = e["previous_filename"]
            patch = patches[n] if n < len(patches) else None
            if patch is not None and not binary:
                item["patch"] = patch
            files.append(item)
        if immutable:
            self._diff_cache.put(key, files)
        return files

    @staticmethod
    def _split_patches(text: bytes) -> list[str | None]:
        out: list[str | None] = []
        if not text:
            return out
        blocks = text.split(b"\ndiff --git ")
        for block in blocks:
            body = block.decode("utf-8", "replace")
            idx = body.find("\n@@")
            if idx < 0:
                out.append(None)
                continue
            patch = body[idx + 1 :]
            out.append(patch.rstrip("\n"))
        return out

    def rebase_commits(
        self, onto: str, commits: list[CommitInfo], committer: Person, when: datetime
    ) -> str | None:
        """Replay ``commits`` (oldest first) onto ``onto`` with plumbing; None on a conflict."""
        tip = onto
        for c in commits:
            if len(c.parents) > 1:
                continue
            if not c.parents:
                return None
            parent = c.parents[0]
            tip_tree = self.out("rev-parse", f"{tip}^{{tree}}")
            # A synthetic commit whose only parent is c's parent: merge-tree uses it as base.
            synthetic = self.commit_tree(
                tip_tree, [parent], "sandbox rebase helper", committer, when
            )
            clean, tree = self.merge_tree(synthetic, c.sha)
            if not clean or tree is None:
                return None
            tip = self.commit_tree(
                tree,
                [tip],
                c.message + "\n",
                c.author,
                c.author_date,
                committer=committer,
                committer_when=when,
            )
        return tip

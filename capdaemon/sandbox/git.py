"""Plumbing over real bare git repositories: commits, diffs, merges, trees, refs."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ZERO = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

PRE_RECEIVE_HOOK = """#!/bin/sh
# capdaemon sandbox: branch protection for pushes (see capdaemon/sandbox/protection.py).
exec "{python}" -I -S "{script}"
"""


class GitError(RuntimeError):
    """A git command failed."""


@dataclass(frozen=True)
class Person:
    """An author or committer identity."""

    name: str
    email: str


@dataclass
class CommitSpec:
    """One commit for :meth:`GitRepo.fast_import`.

    ``files`` maps a path to text/bytes (a regular file), ``None`` (delete) or a dict
    ``{"content": ..., "mode": "100644"|"100755"|"120000"|"160000"}`` (160000: a commit sha).
    """

    branch: str
    files: Mapping[str, Any]
    message: str
    author: Person
    when: datetime
    parent: str | None = None
    committer: Person | None = None
    extra_parents: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CommitInfo:
    """A parsed commit object."""

    sha: str
    tree: str
    parents: list[str]
    author: Person
    author_date: datetime
    committer: Person
    committer_date: datetime
    message: str


def _quote_path(path: str) -> str:
    if any(c in path for c in '"\\\n') or path.startswith(" "):
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return path


def _epoch(dt: datetime) -> int:
    return int(dt.timestamp())


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
        }
    )
    return env


_ENV_LOCK = threading.Lock()
_ENV: dict[str, str] | None = None


def git_env() -> dict[str, str]:
    """The environment git subprocesses run with (computed once, lazily)."""
    global _ENV
    with _ENV_LOCK:
        if _ENV is None:
            _ENV = _base_env()
        return dict(_ENV)


class GitRepo:
    """A bare repository on disk, driven through git plumbing commands."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._diff_cache: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._merge_cache: dict[tuple[str, str], tuple[bool, str | None]] = {}
        self._cache_lock = threading.Lock()

    # -- running ---------------------------------------------------------------------------

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        ok_codes: Iterable[int] = (0,),
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git <args>`` inside the repository; raise GitError on an unexpected exit code."""
        full_env = git_env()
        if env:
            full_env.update(env)
        proc = subprocess.run(
            ["git", *args],
            cwd=self.path,
            input=input,
            capture_output=True,
            env=full_env,
            check=False,
        )
        if proc.returncode not in tuple(ok_codes):
            raise GitError(
                f"git {' '.join(args[:3])} failed ({proc.returncode}): "
                f"{proc.stderr.decode('utf-8', 'replace').strip()}"
            )
        return proc

    def out(
        self, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """Run git and return stdout as stripped text."""
        return self.run(*args, input=input, env=env).stdout.decode("utf-8", "replace").strip()

    # -- setup -----------------------------------------------------------------------------

    def init_bare(self, default_branch: str) -> None:
        """Create the bare repository (laid out directly, no ``git init`` process) with the hook."""
        for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "hooks", "info"):
            (self.path / sub).mkdir(parents=True, exist_ok=True)
        (self.path / "HEAD").write_text(f"ref: refs/heads/{default_branch}\n", encoding="utf-8")
        (self.path / "config").write_text(
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"
            "\tlogAllRefUpdates = false\n[http]\n\treceivepack = true\n"
            "[receive]\n\tdenyDeleteCurrent = ignore\n[gc]\n\tauto = 0\n",
            encoding="utf-8",
        )
        (self.path / "description").write_text("capdaemon sandbox repository\n", encoding="utf-8")
        self.install_hooks()

    def install_hooks(self) -> None:
        """Write the pre-receive hook that enforces branch protection on pushes."""
        hook = self.path / "hooks" / "pre-receive"
        hook.parent.mkdir(parents=True, exist_ok=True)
        script = Path(__file__).with_name("protection.py")
        hook.write_text(
            PRE_RECEIVE_HOOK.format(python=sys.executable, script=script), encoding="utf-8"
        )
        hook.chmod(0o755)

    # -- refs ------------------------------------------------------------------------------

    def refs(self, prefix: str = "refs/") -> dict[str, str]:
        """All refs under ``prefix`` mapped to their object ids."""
        text = self.run("for-each-ref", "--format=%(objectname) %(refname)", prefix).stdout.decode()
        out = {}
        for line in text.splitlines():
            sha, _, name = line.partition(" ")
            out[name] = sha
        return out

    def resolve(self, rev: str) -> str | None:
        """Resolve a revision to a commit sha, or None."""
        if not rev or rev.startswith("-"):
            return None
        proc = self.run(
            "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", ok_codes=(0, 1, 128)
        )
        if proc.returncode != 0:
            return None
        return proc.stdout.decode().strip()

    def resolve_ref_or_sha(self, ref: str) -> str | None:
        """Resolve a branch name, tag, full ref or (abbreviated) sha (``{ref}``)."""
        for candidate in (f"refs/heads/{ref}", f"refs/tags/{ref}", ref):
            sha = self.resolve(candidate)
            if sha:
                return sha
        return None

    def object_type(self, sha: str) -> str | None:
        """The type of an object (commit, tree, blob, tag) or None if missing."""
        proc = self.run("cat-file", "-t", sha, ok_codes=(0, 1, 128))
        return proc.stdout.decode().strip() if proc.returncode == 0 else None

    def update_ref(self, ref: str, new: str, old: str | None = None) -> None:
        """Move a ref (optionally only if it still points at ``old``)."""
        args = ["update-ref", ref, new]
        if old is not None:
            args.append(old)
        self.run(*args)

    def delete_ref(self, ref: str) -> None:
        """Delete a ref."""
        self.run("update-ref", "-d", ref)

    def is_ancestor(self, a: str, b: str) -> bool:
        """True if commit ``a`` is an ancestor of (or equal to) ``b``."""
        return self.run("merge-base", "--is-ancestor", a, b, ok_codes=(0, 1)).returncode == 0

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of two commits."""
        proc = self.run("merge-base", a, b, ok_codes=(0, 1))
        return proc.stdout.decode().strip() or None

    # -- writing ---------------------------------------------------------------------------

    def fast_import(self, commits: list[CommitSpec]) -> list[str]:
        """Write commits with one ``git fast-import`` run; return their shas in order."""
        if not commits:
            return []
        chunks: list[bytes] = []
        for i, c in enumerate(commits, start=1):
            committer = c.committer or c.author
            msg = c.message.encode()
            ts = _epoch(c.when)
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
                qp = _quote_path(path).encode()
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
        try:
            self.run(
                "fast-import",
                "--quiet",
                "--force",
                f"--export-marks={marks}",
                input=b"".join(chunks),
            )
            table = {}
            for line in marks.read_text().splitlines():
                mark, _, sha = line.partition(" ")
                table[int(mark[1:])] = sha
        finally:
            marks.unlink(missing_ok=True)
        return [table[i] for i in range(1, len(commits) + 1)]

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
            "GIT_AUTHOR_DATE": f"{_epoch(when)} +0000",
            "GIT_COMMITTER_NAME": committer.name,
            "GIT_COMMITTER_EMAIL": committer.email,
            "GIT_COMMITTER_DATE": f"{_epoch(committer_when or when)} +0000",
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

    # -- reading ---------------------------------------------------------------------------

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
        return int(self.out("rev-list", "--count", f"{base}..{head}"))

    def cat_blob(self, sha: str) -> bytes:
        """The raw bytes of a blob."""
        return self.run("cat-file", "blob", sha).stdout

    def ls_tree(
        self, tree: str, recursive: bool = False, path: str | None = None
    ) -> list[dict[str, Any]]:
        """Tree entries (mode, type, sha, size, path)."""
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
        with self._cache_lock:
            if key in self._merge_cache:
                return self._merge_cache[key]
        proc = self.run(
            "merge-tree", "--write-tree", "--no-messages", ours, theirs, ok_codes=(0, 1)
        )
        tree = proc.stdout.decode().split("\n", 1)[0].strip() or None
        result = (proc.returncode == 0, tree if proc.returncode == 0 else None)
        with self._cache_lock:
            self._merge_cache[key] = result
        return result

    def diff_files(self, base: str, head: str) -> list[dict[str, Any]]:
        """GitHub-style changed files between two commits (status, counts, patch)."""
        key = (base, head)
        with self._cache_lock:
            if key in self._diff_cache:
                return self._diff_cache[key]
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
        with self._cache_lock:
            self._diff_cache[key] = files
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

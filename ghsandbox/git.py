"""Plumbing over real bare git repositories: commits, diffs, merges, trees, refs."""

from __future__ import annotations

import os
import re
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
# capdaemon sandbox: branch protection for pushes (see ghsandbox/protection.py).
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


_SHA = re.compile(r"^[0-9a-f]{40}$")
_SHA_RANGE = re.compile(r"^\^?[0-9a-f]{40}(?:\.\.[0-9a-f]{40})?$")
_PLAIN_REF = re.compile(r"^refs/[A-Za-z0-9._/+-]+$")
# git subcommands that may move refs: the in-memory ref table is dropped when one runs.
_REF_WRITERS = frozenset(
    {
        "update-ref",
        "fast-import",
        "symbolic-ref",
        "pack-refs",
        "gc",
        "branch",
        "tag",
        "fetch",
        "receive-pack",
        "push",
        "replace",
        "reflog",
        "prune",
    }
)
MEMO_LIMIT = 20_000


def is_sha(text: str) -> bool:
    """Is ``text`` a full (40 hex digits) object id? Such names are immutable cache keys."""
    return _SHA.match(text) is not None


class Memo:
    """A thread-safe, size-bounded memo for results keyed by immutable object ids."""

    def __init__(self, limit: int = MEMO_LIMIT) -> None:
        self._data: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self.limit = limit

    def get(self, key: Any, default: Any = None) -> Any:
        """The stored value or ``default``."""
        with self._lock:
            return self._data.get(key, default)

    def put(self, key: Any, value: Any) -> Any:
        """Store ``value`` (dropping the oldest half when full) and return it."""
        with self._lock:
            if len(self._data) >= self.limit:
                for old in list(self._data)[: self.limit // 2]:
                    del self._data[old]
            self._data[key] = value
        return value

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


_ENV_LOCK = threading.Lock()
_ENV: dict[str, str] | None = None


def git_env() -> dict[str, str]:
    """The environment git subprocesses run with (computed once, lazily)."""
    global _ENV
    with _ENV_LOCK:
        if _ENV is None:
            _ENV = _base_env()
        return dict(_ENV)


_UNKNOWN = object()


class GitRepo:
    """A bare repository on disk, driven through git plumbing commands."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._diff_cache = Memo(2_000)
        self._merge_cache = Memo()
        # Answers that only depend on immutable objects (keyed by full shas): merge bases,
        # ancestry, commit counts, logs, object types, trees, small blobs.
        self._memo = Memo()
        self._cache_lock = threading.Lock()
        # refname -> (object id, object type, peeled commit or None); None = reload on demand.
        self._refs: dict[str, tuple[str, str, str | None]] | None = None
        self._ref_tails: frozenset[str] = frozenset()  # slash-bounded suffixes of ref names
        self._ref_commits: frozenset[str] = frozenset()  # commits that refs point at
        self._refs_gen = 0
        self.subprocesses = 0  # git processes started (for tests and profiling)

    # -- caches ----------------------------------------------------------------------------

    def invalidate_refs(self) -> None:
        """Forget the in-memory ref table (call after anything outside this object moved refs;
        pushes through git http-backend and every ref-writing git command run here do)."""
        with self._cache_lock:
            self._refs = None
            self._refs_gen += 1

    def _ref_table(self) -> dict[str, tuple[str, str, str | None]]:
        with self._cache_lock:
            table, gen = self._refs, self._refs_gen
        if table is not None:
            return table
        fmt = "--format=%(objectname) %(objecttype) %(*objectname) %(*objecttype) %(refname)"
        text = self.run("for-each-ref", fmt, "refs/").stdout.decode("utf-8", "replace")
        table = {}
        tails: set[str] = set()
        for line in text.splitlines():
            sha, typ, peeled, peeled_type, name = line.split(" ", 4)
            commit = sha if typ == "commit" else peeled if peeled_type == "commit" else None
            table[name] = (sha, typ, commit)
            stem = name.removesuffix("/HEAD")
            for i, c in enumerate(stem):
                if c == "/":
                    tails.add(stem[i + 1 :])
        with self._cache_lock:
            if self._refs_gen == gen:
                self._refs = table
                self._ref_tails = frozenset(tails)
                self._ref_commits = frozenset(v[2] for v in table.values() if v[2])
        return table

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
        writes_refs = bool(args) and args[0] in _REF_WRITERS
        if writes_refs:
            self.invalidate_refs()
        self.subprocesses += 1
        try:
            proc = subprocess.run(
                ["git", *args],
                cwd=self.path,
                input=input,
                capture_output=True,
                env=full_env,
                check=False,
            )
        finally:
            if writes_refs:
                self.invalidate_refs()
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
        """All refs under ``prefix`` (a full ref name or a ``/``-bounded prefix) → object ids."""
        if any(c in prefix for c in "*?[\\"):
            text = self.run(
                "for-each-ref", "--format=%(objectname) %(refname)", prefix
            ).stdout.decode()
            out = {}
            for line in text.splitlines():
                sha, _, name = line.partition(" ")
                out[name] = sha
            return out
        table = self._ref_table()
        stem = prefix.rstrip("/")
        if not stem:
            return {name: v[0] for name, v in table.items()}
        under = stem + "/"
        return {name: v[0] for name, v in table.items() if name == stem or name.startswith(under)}

    def resolve(self, rev: str) -> str | None:
        """Resolve a revision to a commit sha, or None."""
        if not rev or rev.startswith("-"):
            return None
        fast = self._resolve_fast(rev)
        if fast is not _UNKNOWN:
            return fast  # type: ignore[return-value]
        proc = self.run(
            "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", ok_codes=(0, 1, 128)
        )
        if proc.returncode != 0:
            return None
        sha = proc.stdout.decode().strip()
        if rev == sha:
            self._memo.put(("type", sha), "commit")
        return sha

    def _resolve_fast(self, rev: str) -> str | object | None:
        """Answer ``rev^{commit}`` from memory when that is exact, else ``_UNKNOWN``.

        Full refnames come from the ref table; full shas from the object-type memo. A refname
        missing from the table is None unless some other ref could match it under git's
        DWIM rules (``refs/tags/<rev>`` ...), in which case git is asked.
        """
        if is_sha(rev):
            if self._memo.get(("type", rev)) == "commit":
                return rev
            self._ref_table()
            with self._cache_lock:
                known = rev in self._ref_commits
            return rev if known else _UNKNOWN
        if _PLAIN_REF.match(rev) is None:
            return _UNKNOWN
        table = self._ref_table()
        hit = table.get(rev)
        if hit is not None:
            return hit[2] if hit[2] is not None else _UNKNOWN
        with self._cache_lock:
            ambiguous = rev in self._ref_tails
        return _UNKNOWN if ambiguous else None

    def resolve_ref_or_sha(self, ref: str) -> str | None:
        """Resolve a branch name, tag, full ref or (abbreviated) sha (``{ref}``)."""
        for candidate in (f"refs/heads/{ref}", f"refs/tags/{ref}", ref):
            sha = self.resolve(candidate)
            if sha:
                return sha
        return None

    def object_type(self, sha: str) -> str | None:
        """The type of an object (commit, tree, blob, tag) or None if missing."""
        if is_sha(sha):
            typ = self._memo.get(("type", sha))
            if typ is not None:
                return typ  # type: ignore[no-any-return]
        proc = self.run("cat-file", "-t", sha, ok_codes=(0, 1, 128))
        if proc.returncode != 0:
            return None
        typ = proc.stdout.decode().strip()
        if is_sha(sha):
            self._memo.put(("type", sha), typ)
        return typ

    def update_ref(self, ref: str, new: str, old: str | None = None) -> None:
        """Move a ref (optionally only if it still points at ``old``)."""
        args = ["update-ref", ref, new]
        if old is not None:
            args.append(old)
        table, gen = self._ref_snapshot()
        self.run(*args)
        self._patch_refs(table, gen, {ref: self._ref_value(ref, new)})

    def update_refs(self, refs: Mapping[str, str]) -> None:
        """Point many refs at commits with one ``git update-ref --stdin``."""
        if not refs:
            return
        table, gen = self._ref_snapshot()
        lines = "".join(f"update {ref} {sha}\n" for ref, sha in refs.items())
        self.run("update-ref", "--stdin", input=lines.encode())
        self._patch_refs(table, gen, {ref: self._ref_value(ref, sha) for ref, sha in refs.items()})

    def delete_ref(self, ref: str) -> None:
        """Delete a ref."""
        table, gen = self._ref_snapshot()
        self.run("update-ref", "-d", ref)
        self._patch_refs(table, gen, {ref: None})

    def _ref_value(self, ref: str, sha: str) -> tuple[str, str, str | None] | bool:
        """The ref-table entry for ``ref`` → ``sha`` (False when the type is not known)."""
        typ = "commit" if ref.startswith("refs/heads/") else self._memo.get(("type", sha))
        if typ is None and sha in self._ref_commits:
            typ = "commit"
        if typ not in ("commit", "tree", "blob"):
            return False
        return (sha, typ, sha if typ == "commit" else None)

    def _ref_snapshot(self) -> tuple[dict[str, tuple[str, str, str | None]] | None, int]:
        with self._cache_lock:
            return self._refs, self._refs_gen

    def _patch_refs(
        self,
        table: dict[str, tuple[str, str, str | None]] | None,
        gen: int,
        changes: Mapping[str, tuple[str, str, str | None] | bool | None],
    ) -> None:
        """Install ``table`` with ``changes`` applied (None deletes a ref) if nothing else
        touched refs meanwhile (``run`` invalidated exactly twice) and every entry is known;
        otherwise the table is simply reloaded on the next lookup."""
        if table is None or any(v is False for v in changes.values()):
            return
        patched = dict(table)
        tails: set[str] = set()
        commits: set[str] = set()
        for ref, value in changes.items():
            if value is None:
                patched.pop(ref, None)
                continue
            assert isinstance(value, tuple)
            patched[ref] = value
            stem = ref.removesuffix("/HEAD")
            tails.update(stem[i + 1 :] for i, c in enumerate(stem) if c == "/")
            if value[2]:
                commits.add(value[2])
        with self._cache_lock:
            if self._refs is None and self._refs_gen == gen + 2:
                self._refs = patched
                # Both sets only grow: an extra tail merely sends a lookup to git, and
                # objects outlive their refs (gc.auto = 0).
                self._ref_tails = self._ref_tails | tails
                self._ref_commits = self._ref_commits | commits

    def _memoised(self, key: tuple[Any, ...], shas: Iterable[str], compute: Any) -> Any:
        """``compute()``, remembered under ``key`` when every name in ``shas`` is a full sha."""
        if not all(is_sha(x) for x in shas):
            return compute()
        hit = self._memo.get(key, _UNKNOWN)
        if hit is not _UNKNOWN:
            return hit
        return self._memo.put(key, compute())

    def is_ancestor(self, a: str, b: str) -> bool:
        """True if commit ``a`` is an ancestor of (or equal to) ``b``."""
        return bool(
            self._memoised(
                ("ancestor", a, b),
                (a, b),
                lambda: (
                    self.run("merge-base", "--is-ancestor", a, b, ok_codes=(0, 1)).returncode == 0
                ),
            )
        )

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of two commits."""

        def compute() -> str | None:
            proc = self.run("merge-base", a, b, ok_codes=(0, 1))
            return proc.stdout.decode().strip() or None

        return self._memoised(("merge-base", a, b), (a, b), compute)  # type: ignore[no-any-return]

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
        if revs and all(_SHA_RANGE.match(r) for r in revs):
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

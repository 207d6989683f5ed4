"""A bare repository's refs and ancestry: the in-memory ref table, resolution, merge bases."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .gittypes import (
    PLAIN_REF,
    PRE_RECEIVE_HOOK,
    REF_WRITERS,
    UNKNOWN,
    GitError,
    Memo,
    git_env,
    is_sha,
)


class GitRefs:
    """A bare repository on disk: running git, its refs and ancestry (cached by full sha)."""

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
        writes_refs = bool(args) and args[0] in REF_WRITERS
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
        if fast is not UNKNOWN:
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
        """Answer ``rev^{commit}`` from memory when that is exact, else ``UNKNOWN``.

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
            return rev if known else UNKNOWN
        if PLAIN_REF.match(rev) is None:
            return UNKNOWN
        table = self._ref_table()
        hit = table.get(rev)
        if hit is not None:
            return hit[2] if hit[2] is not None else UNKNOWN
        with self._cache_lock:
            ambiguous = rev in self._ref_tails
        return UNKNOWN if ambiguous else None

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
        hit = self._memo.get(key, UNKNOWN)
        if hit is not UNKNOWN:
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

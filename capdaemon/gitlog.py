"""Commits and file contents read from git (`commits_range`, `read_file`), as GitHub shows them.

Neither reads a checkout's configuration, grafts or shallow file: git only orders the range's
commits in a view of the checkout's refs and objects alone; every commit and file is then read
from the hash-checked objects."""

from __future__ import annotations

import codecs
from datetime import datetime, timedelta, timezone
from pathlib import Path

from capdaemon.gitdiff import _is_binary, resolve, resolve_many, run_git
from capdaemon.gitobjects import Objects
from capdaemon.gitrange import objects_dirs, read_blob_at, ref_view
from capdaemon.model import Commit


def commits_range(repo: Path, base: str, head: str) -> list[Commit]:
    """The commits of `base..head`, oldest first (as GitHub lists a PR's commits)."""
    repo = Path(repo)
    base_sha, head_sha = resolve_many(repo, [base, head])
    with ref_view(repo) as view:
        proc = run_git(
            repo,
            ["rev-list", "--reverse", f"{base_sha}..{head_sha}", "--"],
            ref=f"{base}..{head}",
            git_dir=view,
        )
    objs = Objects(repo, objects_dirs(repo))
    commits = []
    for sha in proc.stdout.decode("ascii", "replace").split():
        commits.append(_commit(sha, objs.commit_raw(sha)))
    return commits


def _commit(sha: str, raw: bytes) -> Commit:
    """A Commit of a commit object's raw bytes (its `encoding` header honoured)."""
    head, _, message = raw.partition(b"\n\n")
    fields: dict[bytes, bytes] = {}
    parents: list[str] = []
    for line in head.split(b"\n"):
        key, _, value = line.partition(b" ")
        if key == b"parent":
            parents.append(value.decode("ascii", "replace"))
        elif key and not line.startswith(b" ") and key not in fields:
            fields[key] = value
    encoding = fields.get(b"encoding", b"utf-8").decode("ascii", "replace")
    try:
        codecs.lookup(encoding)
    except LookupError:
        encoding = "utf-8"
    an, ae, ad = _ident(fields.get(b"author", b""), encoding)
    cn, ce, cd = _ident(fields.get(b"committer", b""), encoding)
    return Commit(
        sha=sha,
        parents=tuple(parents),
        message=message.decode(encoding, "replace").rstrip("\n"),
        author_name=an,
        author_email=ae,
        authored_at=ad,
        committer_name=cn,
        committer_email=ce,
        committed_at=cd,
    )


def _ident(value: bytes, encoding: str) -> tuple[str, str, datetime | None]:
    """(name, email, time) of an `author`/`committer` header: `Name <email> 1700000000 +0200`."""
    lt, gt = value.find(b"<"), value.rfind(b">")
    if lt == -1 or gt < lt:
        return value.decode(encoding, "replace").strip(), "", None
    name = value[:lt].decode(encoding, "replace").strip()
    email = value[lt + 1 : gt].decode(encoding, "replace")
    stamp = value[gt + 1 :].split()
    when = None
    if len(stamp) == 2 and stamp[0].isdigit() and len(stamp[1]) == 5 and stamp[1][1:].isdigit():
        tz = stamp[1].decode("ascii")
        minutes = int(tz[1:3]) * 60 + int(tz[3:5])
        offset = timedelta(minutes=-minutes if tz[0] == "-" else minutes)
        try:
            when = datetime.fromtimestamp(int(stamp[0]), timezone(offset))
        except (OverflowError, OSError, ValueError):
            when = None
    return name, email, when


def read_file(repo: Path, rev: str, path: str) -> str | None:
    """The text of `path` at commit `rev` (e.g. the base's `.capdaemon.yml`); None if absent."""
    repo = Path(repo)
    data = read_blob_at(repo, resolve(repo, rev), path)
    if data is None or _is_binary(data):
        return None
    return data.decode("utf-8", "replace")

"""Commits and file contents read from git (`commits_range`, `read_file`), as GitHub shows them.

Neither reads a checkout's configuration, grafts or shallow file: the commits are listed in a
view of its refs and objects alone, a file is read from the hash-checked objects."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from capdaemon.gitdiff import _is_binary, resolve, resolve_many, run_git
from capdaemon.gitrange import read_blob_at, ref_view
from capdaemon.model import Commit
from capdaemon.timefmt import parse_utc

_LOG_FIELDS = ("%H", "%P", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%B")


def _parse_dt(text: str) -> datetime | None:
    if not text:
        return None
    try:
        return parse_utc(text, "commit date")
    except ValueError:
        return None


def commits_range(repo: Path, base: str, head: str) -> list[Commit]:
    """The commits of `base..head`, oldest first (as GitHub lists a PR's commits)."""
    repo = Path(repo)
    base_sha, head_sha = resolve_many(repo, [base, head])
    fmt = "%x00".join(_LOG_FIELDS)
    with ref_view(repo) as view:
        proc = run_git(
            repo,
            [
                "log",
                "-z",
                "--reverse",
                "--no-color",
                "--no-show-signature",
                "--no-mailmap",
                "--encoding=UTF-8",
                f"--format={fmt}",
                f"{base_sha}..{head_sha}",
                "--",
            ],
            ref=f"{base}..{head}",
            git_dir=view,
        )
    parts = proc.stdout.split(b"\0")
    n = len(_LOG_FIELDS)
    commits = []
    for i in range(0, len(parts) - n + 1, n):
        fields = [p.decode("utf-8", "replace") for p in parts[i : i + n]]
        sha, parents, an, ae, ad, cn, ce, cd, body = fields
        sha = sha.lstrip("\n")
        if not sha:
            continue
        commits.append(
            Commit(
                sha=sha,
                parents=tuple(parents.split()),
                message=body.rstrip("\n"),
                author_name=an,
                author_email=ae,
                authored_at=_parse_dt(ad),
                committer_name=cn,
                committer_email=ce,
                committed_at=_parse_dt(cd),
            )
        )
    return commits


def read_file(repo: Path, rev: str, path: str) -> str | None:
    """The text of `path` at commit `rev` (e.g. the base's `.capdaemon.yml`); None if absent."""
    repo = Path(repo)
    data = read_blob_at(repo, resolve(repo, rev), path)
    if data is None or _is_binary(data):
        return None
    return data.decode("utf-8", "replace")

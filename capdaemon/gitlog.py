"""Commits and file contents read from git (`commits_range`, `read_file`), as GitHub shows them."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from capdaemon.gitdiff import _is_binary, resolve, resolve_many, run_git
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
    proc = run_git(
        repo,
        [
            "log",
            "-z",
            "--reverse",
            "--no-color",
            "--no-show-signature",
            "--encoding=UTF-8",
            f"--format={fmt}",
            f"{base_sha}..{head_sha}",
            "--",
        ],
        ref=f"{base}..{head}",
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
    sha = resolve(repo, rev)
    proc = run_git(repo, ["cat-file", "--batch"], input=f"{sha}:{path}\n".encode(), ref=rev)
    out = proc.stdout
    nl = out.find(b"\n")
    header = out[:nl].decode("utf-8", "replace").split()
    if nl == -1 or len(header) < 3 or header[-1] == "missing" or header[1] != "blob":
        return None
    data = out[nl + 1 : nl + 1 + int(header[2])]
    return None if _is_binary(data) else data.decode("utf-8", "replace")

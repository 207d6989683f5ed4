"""bot-state/issue_watch.json: the `since` of the decision repo's changes list, kept across runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capdaemon.filenames import ISSUE_WATCH_FILE
from capdaemon.state import StateError, atomic_write_json, read_json
from capdaemon.timefmt import parse_utc

WATCH_VERSION = 1


@dataclass(frozen=True)
class IssueWatch:
    """The decision repo `repo`'s issues not updated since `since` were all seen by a tick
    (their text compared with what capdaemon wrote), so the changes list starts there."""

    repo: str
    since: str  # ISO 8601 UTC ("…Z"), as GitHub's `since` parameter takes it


def watch_path(state_dir: Path) -> Path:
    """Where the watch is kept."""
    return Path(state_dir) / ISSUE_WATCH_FILE


def read_watch(state_dir: Path) -> IssueWatch | None:
    """The watch kept, None when there is none; StateError naming the file and field when it
    is corrupt (the caller then lists every open issue and never overwrites the file)."""
    path = watch_path(state_dir)
    raw = read_json(path, None)
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("version") != WATCH_VERSION:
        raise StateError(f"{path}: not a version {WATCH_VERSION} issue watch; move it away")
    repo, since = raw.get("repo"), raw.get("since")
    if not isinstance(repo, str) or not repo:
        raise StateError(f"{path}: field 'repo' is not a repository name; move it away")
    if not isinstance(since, str) or not since.endswith("Z"):
        raise StateError(f"{path}: field 'since' is not a UTC time; move it away")
    try:
        parse_utc(since, "since")
    except ValueError as exc:
        raise StateError(f"{path}: field 'since': {exc}; move it away") from exc
    return IssueWatch(repo, since)


def write_watch(state_dir: Path, watch: IssueWatch) -> None:
    """Keep the watch (owner-only, written atomically)."""
    data = {"version": WATCH_VERSION, "repo": watch.repo, "since": watch.since}
    atomic_write_json(watch_path(state_dir), data, mode=0o600)

"""What a waiting PR's snapshot read, kept across processes: compares, tree entries, blobs.

Under cron every tick is a new process. A PR classified but left waiting for the write budget
would otherwise re-read its compare, its trees and its picked blobs in every process until it
is published: each a counted request. All three are fixed by the shas they are keyed by, so
they are kept in the forge's cross-process cache file (``tokencache``: owner-only, written
atomically) next to the repo policy per commit:

- a compare by (repo, base sha, head sha): its files, commits, total and merge base;
- the tree entries asked at a commit: {path: (mode, type, sha) or absent}, exactly the paths
  asked (a path not asked is not known, so it is read again);
- a blob's text by its sha (re-hashed on load: a text that is not that blob is rejected);
- the whole trees of the merge bases PRs share (read by each new PR that modifies or removes
  a file), up to ``MAX_TREE_ENTRIES`` entries in all.

Each entry is validated on load (types, full shas, a compare's digest and its commits ending
at its head); any malformed entry makes the whole file a ``ShaCacheError``, and the cache file
is set aside with a log event as for any other corrupt field. Only the most recently used
entries are kept (``MAX_*``), so the file stays small at a thousand open PRs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capdaemon.forge.convert import Entry, git_blob_sha
from capdaemon.forge.session import Compared, ShaCaches

MAX_COMPARES = 256
MAX_PATH_RECORDS = 1024
MAX_BLOBS = 512
MAX_TREE_ENTRIES = 20_000  # whole trees kept (a base commit's, read by every new PR), in all
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


class ShaCacheError(ValueError):
    """A kept compare, tree record or blob is malformed (the message names the entry)."""


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


def _recent(items: list[Any], most: int) -> list[Any]:
    return items[-most:]


def _trees(caches: ShaCaches) -> list[dict[str, Any]]:
    """The merge bases' whole trees, most recent first until ``MAX_TREE_ENTRIES``."""
    trees: list[dict[str, Any]] = []
    room = MAX_TREE_ENTRIES
    for (repo, sha), index in reversed(list(caches.base_tree.items())):
        if len(index) <= room:
            room -= len(index)
            entries = {p: list(e) for p, e in index.items()}
            trees.insert(0, {"repo": repo, "sha": sha, "entries": entries})
    return trees


def dump(caches: ShaCaches) -> dict[str, list[dict[str, Any]]]:
    """The entries to keep (most recently used last), as the cache file stores them. An entry
    that would not pass its own check on load is left out (never a file set aside later)."""
    compares = []
    for (repo, base, head), cmp in _recent(list(caches.compare.items()), MAX_COMPARES):
        body = [cmp["files"], cmp["commits"], cmp["total_commits"], cmp["merge_base"]]
        compares.append(
            {"repo": repo, "base": base, "head": head, "body": body, "sha256": _digest(body)}
        )
    paths = [
        {"repo": repo, "sha": sha, "entries": {p: list(e) if e else None for p, e in known.items()}}
        for (repo, sha), known in _recent(list(caches.paths.items()), MAX_PATH_RECORDS)
    ]
    blobs = [
        {"repo": repo, "sha": sha, "text": text}
        for (repo, sha), text in _recent(list(caches.blob.items()), MAX_BLOBS)
        if text is not None
    ]
    return {
        "trees": [e for e in _trees(caches) if _fits(_tree, e)],
        "compares": [e for e in compares if _fits(_compare, e)],
        "paths": [e for e in paths if _fits(_paths, e)],
        "blobs": [e for e in blobs if _fits(_blob, e)],
    }


def _fits(check: Any, entry: dict[str, Any]) -> bool:
    try:
        check(entry, "")
    except ShaCacheError:
        return False
    return True


def _sha(value: Any) -> bool:
    return isinstance(value, str) and bool(_SHA.fullmatch(value))


def _repo(value: Any) -> bool:
    return isinstance(value, str) and value.count("/") == 1


def _objects(value: Any, ok: Callable[[dict[str, Any]], bool]) -> bool:
    """A list of JSON objects, each of which `ok` accepts."""
    return isinstance(value, list) and all(isinstance(x, dict) and ok(x) for x in value)


def _compare_body(body: list[Any], head: str, where: str) -> Compared:
    files, commits, total, merge_base = body
    if not _objects(files, lambda f: isinstance(f.get("filename"), str)):
        raise ShaCacheError(f"{where}: files are malformed")
    if not _objects(commits, lambda c: _sha(c.get("sha"))):
        raise ShaCacheError(f"{where}: commits are malformed")
    if isinstance(total, bool) or not isinstance(total, int):
        raise ShaCacheError(f"{where}: total_commits is not a number")
    if merge_base is not None and not _sha(merge_base):
        raise ShaCacheError(f"{where}: merge_base is not a full sha")
    if commits and len(commits) == total and commits[-1]["sha"] != head:
        raise ShaCacheError(f"{where}: its commits do not end at its head")
    return {"files": files, "commits": commits, "total_commits": total, "merge_base": merge_base}


def _compare(e: Any, where: str) -> tuple[tuple[str, str, str], Compared]:
    if not isinstance(e, dict) or not _repo(e.get("repo")):
        raise ShaCacheError(f"{where}: not an object with a 'repo'")
    if not _sha(e.get("base")) or not _sha(e.get("head")):
        raise ShaCacheError(f"{where}: 'base' and 'head' must be full commit shas")
    body = e.get("body")
    if not isinstance(body, list) or len(body) != 4 or e.get("sha256") != _digest(body):
        raise ShaCacheError(f"{where}.body does not match its sha256")
    return (e["repo"], e["base"], e["head"]), _compare_body(body, e["head"], where)


def _entry(value: Any, where: str) -> Entry | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 3
        or not all(isinstance(v, str) for v in value)
        or not _sha(value[2])
    ):
        raise ShaCacheError(f"{where}: not [mode, type, sha] or null")
    return (value[0], value[1], value[2])


def _paths(e: Any, where: str) -> tuple[tuple[str, str], dict[str, Entry | None]]:
    if not isinstance(e, dict) or not _repo(e.get("repo")) or not _sha(e.get("sha")):
        raise ShaCacheError(f"{where}: 'repo' and a full commit 'sha' are required")
    entries = e.get("entries")
    if not isinstance(entries, dict) or not all(isinstance(p, str) for p in entries):
        raise ShaCacheError(f"{where}.entries is not an object")
    return (e["repo"], e["sha"]), {p: _entry(v, f"{where}.entries") for p, v in entries.items()}


def _tree(e: Any, where: str) -> tuple[tuple[str, str], dict[str, Entry]]:
    key, known = _paths(e, where)
    if any(v is None for v in known.values()):
        raise ShaCacheError(f"{where}: a whole tree has no absent paths")
    return key, {p: v for p, v in known.items() if v is not None}


def _blob(e: Any, where: str) -> tuple[tuple[str, str], str]:
    if not isinstance(e, dict) or not _repo(e.get("repo")) or not _sha(e.get("sha")):
        raise ShaCacheError(f"{where}: 'repo' and a full blob 'sha' are required")
    text = e.get("text")
    if not isinstance(text, str) or git_blob_sha(text.encode("utf-8")) != e["sha"]:
        raise ShaCacheError(f"{where}: its text is not blob {e.get('sha')}")
    return (e["repo"], e["sha"]), text


def restore(data: dict[str, Any], path: Path, caches: ShaCaches) -> int:
    """Put the kept entries of a loaded cache file into `caches`; how many. ShaCacheError names
    the first malformed entry (nothing is put then)."""
    found: list[tuple[Any, Any, Any]] = []
    for field, parse, into in (
        ("trees", _tree, caches.base_tree),
        ("compares", _compare, caches.compare),
        ("paths", _paths, caches.paths),
        ("blobs", _blob, caches.blob),
    ):
        items = data.get(field, [])
        if not isinstance(items, list):
            raise ShaCacheError(f"{path}: field '{field}' is not a list")
        found += [(into, *parse(e, f"{path}: {field}[{i}]")) for i, e in enumerate(items)]
    for into, key, value in found:
        into.put(key, value)
    return len(found)


def adopt(kept: ShaCaches, into: ShaCaches) -> None:
    """Put what `restore` read (from a file whose binding fits) into the forge's caches."""
    lrus: tuple[tuple[Any, Any], ...] = (
        (kept.base_tree, into.base_tree),
        (kept.compare, into.compare),
        (kept.paths, into.paths),
        (kept.blob, into.blob),
    )
    for src, dst in lrus:
        for key, value in src.items():
            dst.put(key, value)

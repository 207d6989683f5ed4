"""A waiting PR's compare, trees and blobs kept across processes: reused, validated, not forged."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from capdaemon.forge import tokencache
from capdaemon.forge.client import Forge
from capdaemon.forge.shapersist import MAX_TREE_ENTRIES
from ghsandbox import Sandbox

SHA_READS = (
    "GET /repos/{owner}/{repo}/compare/{basehead}",
    "GET /repos/{owner}/{repo}/git/trees/{tree_sha}",
    "GET /repos/{owner}/{repo}/git/blobs/{file_sha}",
)
WORKFLOW = ".github/workflows/w.yml"
CONFIG = "config/app.yml"  # picked: its base and head texts are read


def _seen(sandbox: Sandbox) -> dict[str, int]:
    return {
        k: v["requests"]
        for k, v in sandbox.counters()["endpoints"].items()
        if v["requests"] and k in SHA_READS
    }


def _files(snap: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (f.path, f.status, f.new_mode, f.base_content, f.head_content) for f in snap.files
    )


def _pr(sandbox: Sandbox, open_pr: Callable[..., int]) -> int:
    base = {"examples/old.py": "print(1)\n", CONFIG: "level: 1\nname: app\n"}
    sandbox.commit_files(sandbox.repo, "main", base, "base")
    files = {  # the config is modified: its base and head texts are read as blobs
        "docs/a.md": "a\n",
        WORKFLOW: "name: w\non: [push]\njobs: {}\n",
        CONFIG: "level: 2\nname: app\n",
        "examples/old.py": None,
    }
    return open_pr(files)


def _first_process(
    make_forge: Callable[..., Forge], sandbox: Sandbox, number: int, state: Path
) -> Any:
    first = make_forge(app=True)
    snap = first.snapshot(sandbox.repo, number)
    tokencache.save(first, state, sandbox.base_url)
    return snap


def test_a_later_process_reads_no_compare_tree_or_blob_again(
    make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int], tmp_path: Path
) -> None:
    """A PR classified by one process and left waiting costs the next process no compare, tree
    or blob read, and its snapshot has the same files, modes and contents."""
    number = _pr(sandbox, open_pr)
    snap = _first_process(make_forge, sandbox, number, tmp_path)
    (cfg,) = [f for f in snap.files if f.path == CONFIG]
    assert cfg.base_content == "level: 1\nname: app\n"
    assert cfg.head_content == "level: 2\nname: app\n"
    second = make_forge(app=True)
    assert tokencache.load(second, tmp_path, sandbox.base_url).set_aside is None
    sandbox.reset_counters()
    again = second.snapshot(sandbox.repo, number)
    assert _seen(sandbox) == {}
    assert _files(again) == _files(snap)


def test_a_file_edited_to_hide_a_workflow_is_set_aside_not_believed(
    make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int], tmp_path: Path
) -> None:
    """Attack: the kept compare is edited to drop the workflow file (a D change passing as A).
    Its digest no longer matches: the file is set aside with a log event and the next snapshot
    reads GitHub again and sees the workflow."""
    number = _pr(sandbox, open_pr)
    _first_process(make_forge, sandbox, number, tmp_path)
    path = tokencache.cache_path(tmp_path)
    doc = json.loads(path.read_text())
    (cmp,) = doc["compares"]
    cmp["body"][0] = [f for f in cmp["body"][0] if f["filename"] != WORKFLOW]
    path.write_text(json.dumps(doc))
    second = make_forge(app=True)
    with capture_logs() as logs:
        loaded = tokencache.load(second, tmp_path, sandbox.base_url)
    assert loaded.set_aside is not None
    aside = [e for e in logs if e["event"] == "forge.cache_set_aside"]
    assert aside and "sha256" in str(aside[0]["reason"])
    snap = second.snapshot(sandbox.repo, number)
    assert WORKFLOW in {f.path for f in snap.files}
    assert "GET /repos/{owner}/{repo}/compare/{basehead}" in _seen(sandbox)


def test_a_blob_whose_text_is_not_that_blob_is_rejected(
    make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int], tmp_path: Path
) -> None:
    """Attack: a kept blob's text is swapped (a harmless config for the real one). Blobs are
    re-hashed on load: a text that is not the blob named by its sha is never served."""
    number = _pr(sandbox, open_pr)
    _first_process(make_forge, sandbox, number, tmp_path)
    path = tokencache.cache_path(tmp_path)
    doc = json.loads(path.read_text())
    assert doc["blobs"], "the config's texts were picked and kept"
    doc["blobs"][0]["text"] = "level: 0\nname: app\n"
    path.write_text(json.dumps(doc))
    with capture_logs() as logs:
        loaded = tokencache.load(make_forge(app=True), tmp_path, sandbox.base_url)
    assert loaded.set_aside is not None
    aside = [e for e in logs if e["event"] == "forge.cache_set_aside"]
    assert aside and "is not blob" in str(aside[0]["reason"])


def test_compare_commits_must_end_at_its_head(
    make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int], tmp_path: Path
) -> None:
    """A compare filed under another head (digest recomputed, so only the meaning is wrong) is
    rejected: its commits end at a different sha than the one it is kept for."""
    number = _pr(sandbox, open_pr)
    _first_process(make_forge, sandbox, number, tmp_path)
    path = tokencache.cache_path(tmp_path)
    doc = json.loads(path.read_text())
    (cmp,) = doc["compares"]
    cmp["head"] = "f" * 40
    path.write_text(json.dumps(doc))
    loaded = tokencache.load(make_forge(app=True), tmp_path, sandbox.base_url)
    assert loaded.set_aside is not None


def _sha256(value: Any) -> str:
    """A kept body's digest as the file records it (sorted-key JSON), recomputed by hand."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    ("part", "broken", "reason"),
    [
        (0, [{"filename": 7}], "files are malformed"),
        (0, "docs/a.md", "files are malformed"),
        (1, [{"sha": "abc"}], "commits are malformed"),
        (1, ["f" * 40], "commits are malformed"),
    ],
)
def test_a_compare_body_of_the_wrong_shape_is_set_aside_even_with_its_digest(
    make_forge: Callable[..., Forge],
    sandbox: Sandbox,
    open_pr: Callable[..., int],
    tmp_path: Path,
    part: int,
    broken: Any,
    reason: str,
) -> None:
    """Attack: a kept compare's files or commits replaced by something of another shape, its
    digest recomputed. The file is set aside naming what is wrong; nothing of it is served."""
    number = _pr(sandbox, open_pr)
    _first_process(make_forge, sandbox, number, tmp_path)
    path = tokencache.cache_path(tmp_path)
    doc = json.loads(path.read_text())
    (cmp,) = doc["compares"]
    cmp["body"][part] = broken
    cmp["sha256"] = _sha256(cmp["body"])
    path.write_text(json.dumps(doc))
    with capture_logs() as logs:
        loaded = tokencache.load(make_forge(app=True), tmp_path, sandbox.base_url)
    assert loaded.set_aside is not None
    aside = [e for e in logs if e["event"] == "forge.cache_set_aside"]
    assert aside and reason in str(aside[0]["reason"])


def test_kept_trees_stay_small(
    make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int], tmp_path: Path
) -> None:
    """Only merge bases' whole trees are kept, and no more entries than the cap; a PR head's
    tree is kept as the paths asked, not whole."""
    number = _pr(sandbox, open_pr)
    _first_process(make_forge, sandbox, number, tmp_path)
    doc = json.loads(tokencache.cache_path(tmp_path).read_text())
    kept = sum(len(t["entries"]) for t in doc["trees"])
    assert 0 < kept <= MAX_TREE_ENTRIES
    head = make_forge(app=True).pull_status(sandbox.repo, number).head_sha
    assert head not in {t["sha"] for t in doc["trees"]}
    (record,) = [r for r in doc["paths"] if r["sha"] == head]
    assert set(record["entries"]) == {"docs/a.md", WORKFLOW, CONFIG}


def test_app_slug_and_repo_visibility_are_remembered_for_an_hour(
    make_forge: Callable[..., Forge], sandbox: Sandbox, tmp_path: Path
) -> None:
    """A later process asks neither GET /app nor GET /repos/{o}/{r} while the first answers are
    under an hour old; once older, both are asked again (an App can be renamed, a repo can
    leave the installation)."""
    first = make_forge(app=True)
    login = first.login
    assert first.repo_permissions(sandbox.repo)["push"] is True
    tokencache.save(first, tmp_path, sandbox.base_url)
    second = make_forge(app=True)
    tokencache.load(second, tmp_path, sandbox.base_url)
    sandbox.reset_counters()
    assert second.login == login
    assert second.repo_permissions(sandbox.repo, max_age=timedelta(hours=1))["push"] is True
    ends = {k for k, v in sandbox.counters()["endpoints"].items() if v["requests"]}
    assert not ends & {"GET /app", "GET /repos/{owner}/{repo}"}, ends
    path = tokencache.cache_path(tmp_path)
    doc = json.loads(path.read_text())
    old = (datetime.now(UTC) - timedelta(hours=2)).isoformat()
    doc["app"]["read_at"] = old
    for r in doc["repos"]:
        r["read_at"] = old
    path.write_text(json.dumps(doc))
    third = make_forge(app=True)
    tokencache.load(third, tmp_path, sandbox.base_url)
    sandbox.reset_counters()
    assert third.login == login
    third.repo_permissions(sandbox.repo, max_age=timedelta(hours=1))
    ends = {k for k, v in sandbox.counters()["endpoints"].items() if v["requests"]}
    assert {"GET /app", "GET /repos/{owner}/{repo}"} <= ends

"""Bodies over GitHub's 65,536-character limit: cut with a pointer, the full text kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from capdaemon.filenames import OVERFLOW_DIR
from capdaemon.forge.client import Forge
from capdaemon.forge.overflow import BODY_LIMIT, overflow_name
from ghsandbox import Sandbox


def test_an_over_long_issue_body_is_cut_and_saved_in_full(
    sandbox: Sandbox, make_forge: Callable[..., Forge], tmp_path: Path
) -> None:
    """A 100,000-character body: GitHub gets at most 65,536 characters ending with the marker
    and a pointer; bot-state/overflow has the whole text; a second ensure writes nothing."""
    forge = make_forge(state_dir=tmp_path / "bot-state")
    body = "".join(f"line {i}: a finding\n" for i in range(6000))
    assert len(body) > 100_000
    marker = {"kind": "digest", "key": "2026-11-30"}
    made = forge.ensure_issue(sandbox.repo, marker, "Digest", body)
    on_github = sandbox.backend.issue(sandbox.repo, made.number)["body"]
    assert len(on_github) <= BODY_LIMIT
    assert on_github.startswith("line 0: a finding\n")
    name = overflow_name(body)
    assert f"`bot-state/{OVERFLOW_DIR}/{name}`" in on_github
    assert on_github.rstrip().endswith("-->")  # the marker survives the cut
    assert (forge.state_dir / OVERFLOW_DIR / name).read_text(encoding="utf-8") == body
    sandbox.reset_counters()
    again = forge.ensure_issue(sandbox.repo, marker, "Digest", body)
    assert again.number == made.number
    writes = {k: v for k, v in sandbox.counters()["endpoints"].items() if not k.startswith("GET ")}
    assert writes == {}


def test_an_over_long_comment_is_cut_too(
    sandbox: Sandbox, make_forge: Callable[..., Forge], tmp_path: Path
) -> None:
    """comment_once with 70,000 characters posts (it was a 422) and keeps the full text."""
    forge = make_forge(state_dir=tmp_path)
    issue = sandbox.backend.create_issue(sandbox.repo, "Ballot", None, sandbox.owner)
    number = int(issue["number"])
    text = "x" * 70_000
    assert forge.comment_once(sandbox.repo, number, {"kind": "note", "n": 1}, text)
    comments = [c.body for c in forge.comments(sandbox.repo, number)]
    assert len(comments) == 1 and len(comments[0]) <= BODY_LIMIT
    assert (tmp_path / OVERFLOW_DIR / overflow_name(text)).read_text() == text
    assert not forge.comment_once(sandbox.repo, number, {"kind": "note", "n": 1}, text)

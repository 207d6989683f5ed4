"""A repo's `.capdaemon.yml` as the tick read it: recorded in bot-state, shown on the Repos page."""

from __future__ import annotations

import json

import pytest

from capdaemon.dashboard.readmodel import build
from capdaemon.dashboard.site import render
from capdaemon.filenames import REPO_POLICIES_FILE

from .conftest import Harness

pytestmark = pytest.mark.slow

POLICY = (
    "owners: [bob]\n"
    "extra_checks:\n  - {context: lint, app_id: 4242}\n"
    "blocking_labels: [do-not-merge]\n"
    "critical_globs: ['billing/**']\n"
)


def test_repo_policy_additions_reach_the_state_file_and_the_repos_page(daemon: Harness) -> None:
    """The base branch's .capdaemon.yml adds an owner, an extra check, a label and a glob: the
    tick records exactly those (with the policy hash) in repo_policies.json, writes it again
    only when the policy changes, and the dashboard's Repos page lists them."""
    sb = daemon.sb
    sb.commit_files(sb.repo, "main", {".capdaemon.yml": POLICY}, "policy", "alice")
    daemon.open_pr({"docs/guide/intro.md": "# Intro\n"})
    daemon.tick()
    path = daemon.state_dir / REPO_POLICIES_FILE
    raw = json.loads(path.read_text())
    entry = raw["repos"][sb.repo]
    assert entry["owners"] == ["bob"]
    assert entry["extra_checks"] == [{"context": "lint", "app_id": 4242}]
    assert entry["blocking_labels"] == ["do-not-merge"]
    assert entry["critical_globs"] == ["billing/**"]
    assert entry["error"] is None and entry["base"] == "main" and entry["present"] is True
    first_hash = entry["policy_hash"]
    assert first_hash

    stamp = path.stat().st_mtime_ns
    daemon.advance(minutes=1)
    daemon.tick()
    assert path.stat().st_mtime_ns == stamp  # unchanged policy: not rewritten

    config = daemon.ticker.config if daemon.ticker else None
    assert config is not None
    model = build(daemon.state_dir, config, sb.now())
    assert model.problems == []
    (row,) = model.repos
    assert row.policy is not None and row.policy.owners == ("bob",)
    page = render(model, "repos.html").body
    for shown in ("<code>bob</code>", "lint — App id 4242 (from .capdaemon.yml)"):
        assert shown in page
    assert "<code>do-not-merge</code>" in page and "<code>billing/**</code>" in page
    assert first_hash[:12] in page

    # a policy that does not parse: recorded as the error, and the page says so
    sb.commit_files(sb.repo, "main", {".capdaemon.yml": "owners: 7\n"}, "bad", "alice")
    daemon.advance(minutes=1)
    daemon.tick()
    entry = json.loads(path.read_text())["repos"][sb.repo]
    assert entry["error"] and "owners" in entry["error"] and entry["owners"] == []
    assert entry["policy_hash"] != first_hash
    page = render(build(daemon.state_dir, config, sb.now()), "repos.html").body
    assert "does not parse, PRs are D" in page


def test_a_corrupt_policy_file_is_reported_and_never_overwritten(daemon: Harness) -> None:
    """A torn repo_policies.json: the tick goes on, names the file in its errors, and leaves
    the bytes as they were for the operator."""
    daemon.tick()
    path = daemon.state_dir / REPO_POLICIES_FILE
    torn = path.read_text()[:30]
    path.write_text(torn)
    daemon.sb.commit_files(
        daemon.sb.repo, "main", {".capdaemon.yml": "owners: [bob]\n"}, "policy", "alice"
    )
    daemon.advance(minutes=1)
    report = daemon.tick()
    assert any(REPO_POLICIES_FILE in e and "never overwritten" in e for e in report.errors)
    assert path.read_text() == torn

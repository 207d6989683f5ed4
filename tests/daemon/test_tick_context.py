"""The tick's context: each repo's `.capdaemon.yml` read once per tick, nothing carried over."""

from __future__ import annotations

import pytest

from capdaemon import config as config_mod
from capdaemon.config import RepoPolicy
from capdaemon.daemon.polling import poll

from .conftest import Harness

pytestmark = pytest.mark.slow

DOCS = {"docs/guide/intro.md": "# Intro\n\nHello.\n"}


def _policy(daemon: Harness, text: str) -> None:
    daemon.sb.commit_files(daemon.sb.repo, "main", {".capdaemon.yml": text}, "policy", "alice")


def test_repo_policy_is_parsed_once_per_tick_and_governs_every_pr(
    daemon: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three docs PRs under a base-branch policy that makes docs always D: the tick parses the
    policy once (the classifier parsed it again for every PR before), every PR is D by it and
    none merges."""
    sources: list[str] = []
    real = config_mod.parse_repo_policy

    def counting(text: str, source: str) -> RepoPolicy:
        sources.append(source)
        return real(text, source)

    monkeypatch.setattr(config_mod, "parse_repo_policy", counting)
    monkeypatch.setattr(poll, "parse_repo_policy", counting)
    _policy(daemon, "always_d_globs: ['docs/**']\n")
    numbers = [
        daemon.open_pr({f"docs/guide/p{i}.md": f"# Page {i}\n"}, title=f"p{i}") for i in range(3)
    ]
    report = daemon.tick()
    assert report.errors == []
    assert len(sources) == 1, sources
    for n in numbers:
        (rec,) = daemon.classifications(n)
        assert rec["quadrant"] == "D"
        assert not daemon.pull(n).merged


def test_a_policy_error_lasts_only_the_ticks_that_read_it(daemon: Harness) -> None:
    """An unparseable policy holds the repo (its docs PR is D, nothing merges); once the base
    branch's policy is fixed, the next tick classifies under it and merges: no state of the
    failed ticks lingers."""
    _policy(daemon, "owners: [not a login]\n")
    n = daemon.open_pr(DOCS)
    first = daemon.tick()
    assert any(".capdaemon.yml" in e for e in first.errors), first.errors
    assert not daemon.pull(n).merged
    _policy(daemon, "owners: [alice]\n")
    second = daemon.tick()
    assert second.errors == []
    assert [c["quadrant"] for c in daemon.classifications(n)] == ["D", "A"]
    assert daemon.pull(n).merged

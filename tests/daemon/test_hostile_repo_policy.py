"""A `.capdaemon.yml` the YAML loader cannot build: the tick goes on, that repo's PRs are D."""

from __future__ import annotations

import re

import pytest

from .conftest import Harness

pytestmark = pytest.mark.slow

DOCS = {"docs/guide/intro.md": "# Intro\n\nHello.\n"}
HOSTILE = {
    "bool": "owners:\n  - alice\n  - !!bool maybe\n",  # KeyError inside PyYAML
    "timestamp": "owners: [!!timestamp 2020-02-30]\n",  # ValueError
    "nested": "owners: " + "[" * 500 + "]" * 500 + "\n",  # RecursionError
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_repo_policy_fails_closed_without_crashing_the_tick(
    daemon: Harness, text: str
) -> None:
    """A docs-only PR (quadrant A) under such a policy is classified D with the policy error
    as the reason, is not merged, and the tick reports a repo error instead of crashing."""
    daemon.sb.commit_files(daemon.sb.repo, "main", {".capdaemon.yml": text}, "policy", "alice")
    n = daemon.open_pr(DOCS)
    report = daemon.tick()
    (error,) = report.errors
    assert re.search(r"\.capdaemon\.yml:\d+: key 'owners\[", error), error
    assert not daemon.pull(n).merged
    (rec,) = daemon.classifications(n)
    assert rec["quadrant"] == "D"
    assert "repo policy invalid, failing closed" in str(rec)
    (err,) = daemon.actions("repo_policy_error")
    assert "owners" in err["error"] and "Traceback" not in err["error"]

"""Repo policy (.capdaemon.yml) is read from the base branch only, and only adds (SPEC 2.9)."""

from __future__ import annotations

import pytest

from .conftest import quadrant

pytestmark = pytest.mark.slow

POLICY = "always_d_globs:\n  - examples/deploy/**\ncritical_globs:\n  - examples/payments/**\n"


def test_base_policy_additions_are_enforced_by_the_daemon(daemon) -> None:
    """The base branch's `always_d_globs`/`critical_globs` apply: an examples/deploy change is D."""
    daemon.sb.commit_files(daemon.sb.repo, "main", {".capdaemon.yml": POLICY}, "policy", "alice")
    deploy = daemon.open_pr({"examples/deploy/run.sh": "echo hi\n"}, title="deploy")
    pay = daemon.open_pr({"examples/payments/pay.py": "print(1)\n"}, title="payments")
    daemon.tick()
    assert quadrant(daemon, deploy) == "D" and not daemon.pull(deploy).merged
    assert quadrant(daemon, pay) == "B"


def test_pr_loosening_the_policy_is_d_and_head_policy_is_never_used(daemon) -> None:
    """A PR loosening `.capdaemon.yml` is D; its head version never applies to itself."""
    daemon.sb.commit_files(daemon.sb.repo, "main", {".capdaemon.yml": POLICY}, "policy", "alice")
    n = daemon.open_pr(
        {".capdaemon.yml": "owners: [agent-1]\n", "examples/deploy/run.sh": "echo x\n"},
        title="loosen",
    )
    daemon.tick()
    assert quadrant(daemon, n) == "D" and not daemon.pull(n).merged
    daemon.advance(minutes=1)
    # agent-1 named itself an owner in the PR head: its approval still does not count
    daemon.ballot(n, "agent-2").create_comment("/approve A")
    daemon.tick()
    assert not daemon.pull(n).merged


def test_malformed_base_policy_fails_closed(daemon) -> None:
    """A base `.capdaemon.yml` that does not parse (or has unknown keys) → D, never ignored."""
    daemon.sb.commit_files(
        daemon.sb.repo, "main", {".capdaemon.yml": "noncritical_dirs: [src/]\n"}, "bad", "alice"
    )
    n = daemon.open_pr({"examples/new.py": "print(2)\n"}, title="harmless")
    daemon.tick()
    assert quadrant(daemon, n) == "D" and not daemon.pull(n).merged

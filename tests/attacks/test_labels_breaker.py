"""Forged and stale labels, the tripped breaker, and who may reset it (SPEC 2.5, 6.3)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from capdaemon.cli import main as cli
from capdaemon.decide.breaker import Incident, IncidentKind

from .conftest import quadrant

pytestmark = pytest.mark.slow

AUTO_REVERT = "decision:auto-revert"


def _trip(safe) -> int:
    """Trip the breaker (threshold 1); the incident issue's number."""
    safe.configure(breaker={"threshold": 1, "window_hours": 24})
    ticker = safe.start()
    ticker.safety.breaker.record(
        Incident(safe.sb.now(), IncidentKind.OTHER, "attack test"), safe.sb.now()
    )
    safe.tick()
    (issue,) = [i for i in safe.issues("incident") if i.state == "open"]
    return int(issue.number)


def _label(safe, number: int, login: str, label: str = AUTO_REVERT) -> None:
    safe.gh(login).get_repo(safe.sb.repo).get_issue(number).add_to_labels(label)


def test_unverified_auto_revert_labels_gain_nothing_while_tripped(safe) -> None:
    """Self-applied, other-agent and stale `decision:auto-revert` labels do not pass a tripped
    breaker; only an owner's label applied after the daemon first saw the head does."""
    _trip(safe)
    self_l = safe.open_pr({"examples/a.py": "print('a')\n"}, title="self")
    other = safe.open_pr({"examples/b.py": "print('b')\n"}, title="other agent")
    stale = safe.open_pr({"examples/c.py": "print('c')\n"}, title="stale")
    plain = safe.open_pr({"examples/d.py": "print('d')\n"}, title="plain")
    good = safe.open_pr({"examples/e.py": "print('e')\n"}, title="owner-verified")
    safe.tick()  # the daemon sees each head before the labels (R2: older labels never count)
    safe.advance(minutes=1)
    _label(safe, self_l, "agent-1")
    _label(safe, other, "agent-2")
    _label(safe, stale, "alice")
    _label(safe, good, "alice")
    safe.advance(minutes=1)
    safe.push(stale, {"examples/c.py": "print('c2')\n"})  # after the owner's label: stale
    safe.tick()
    safe.tick()
    for n in (self_l, other, stale, plain):
        assert not safe.pull(n).merged, n
        assert quadrant(safe, n) == "A"  # the label did not even count as a vote
    assert quadrant(safe, good) == "C" and safe.pull(good).merged
    assert safe.breaker().tripped


def test_agent_cannot_remove_the_auto_revert_unlabel_trick(safe) -> None:
    """Label removed and re-added by the author after an owner applied it → the latest labeled
    event is the author's: ignored, the PR stays blocked by the tripped breaker."""
    _trip(safe)
    n = safe.open_pr({"examples/f.py": "print('f')\n"})
    safe.advance(minutes=1)
    _label(safe, n, "alice")
    safe.advance(minutes=1)
    issue = safe.gh("agent-1").get_repo(safe.sb.repo).get_issue(n)
    issue.remove_from_labels(AUTO_REVERT)
    issue.add_to_labels(AUTO_REVERT)
    safe.tick()
    assert not safe.pull(n).merged and quadrant(safe, n) == "A"


def test_backdated_commit_after_owner_label_is_not_verified(safe) -> None:
    """An agent pushes a commit back-dated before the owner's auto-revert label: the label must
    be stale (the breaker still blocks the PR). Fixed clock-free (R2): a label already present
    when the daemon first sees a head never verifies it."""
    _trip(safe)
    n = safe.open_pr({"examples/g.py": "print('g')\n"})
    safe.advance(minutes=1)
    _label(safe, n, "alice")
    labelled_at = safe.advance(minutes=1)
    safe.sb.set_clock(labelled_at - timedelta(hours=1))  # the agent forges its committer date
    safe.push(n, {"examples/g.py": "print('g, with an extra payload')\n"})
    safe.sb.set_clock(labelled_at + timedelta(minutes=1))
    safe.tick()
    assert not safe.pull(n).merged


def test_backdated_push_after_the_daemon_saw_the_old_head_is_not_verified(safe) -> None:
    """The daemon saw head 1, the owner labels it (verified: C), then the agent pushes a
    commit back-dated before the label: the label predates head 2, so it does not count."""
    _trip(safe)
    n = safe.open_pr({"examples/h.py": "print('h')\n"})
    safe.tick()
    labelled_at = safe.advance(minutes=1)
    _label(safe, n, "alice")
    safe.sb.set_clock(labelled_at - timedelta(hours=1))
    safe.push(n, {"examples/h.py": "print('h, with an extra payload')\n"})
    safe.sb.set_clock(labelled_at + timedelta(minutes=1))
    safe.tick()
    assert not safe.pull(n).merged and quadrant(safe, n) == "A"
    assert safe.classifications(n)[-1]["auto_revert_floor"]


def test_ballot_issue_label_tampering_changes_nothing(daemon) -> None:
    """An agent strips `decision:pending-owner`, adds `decision:deferred` and approval-looking
    labels to the ballot issue and its PR: the D PR stays blocked, L1.C3 stays failing."""
    n = daemon.open_pr({".github/workflows/ci.yml": "name: x\n"})
    daemon.tick()
    daemon.advance(minutes=1)
    ballot = daemon.ballot(n, "agent-1")
    ballot.remove_from_labels("decision:pending-owner")
    ballot.add_to_labels("decision:deferred", "approved", "decision:approved")
    pr_issue = daemon.gh("agent-1").get_repo(daemon.sb.repo).get_issue(n)
    pr_issue.add_to_labels("decision:auto-approved-critical-reversible", "approved", AUTO_REVERT)
    daemon.tick()
    daemon.tick()
    assert not daemon.pull(n).merged
    assert daemon.check(n).conclusion == "failure"
    assert quadrant(daemon, n) == "D"


def test_tripped_breaker_blocks_a_merges_and_only_owners_reset_it(safe) -> None:
    """While tripped an A PR waits; `/breaker reset` by an agent, by mallory, on the PR itself,
    and the CLI with a non-owner --by are refused; the breaker stays tripped."""
    number = _trip(safe)
    n = safe.open_pr({"README.md": "# widgets (typo)\n"})
    safe.tick()
    assert not safe.pull(n).merged
    bot = safe.sb.bot_repo
    safe.gh("agent-1").get_repo(bot).get_issue(number).create_comment("/breaker reset")
    safe.gh("mallory").get_repo(bot).get_issue(number).create_comment("/breaker reset")
    safe.gh("alice").get_repo(safe.sb.repo).get_issue(n).create_comment("/breaker reset")
    safe.gh("alice").get_repo(bot).get_issue(number).create_comment("> /breaker reset\n")
    base = ["--state", str(safe.state_dir), "--config", str(safe.config_dir)]
    assert cli(["breaker", "reset", "--by", "agent-1", *base]) == 1
    assert cli(["breaker", "reset", "--by", "capdaemon[bot]", *base]) == 1
    safe.tick()
    safe.tick()
    assert safe.breaker().tripped
    assert not safe.pull(n).merged
    refused = {r["actor"] for r in safe.actions("breaker.reset_refused")}
    assert {"agent-1", "mallory"} <= refused

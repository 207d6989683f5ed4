"""The daemon's SafetyNet: one per daemon, its state on disk and nowhere else."""

from __future__ import annotations

import json

import pytest

from capdaemon.decide.breaker import Incident, IncidentKind
from capdaemon.state import StateError
from tests.safety.conftest import SESSION, SafetyHarness

EXAMPLE = {"examples/net.py": "print('net')\n"}


def test_corrupt_safety_json_stops_the_tick_and_is_kept(safe: SafetyHarness) -> None:
    """A safety.json with a malformed key: the tick refuses, names the file and the key, and
    the file is left byte for byte as it was (never overwritten with fresh defaults)."""
    safe.open_pr(EXAMPLE)
    safe.tick()
    safe.stop()
    path = safe.state_dir / "safety.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tiers"] = ["not", "a", "map"]
    path.write_text(json.dumps(data), encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(StateError, match=r"safety\.json: key 'tiers' is malformed"):
        safe.tick()
    assert path.read_bytes() == before


def test_a_restarted_daemon_keeps_the_breaker_tripped(safe: SafetyHarness) -> None:
    """The breaker tripped in one daemon; a new daemon in the same process (its own safety
    net) still refuses a deleted breaker.json: nothing of the first one's state is needed."""
    safe.configure(breaker={"threshold": 1, "window_hours": 24})
    first = safe.start()
    first.safety.breaker.record(Incident(safe.sb.now(), IncidentKind.OTHER, "x"), safe.sb.now())
    assert first.safety.breaker.state().tripped
    safe.stop()
    (safe.state_dir / "breaker.json").unlink()
    second = safe.start()
    assert second.safety is not first.safety
    with pytest.raises(StateError, match="breaker"):
        second.safety.breaker.state()


def _policy(safe: SafetyHarness, text: str) -> None:
    safe.sb.commit_files(safe.sb.repo, "main", {".capdaemon.yml": text}, "policy", "alice")


def _tap(safe: SafetyHarness, number: int, login: str) -> None:
    ref = f"{safe.sb.repo}#{number}"
    (issue,) = [i for i in safe.issues("one-tap") if f"{ref}@" in i.body and i.state == "open"]
    safe.gh(login).get_repo(safe.sb.bot_repo).get_issue(issue.number).create_reaction("+1")


def _tier2_pr(safe: SafetyHarness, task: str) -> int:
    safe.task(task, level=2)
    trailers = f"{SESSION}\nTask-Id: {task}"
    return safe.open_pr(EXAMPLE, title="task work", trailers=trailers)


def test_an_owner_removed_from_the_repo_policy_no_longer_approves_a_one_tap(
    safe: SafetyHarness,
) -> None:
    """The base branch's policy named mallory an owner when the one-tap opened; the policy
    drops her, then she taps 👍: the net judges her under the policy of the tick that reads
    the tap (not the one before), so nothing merges until a remaining owner taps."""
    safe.configure()
    _policy(safe, f"owners: [{safe.sb.outsider}]\n")
    number = _tier2_pr(safe, "t-own")
    assert safe.tick().errors == []
    _policy(safe, f"owners: [{safe.sb.owner}]\n")
    _tap(safe, number, safe.sb.outsider)
    safe.tick()
    safe.tick()
    assert not safe.pull(number).merged and not safe.actions("one_tap", number)
    _tap(safe, number, safe.sb.second_owner)
    safe.tick()
    safe.tick()
    assert safe.pull(number).merged
    assert safe.actions("one_tap", number)[-1]["by"] == safe.sb.second_owner


def test_an_owner_added_by_the_repo_policy_approves_a_one_tap(safe: SafetyHarness) -> None:
    """The policy adds mallory as an owner after the one-tap opened: her 👍 counts in the
    tick that reads the new policy (the net does not keep the daemon's first view)."""
    safe.configure()
    number = _tier2_pr(safe, "t-add")
    assert safe.tick().errors == []
    _policy(safe, f"owners: [{safe.sb.outsider}]\n")
    _tap(safe, number, safe.sb.outsider)
    safe.tick()
    safe.tick()
    assert safe.pull(number).merged
    assert safe.actions("one_tap", number)[-1]["by"] == safe.sb.outsider

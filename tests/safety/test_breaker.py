"""The circuit breaker (SPEC 6.3): trips, blocks merges, lets verified reverts through, resets."""

from __future__ import annotations

from capdaemon.cli import main as cli
from capdaemon.decide.breaker import Incident, IncidentKind

from .conftest import SafetyHarness

EXAMPLE = {"examples/old.py": "print('v2')\n"}


def _trip(safe: SafetyHarness) -> int:
    """Trip the breaker (threshold 1) with one incident; the incident issue's number."""
    safe.configure(breaker={"threshold": 1, "window_hours": 24})
    ticker = safe.start()
    ticker.safety.breaker.record(
        Incident(safe.sb.now(), IncidentKind.OTHER, "test incident"), safe.sb.now()
    )
    assert safe.breaker().tripped
    safe.tick()
    issues = [i for i in safe.issues("incident") if i.state == "open"]
    assert len(issues) == 1
    return issues[0].number


def test_trip_blocks_merges_but_lets_a_verified_auto_revert_land(safe: SafetyHarness) -> None:
    """A tripped breaker stops auto-merges; the bot's verified revert PR still lands, an agent's
    self-labelled PR does not."""
    safe.configure(post_merge={"auto_revert_pr": True}, breaker={"threshold": 1})
    bad = safe.open_pr(EXAMPLE)
    safe.tick()
    safe.ci(safe.merge_sha(bad), "failure")
    safe.step7()  # probe failed → revert PR → incident → tripped
    assert safe.breaker().tripped
    assert "breaker.tripped" in {r["action"] for r in safe.actions()}
    revert_no = next(r for r in safe.actions("revert") if r["status"] == "done")["revert_pr"]
    sneaky = safe.open_pr({"examples/x.py": "print('x')\n"}, title="self-labelled")
    safe.gh("agent-1").get_repo(safe.sb.repo).get_issue(sneaky).add_to_labels(
        "decision:auto-revert"
    )
    plain = safe.open_pr({"examples/y.py": "print('y')\n"}, title="plain")
    safe.tick()
    safe.tick()
    assert safe.pull(revert_no).merged
    assert not safe.pull(sneaky).merged and not safe.pull(plain).merged
    quadrants = {n: safe.classifications(n)[-1]["quadrant"] for n in (sneaky, plain)}
    assert quadrants == {sneaky: "A", plain: "A"}  # the self-applied label gained nothing


def test_comment_reset_refuses_non_owners_and_accepts_an_owner(safe: SafetyHarness) -> None:
    """`/breaker reset` by a non-owner is refused (reply, audit); other commands there are ignored
    and audited; an owner's reset closes the breaker and the incident issue."""
    number = _trip(safe)
    as_user = {
        u: safe.gh(u).get_repo(safe.sb.bot_repo).get_issue(number)
        for u in ("mallory", "bob", "alice")
    }
    as_user["mallory"].create_comment("/breaker reset")
    as_user["bob"].create_comment("/approve A")
    safe.tick()
    assert safe.breaker().tripped
    assert safe.actions("breaker.reset_refused")[0]["actor"] == "mallory"
    ignored = safe.actions("command_ignored")
    assert ignored and ignored[0]["user"] == "bob" and ignored[0]["command"] == "/approve A"
    bodies = [c.body for c in as_user["alice"].get_comments()]
    assert any("Refused" in b and "mallory is not an owner" in b for b in bodies)
    as_user["alice"].create_comment("/breaker reset")
    safe.tick()
    state = safe.breaker()
    assert not state.tripped and state.reset_by == "alice"
    assert safe.actions("breaker.reset")[0]["via"] == "comment"
    assert safe.gh("alice").get_repo(safe.sb.bot_repo).get_issue(number).state == "closed"


def test_cli_reset_owner_only_and_status(safe: SafetyHarness, capsys: object) -> None:
    """`capdaemon breaker reset --by` refuses a non-owner (exit 1), resets for an owner (audited);
    the next tick closes the incident issue; `breaker status` reports it."""
    number = _trip(safe)
    base = ["--state", str(safe.state_dir), "--config", str(safe.config_dir)]
    assert cli(["breaker", "status", *base]) == 0
    assert cli(["breaker", "reset", "--by", "mallory", *base]) == 1
    assert safe.breaker().tripped
    assert cli(["breaker", "reset", "--by", "Alice", *base]) == 0
    assert not safe.breaker().tripped
    rec = safe.actions("breaker.reset")[0]
    assert rec["via"] == "cli" and rec["actor"] == "Alice"
    assert safe.actions("breaker.reset_refused")[0]["actor"] == "mallory"
    safe.tick()
    assert safe.gh("alice").get_repo(safe.sb.bot_repo).get_issue(number).state == "closed"
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "TRIPPED" in out and "breaker reset by Alice" in out


def test_breaker_reset_on_a_ballot_is_ignored_and_audited(safe: SafetyHarness) -> None:
    """An owner's `/breaker reset` on a ballot (the wrong issue) changes nothing; it is audited."""
    _trip(safe)
    number = safe.open_pr({".github/workflows/ci.yml": "name: ci2\n"}, title="CI change")
    safe.tick()
    safe.ballot(number, "alice").create_comment("/breaker reset")
    safe.tick()
    assert safe.breaker().tripped
    ignored = [r for r in safe.actions("vote_ignored", number) if r.get("user") == "alice"]
    assert ignored and "not a ballot command" in ignored[0]["reason"]


def test_breaker_state_is_read_fresh_each_merge(safe: SafetyHarness) -> None:
    """After a reset the next tick merges again (no restart needed)."""
    _trip(safe)
    number = safe.open_pr(EXAMPLE)
    safe.tick()
    assert not safe.pull(number).merged
    assert cli(["breaker", "reset", "--by", "alice", "--state", str(safe.state_dir),
                "--config", str(safe.config_dir)]) == 0  # fmt: skip
    safe.tick()
    assert safe.pull(number).merged


def test_push_onto_the_bots_revert_pr_loses_the_exception(safe: SafetyHarness) -> None:
    """The bot's own label is trusted only at the revert commit it opened the PR with (R2): an
    agent pushing onto the revert branch gets a head whose label predates it → blocked."""
    safe.configure(post_merge={"auto_revert_pr": True}, breaker={"threshold": 1})
    bad = safe.open_pr(EXAMPLE)
    safe.tick()
    safe.ci(safe.merge_sha(bad), "failure")
    safe.step7()
    assert safe.breaker().tripped
    done = next(r for r in safe.actions("revert") if r["status"] == "done")
    revert_no = done["revert_pr"]
    assert safe.safety()["reverts"][-1]["revert_sha"] == safe.pull(revert_no).head.sha
    safe.advance(minutes=1)
    safe.push(revert_no, {"examples/payload.py": "print('p')\n"})
    safe.tick()
    safe.tick()
    assert not safe.pull(revert_no).merged
    assert safe.classifications(revert_no)[-1]["auto_revert_floor"]

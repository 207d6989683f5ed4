"""The post-merge probe counts only sources the merge gate trusts; agents' red statuses do not
trip the breaker (they are reported as untrusted)."""

from __future__ import annotations

from capdaemon.decide.merge import RequiredCheck
from capdaemon.decide.probe import trusted_probe_checks
from capdaemon.forge.markers import parse_marker
from capdaemon.model import CheckRun

from .conftest import SafetyHarness


def _merged(safe: SafetyHarness, path: str) -> int:
    n = safe.open_pr({path: "print('x')\n"}, title=f"change {path}")
    safe.tick()
    assert safe.pull(n).merged
    return n


def test_agent_red_statuses_do_not_trip_the_breaker(safe: SafetyHarness) -> None:
    """Two red statuses an agent posts on two auto-merged commits: no incident is counted and
    the threshold-2 breaker stays closed; both are audited as untrusted, once each."""
    safe.configure(breaker={"threshold": 2})
    first, second = _merged(safe, "examples/a.py"), _merged(safe, "examples/b.py")
    for n in (first, second):
        agent_repo = safe.gh("agent-1").get_repo(safe.sb.repo)
        agent_repo.get_commit(safe.merge_sha(n)).create_status(state="failure", context="ci/x")
    safe.step7()
    safe.step7()
    assert not safe.breaker().tripped and safe.breaker().incidents == ()
    untrusted = safe.actions("probe.untrusted_status")
    assert len(untrusted) == 2 and all(r["counted"] is False for r in untrusted)
    assert "status by agent-1" in untrusted[0]["statuses"][0]
    assert not safe.actions("probe.failed")


def test_an_owner_red_status_still_fails_the_probe_and_names_untrusted_ones(
    safe: SafetyHarness,
) -> None:
    """An owner's red status counts (incident); an agent's red status on the same commit is
    named in the incident issue as not counted."""
    safe.configure()
    n = _merged(safe, "examples/c.py")
    sha = safe.merge_sha(n)
    safe.gh("agent-1").get_repo(safe.sb.repo).get_commit(sha).create_status(
        state="failure", context="ci/fake"
    )
    safe.ci(sha, "failure")  # the owner's CI status
    safe.step7()
    failed = safe.actions("probe.failed", n)
    assert len(failed) == 1 and failed[0]["failed_checks"] == ["ci/build"]
    assert "ci/fake (status by agent-1)" in failed[0]["reason"]
    issue = next(i for i in safe.issues("incident") if (parse_marker(i.body) or {}).get("pr"))
    assert "ci/fake (status by agent-1)" in issue.body.replace("\\", "")
    assert len(safe.breaker().incidents) == 1


def test_trusted_probe_checks_table() -> None:
    """Pure: App runs count (unless pinned to another App), statuses only from trusted logins."""
    runs = [
        CheckRun("build", "completed", "failure", app_id=7),
        CheckRun("L1.C3", "completed", "failure", app_id=99),  # pinned to App 5
        CheckRun("L1.C3", "completed", "success", app_id=5),
        CheckRun("ci", "completed", "failure", creator="Alice"),
        CheckRun("ci", "completed", "failure", creator="agent-1"),
        CheckRun("ci", "completed", "failure", creator=None),
    ]
    counted, other = trusted_probe_checks(runs, [RequiredCheck("L1.C3", 5)], {"alice"})
    assert [(c.name, c.app_id, c.creator) for c in counted] == [
        ("build", 7, None),
        ("L1.C3", 5, None),
        ("ci", None, "Alice"),
    ]
    assert [(c.app_id, c.creator) for c in other] == [(99, None), (None, "agent-1"), (None, None)]

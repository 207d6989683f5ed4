"""Post-merge health probes (SPEC 6.2): incidents, auto-revert on/off, multi-parent, the cap."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from capdaemon.forge.markers import parse_marker

from .conftest import SafetyHarness

EXAMPLE = {"examples/old.py": "print('v2')\n"}


def _merged(safe: SafetyHarness, files: dict[str, str], title: str = "An agent change") -> int:
    number = safe.open_pr(files, title=title)
    safe.tick()
    assert safe.pull(number).merged, safe.actions("merge", number)
    return number


def test_failing_post_merge_check_is_an_incident(safe: SafetyHarness) -> None:
    """A failing check on the merge commit opens an incident issue, is audited and counted."""
    safe.configure()
    number = _merged(safe, EXAMPLE)
    safe.ci(safe.merge_sha(number), "failure")
    safe.tick()
    safe.step7()
    failed = safe.actions("probe.failed", number)
    assert len(failed) == 1 and failed[0]["revert"] == "incident_only"
    assert "auto_revert_pr is off" in failed[0]["reason"]
    issues = [i for i in safe.issues("incident") if (parse_marker(i.body) or {}).get("pr")]
    assert len(issues) == 1 and "decision:incident" in [lb.name for lb in issues[0].labels]
    assert [i.kind.value for i in safe.breaker().incidents] == ["probe_failed"]
    assert not safe.breaker().tripped  # threshold 3
    assert len(safe.open_prs()) == 0  # no revert PR while auto_revert_pr is off


def test_healthy_merge_is_dropped_after_the_window(safe: SafetyHarness) -> None:
    """Green checks on the merge commit: healthy once the window is over, no incident."""
    safe.configure(post_merge={"window_minutes": 10})
    number = _merged(safe, EXAMPLE)
    safe.ci(safe.merge_sha(number), "success")
    safe.step7()
    assert safe.safety()["watches"]  # still inside the window
    safe.advance(minutes=11)
    safe.step7()
    assert safe.actions("probe.healthy", number) and not safe.safety()["watches"]
    assert safe.breaker().incidents == ()


def test_auto_revert_opens_a_bot_labelled_revert_pr_that_lands(safe: SafetyHarness) -> None:
    """auto_revert_pr on: a failed probe opens a revert PR labelled by the bot; it merges as C."""
    safe.configure(post_merge={"auto_revert_pr": True})
    number = _merged(safe, EXAMPLE)
    safe.ci(safe.merge_sha(number), "failure")
    safe.step7()
    done = safe.actions("revert")
    assert [r["status"] for r in done] == ["attempted", "done"]
    revert_no = done[-1]["revert_pr"]
    revert = safe.pull(revert_no)
    assert revert.user.login == "capdaemon[bot]"
    assert "decision:auto-revert" in safe.labels_of(revert_no)
    assert [i.kind.value for i in safe.breaker().incidents] == ["revert"]
    safe.tick()
    assert safe.classifications(revert_no)[-1]["quadrant"] == "C"
    assert safe.pull(revert_no).merged


def test_multi_parent_merge_is_incident_only(safe: SafetyHarness) -> None:
    """A merge commit with two parents (merge method "merge") is never auto-reverted."""
    safe.configure(repo={"merge_method": "merge"}, post_merge={"auto_revert_pr": True})
    number = _merged(safe, EXAMPLE)
    safe.ci(safe.merge_sha(number), "failure")
    safe.step7()
    failed = safe.actions("probe.failed", number)
    assert failed[0]["revert"] == "incident_only" and "2 parents" in failed[0]["reason"]
    assert not safe.actions("revert") and not safe.open_prs()


def test_daily_revert_cap(safe: SafetyHarness) -> None:
    """Past the daily cap, a failed probe goes to humans only (incident, no revert PR)."""
    safe.configure(post_merge={"auto_revert_pr": True, "revert_daily_cap": 1})
    first = _merged(safe, EXAMPLE)
    second = _merged(safe, {"examples/new.py": "print('new')\n"}, title="Another change")
    safe.ci(safe.merge_sha(first), "failure")
    safe.ci(safe.merge_sha(second), "failure")
    safe.step7()
    by_pr = {r["pr"].rsplit("#", 1)[1]: r for r in safe.actions("probe.failed")}
    assert by_pr[str(first)]["revert"] == "open_revert"
    assert by_pr[str(second)]["revert"] == "incident_only"
    assert "daily revert cap reached" in by_pr[str(second)]["reason"]
    assert len([r for r in safe.actions("revert") if r["status"] == "done"]) == 1


def _commit_reads(safe: SafetyHarness) -> int:
    """GETs of a commit's checks or statuses since the last counter reset."""
    ends = safe.sb.counters()["endpoints"]
    return sum(
        v["requests"] for k, v in ends.items() if k.startswith("GET ") and "/commits/{ref}/" in k
    )


def test_completed_probe_is_not_polled_until_its_window_ends(safe: SafetyHarness) -> None:
    """Once every check on the merge commit is complete and green, later ticks read nothing
    for it; one read at the window's end still catches a late failure (an incident)."""
    safe.configure(post_merge={"window_minutes": 10})
    number = _merged(safe, EXAMPLE)
    safe.ci(safe.merge_sha(number), "success")
    safe.step7()
    assert safe.safety()["watches"][0].get("quiet_until")
    safe.sb.reset_counters()
    for _ in range(5):
        safe.advance(minutes=1)
        safe.step7()
    assert _commit_reads(safe) == 0
    safe.ci(safe.merge_sha(number), "failure", context="ci/late")
    safe.advance(minutes=6)
    safe.step7()
    assert _commit_reads(safe) > 0
    assert len(safe.actions("probe.failed", number)) == 1
    assert not safe.actions("probe.healthy", number)


def test_running_probe_check_is_polled_every_tick(safe: SafetyHarness) -> None:
    """A check still pending on the merge commit keeps the watch polled each tick."""
    safe.configure(post_merge={"window_minutes": 10})
    number = _merged(safe, EXAMPLE)
    safe.ci(safe.merge_sha(number), "pending")
    safe.step7()
    assert "quiet_until" not in safe.safety()["watches"][0]
    safe.sb.reset_counters()
    safe.advance(minutes=1)
    safe.step7()
    assert _commit_reads(safe) > 0


def test_a_revert_pr_whose_opening_fails_is_unknown_then_opened_once(safe: SafetyHarness) -> None:
    """A 502 on opening the revert PR (its branch is already pushed): recorded "unknown", not
    "failed", and the watch stays; the next step 7 opens the PR once, on the same branch."""
    safe.configure(post_merge={"auto_revert_pr": True})
    path = safe.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["github"]["per_tick_wait_seconds"] = 0  # a fault is answered at once, never waited out
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    number = _merged(safe, EXAMPLE)
    safe.ci(safe.merge_sha(number), "failure")
    safe.sb.faults("POST", rf"^/repos/{safe.sb.repo}/pulls$", status=502, count=4)
    safe.step7()
    safe.sb.clear_faults()
    assert [r["status"] for r in safe.actions("revert")] == ["attempted", "unknown"]
    assert not safe.open_prs() and safe.safety()["watches"]  # the watch is the kept intent
    safe.step7()
    safe.step7()
    done = safe.actions("revert")
    assert [r["status"] for r in done] == ["attempted", "unknown", "attempted", "done"]
    assert [p.number for p in safe.open_prs()] == [done[-1]["revert_pr"]]
    assert len(safe.actions("probe.failed", number)) == 1


@pytest.mark.parametrize(
    ("point", "opened_by_crashed_tick"), [("audit:revert", False), ("act:revert", True)]
)
def test_kill_9_around_opening_the_revert_pr_opens_it_once(
    safe: SafetyHarness, point: str, opened_by_crashed_tick: bool
) -> None:
    """Killed after the "attempted" revert record, or after GitHub opened the revert PR but
    before the "done" record: the kept watch brings the next step 7 back to it, and the forge
    finds the PR it opened: one revert PR, one "done", one failed-probe incident."""
    safe.configure(post_merge={"auto_revert_pr": True})
    number = _merged(safe, EXAMPLE)
    safe.ci(safe.merge_sha(number), "failure")
    safe.stop()  # the child takes the state lock
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "capdaemon.cli", "tick", "--once"),
            *("--config", str(safe.config_dir), "--state", str(safe.state_dir)),
            *("--log-format", "json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CAPDAEMON_CRASH_AFTER": point},
    )
    assert proc.returncode == 137, proc.stderr[-2000:]
    assert [r["status"] for r in safe.actions("revert")] == ["attempted"]
    assert len(safe.open_prs()) == (1 if opened_by_crashed_tick else 0)
    safe.step7()
    safe.step7()
    done = safe.actions("revert")
    assert [r["status"] for r in done] == ["attempted", "attempted", "done"]
    assert [p.number for p in safe.open_prs()] == [done[-1]["revert_pr"]]
    assert len(safe.actions("probe.failed", number)) == 1

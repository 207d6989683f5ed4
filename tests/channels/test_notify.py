"""apprise notifications against a local JSON webhook receiver: sent once, after the write,
retried after a failure, never blocking a tick."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from capdaemon.channels.notify import Notice, Notifier, Outbox
from capdaemon.commands._common import CLIError
from capdaemon.state import StateError
from tests.daemon.conftest import Harness

from .receiver import Receiver

WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}
NOW = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


def test_d_ballot_notifies_once(daemon: Harness, receiver: Receiver) -> None:
    """A D PR's ballot issue opens → one notification with the issue; later ticks add none."""
    daemon.configure(notifications={"urls": [receiver.url], "timeout_seconds": 5})
    daemon.tick()  # the first tick starts the cursor (no replay of older history)
    n = daemon.open_pr(WORKFLOW)
    daemon.advance(minutes=1)
    daemon.tick()
    assert receiver.titles() == [f"Owner ballot opened: acme/widgets#{n}"]
    ballot = daemon.issue_for(n, "ballot")
    assert f"#{ballot.number}" in receiver.got[0]["message"]
    daemon.tick()
    daemon.stop()
    daemon.tick()  # a restart re-reads the outbox: still no duplicate
    assert len(receiver.got) == 1


def test_scope_violation_issue_notifies_the_owners(daemon: Harness, receiver: Receiver) -> None:
    """A PR outside any task on a hard-wall repo opens a scope-violation issue → a notice
    (the daemon records the kind under its one name; the notifier matches that name)."""
    daemon.configure(
        repo={"require_capability": True},
        notifications={"urls": [receiver.url], "timeout_seconds": 5},
    )
    daemon.tick()
    n = daemon.open_pr({"examples/old.py": "print('no task')\n"}, title="no task")
    daemon.advance(minutes=1)
    daemon.tick()
    issue = daemon.issue_for(n, "scope-violation")
    assert receiver.titles() == [f"Scope violation: acme/widgets#{n}"]
    assert f"#{issue.number}" in receiver.got[0]["message"]


def test_the_first_ticks_notices_are_sent(daemon: Harness, receiver: Receiver) -> None:
    """Notifications switched on with PRs already waiting: the very first tick's ballots are
    notified at its end (its cursor starts before its own writes, not after them)."""
    daemon.configure(notifications={"urls": [receiver.url], "timeout_seconds": 5})
    a = daemon.open_pr(WORKFLOW, title="CI one")
    b = daemon.open_pr({".github/workflows/lint.yml": "name: lint\n"}, title="CI two")
    daemon.tick()
    assert sorted(receiver.titles()) == sorted(
        f"Owner ballot opened: acme/widgets#{n}" for n in (a, b)
    )
    daemon.tick()
    assert len(receiver.got) == 2


def test_failed_channel_is_retried_next_tick_and_never_stops_it(
    daemon: Harness, receiver: Receiver
) -> None:
    """The receiver answers 500: the tick finishes (error reported), the next tick delivers."""
    daemon.configure(notifications={"urls": [receiver.url], "timeout_seconds": 5})
    daemon.tick()
    receiver.fail = 1
    n = daemon.open_pr(WORKFLOW)
    daemon.advance(minutes=1)
    report = daemon.tick()
    assert any("notifications" in e for e in report.errors)
    assert daemon.issue_for(n, "ballot")  # the GitHub write happened regardless
    assert receiver.got == []
    daemon.tick()
    assert receiver.titles() == [f"Owner ballot opened: acme/widgets#{n}"]


def test_unreachable_channel_is_bounded(tmp_path) -> None:
    """A channel that does not answer costs at most about the timeout, and stays pending."""
    from capdaemon.config.channels import NotificationsConfig

    n = Notifier(NotificationsConfig(("json://127.0.0.1:9/x",), timeout_seconds=1), tmp_path)
    told, failed = n.alert(Notice("x1", "t", "b"), NOW)
    assert told == [] and len(failed) == 1 and n.failures == 1
    assert "x1" in Outbox(tmp_path).pending()


def test_unknown_apprise_url_is_a_config_error(daemon: Harness) -> None:
    """A URL apprise does not understand: one line naming the key; the secret is not echoed."""
    daemon.configure(notifications={"urls": ["nosuchscheme://user:s3cret@host"]})
    with pytest.raises(CLIError) as info:
        daemon.start()
    msg = str(info.value)
    assert "notifications.urls[0]" in msg and "nosuchscheme" in msg
    assert "s3cret" not in msg and "\n" not in msg


def test_corrupt_outbox_is_never_overwritten(tmp_path) -> None:
    path = tmp_path / "notifications.json"
    path.write_text("{not json")
    with pytest.raises(StateError, match=r"notifications\.json"):
        Outbox(tmp_path).enqueue([Notice("a1", "t", "b")], ["c"], NOW)
    assert path.read_text() == "{not json"


@pytest.mark.parametrize(
    ("record", "title"),
    [
        ({"action": "issue_opened", "kind": "ballot", "pr": "o/r#1", "issue": "o/b#2"},
         "Owner ballot opened: o/r#1"),
        ({"action": "issue_opened", "kind": "scope-violation", "pr": "o/r#1", "issue": "o/b#3"},
         "Scope violation: o/r#1"),
        ({"action": "escalation_notified", "escalation": "e1", "task_id": "t", "issue": "o/b#4"},
         "Escalation: task t"),
        ({"action": "breaker.incident", "incident_kind": "revert", "detail": "d", "in_window": 1},
         "Incident: revert"),
        ({"action": "breaker.tripped", "incidents": 3, "window_hours": 24},
         "Circuit breaker tripped: merges stopped"),
        ({"action": "breaker.reset", "actor": "alice"}, "Circuit breaker reset: merges resume"),
        ({"action": "digest", "date": "2026-05-25", "issue": "o/b#9"},
         "capdaemon digest 2026-05-25"),
    ],
)  # fmt: skip
def test_events_owners_must_not_miss(record, title) -> None:
    """Each event kind of the issue gets a notice; routine records get none."""
    from capdaemon.channels.notify import notice_for

    notice = notice_for({"seq": 7, **record})
    assert notice is not None and notice.title == title
    assert notice_for({"seq": 8, "action": "merge", "pr": "o/r#1"}) is None
    linked = notice_for({"seq": 7, **record}, api_base="https://api.github.com")
    if "issue" in record:
        assert linked is not None and "https://github.com/o/b/issues/" in linked.body
    assert notice_for({"seq": 9, "action": "issue_opened", "kind": "review"}) is None


def test_digest_notice_carries_a_summary(tmp_path) -> None:
    """The digest notice links the issue and lists the digest's sections with their counts."""
    from capdaemon.channels.notify import notice_for

    (tmp_path / "digests").mkdir()
    (tmp_path / "digests" / "2026-05-25.md").write_text(
        "# capdaemon digest\n\n## Quadrants\n\n## Merges (3)\n\n## Pending ballots (1)\n"
    )
    rec = {"seq": 3, "action": "digest", "date": "2026-05-25", "issue": "o/b#9",
           "file": "2026-05-25.md"}  # fmt: skip
    notice = notice_for(rec, tmp_path)
    assert notice is not None
    assert notice.body == "The daily digest: o/b#9\nMerges (3); Pending ballots (1)"


def test_a_corrupt_actions_line_stops_the_tick_with_the_gates_error_and_no_notice(
    daemon: Harness, receiver: Receiver
) -> None:
    """A malformed line the notifier has not read yet: `tick --once` exits 3 with the audit
    gate's error naming file and line (the notification step, which runs after it, neither
    masks it nor moves its cursor past the line); actions.jsonl and notifications.json are
    left byte for byte and nothing is sent."""
    import subprocess
    import sys

    from capdaemon.audit import AuditLog, log_paths

    daemon.configure(notifications={"urls": [receiver.url], "timeout_seconds": 5})
    daemon.tick()  # the cursor starts at the end of the log
    daemon.stop()
    actions = log_paths(daemon.state_dir)[1]
    n = len(actions.read_bytes().splitlines())
    log = AuditLog(actions)
    for pr in ("acme/widgets#90", "acme/widgets#91"):  # as `finish-task` or the CLI appends
        log.append({"action": "escalation.opened", "pr": pr, "task_id": "t-9"}, now=NOW)
    lines = actions.read_bytes().split(b"\n")
    lines[n] = lines[n][:30]  # the first new line, cut short (its newline kept)
    actions.write_bytes(b"\n".join(lines))
    cut = actions.read_bytes()
    box = daemon.state_dir / "notifications.json"
    kept = box.read_bytes()
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "capdaemon.cli", "tick", "--once", "--log-format", "json"),
            *("--config", str(daemon.config_dir), "--state", str(daemon.state_dir)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert f"actions.jsonl:{n + 1}" in proc.stderr and "refusing to append" in proc.stderr
    assert actions.read_bytes() == cut
    assert box.read_bytes() == kept
    assert receiver.got == []

"""The small things an operator meets at the command line, each through the CLI against the
sandbox: plain output for people (no JSON log lines among a report, no JSON on a terminal),
one listing per fact (digest, why), headers, uniform arguments and clear refusals."""

from __future__ import annotations

import html
import json
import os
import pty
import select
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from capdaemon.cli import main as cli

from .conftest import Harness

pytestmark = pytest.mark.slow


def _cmd(*argv: str) -> list[str]:
    return [sys.executable, "-m", "capdaemon.cli", *argv]


def _paths(daemon: Harness) -> list[str]:
    return ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]


def _on_a_terminal(argv: list[str], timeout: float = 60) -> tuple[int, str]:
    """Run with stdout on a real pseudo-terminal (stderr piped); (exit status, what it showed)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdout=follower, stderr=subprocess.PIPE, close_fds=True)
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([leader], [], [], timeout)
        if not ready:
            proc.kill()
            raise AssertionError("no output on the terminal in time")
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal (EIO on Linux)
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout)
    os.close(leader)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def test_protect_warnings_are_plain_lines_not_json(daemon: Harness) -> None:
    """`protect --check` piped, with agents that can write to the decision repo: stderr has
    one readable warning per writer and no JSON log event at all (it had one per writer,
    plus the token refresh, mixed into the report)."""
    daemon.configure()
    proc = subprocess.run(
        _cmd("protect", daemon.sb.repo, "--check", *_paths(daemon)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr  # unprotected: drift reported
    assert "acme/widgets:main" in proc.stdout
    err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert err and not any(ln.lstrip().startswith("{") for ln in err), proc.stderr
    assert any(
        ln.startswith("capdaemon protect: warning: agent-1 (write) can write to the decision repo")
        for ln in err
    ), proc.stderr


def test_protect_an_unknown_repo_is_bad_input(daemon: Harness) -> None:
    """`protect acme/nope`: exit 2 (bad input) and one line naming the repo; it exited 3, the
    status every other command uses for a corrupt state directory, after trying to write."""
    daemon.configure()
    proc = subprocess.run(
        _cmd("protect", "acme/nope", *_paths(daemon)), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "acme/nope" in line and "not found" in line and "Traceback" not in proc.stderr
    assert not any("protection" in w for w in daemon.writes()), daemon.writes()


def test_tick_once_on_a_terminal_prints_lines_for_a_person(daemon: Harness) -> None:
    """On a terminal `tick --once` prints plain lines (it printed its JSON summary there
    too); piped, and with --json on a terminal, the one JSON line scripts read is kept."""
    daemon.configure()
    n = daemon.open_pr({"README.md": "# widgets, by an agent\n"})
    code, shown = _on_a_terminal(_cmd("tick", "--once", *_paths(daemon)))
    assert code == 0, shown
    assert not shown.lstrip().startswith("{"), shown
    assert "1 PRs seen" in shown and f"acme/widgets#{n}" in shown, shown
    code, shown = _on_a_terminal(_cmd("tick", "--once", "--json", *_paths(daemon)))
    assert code == 0 and "api_requests" in json.loads(shown)
    piped = subprocess.run(
        _cmd("tick", "--once", *_paths(daemon)), capture_output=True, text=True, timeout=60
    )
    assert "api_requests" in json.loads(piped.stdout)


def test_run_refuses_a_tick_interval_of_zero(daemon: Harness) -> None:
    """`run --tick-seconds 0` exits 2 naming the argument, before touching anything (it
    silently ticked every 60 s)."""
    daemon.configure()
    for bad in ("0", "-5", "nan"):
        proc = subprocess.run(
            _cmd("run", "--tick-seconds", bad, *_paths(daemon)),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 2, (bad, proc.stderr)
        assert "--tick-seconds" in proc.stderr and "more than 0" in proc.stderr
    assert not daemon.state_dir.exists()


def _reclassified_violation(daemon: Harness) -> int:
    """A PR with no task on the hard wall (a scope violation), re-classified at the same head
    because a label was added: two classification and two violation records."""
    daemon.configure(
        repo={"require_capability": True},
        schedule={"timezone": "Asia/Seoul", "digest_time": "09:00"},
    )
    n = daemon.open_pr({"README.md": "# widgets?\n"})
    daemon.tick()
    daemon.gh("agent-1").get_repo(daemon.sb.repo).get_issue(n).add_to_labels("triage")
    daemon.tick()
    daemon.stop()
    assert len(daemon.classifications(n)) == 2  # the inputs changed: both are recorded
    assert len(daemon.actions("scope_violation", n)) == 2
    return n


def test_digest_lists_a_violation_once_and_says_what_it_covers(
    daemon: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    """The digest lists the violation once (it listed it once per re-classification), and
    printed at 23:50 in Seoul it says which 24 hours it covers and that they are not over —
    it is dated tomorrow, the day it will be sent (the help said "today")."""
    n = _reclassified_violation(daemon)
    now = "2026-05-25T14:50:00Z"  # 23:50 in Asia/Seoul, after the 09:00 digest
    assert cli(["digest", "--print", "--now", now, *_paths(daemon)]) == 0
    text = capsys.readouterr().out
    section = text.split("### Scope violations", 1)[1].split("###", 1)[0]
    assert section.count(f"acme/widgets#{n}") == 1, section
    assert "# capdaemon digest — 2026-05-26 (Asia/Seoul)" in text
    assert "Covers 2026-05-25 09:00 to 2026-05-26 09:00 Asia/Seoul" in text
    assert "in progress: so far, as of 2026-05-25 23:50" in text
    help_text = subprocess.run(
        _cmd("digest", "--help"), capture_output=True, text=True, timeout=30
    ).stdout
    assert "default: today" not in help_text and "dated tomorrow" in " ".join(help_text.split())


def test_why_tells_a_repeated_classification_once(
    daemon: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    """`why` on the re-classified PR: one "classified" line for the head and one violation,
    each saying it was seen again (it showed both records as if classified twice)."""
    n = _reclassified_violation(daemon)
    assert cli(["why", f"acme/widgets#{n}", "--state", str(daemon.state_dir)]) == 0
    out = capsys.readouterr().out
    assert out.count("  classified ") == 1, out
    assert out.count("scope violation") == 1, out
    assert "re-checked 1 more time(s) at the same head" in out
    assert "recorded again 1 more time(s) at the same head" in out


def test_tasks_has_a_header_row(daemon: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    """`tasks` starts with a header naming its columns (it printed bare rows)."""
    from capdaemon.demo.steps import dispatch_tasks

    dispatch_tasks(daemon.state_dir, datetime(2026, 5, 25, tzinfo=UTC))
    assert cli(["tasks", "--state", str(daemon.state_dir)]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["TASK", "STATE", "LEVEL", "POLICY", "EXPIRES", "TITLE", "OR",
                              "PROBLEM"]  # fmt: skip
    assert rows and all(len(r.split()) >= 5 for r in rows)


@pytest.mark.parametrize(
    "argv", [["tasks"], ["escalations"], ["audit", "verify"]], ids=["tasks", "esc", "audit"]
)
def test_state_only_commands_accept_config_like_the_others(
    argv: list[str], daemon: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tasks`, `escalations` and `audit verify` take the same `--config DIR --state DIR` as
    every other command (they refused --config); a --config that does not exist is exit 2."""
    daemon.configure()
    daemon.tick()
    daemon.stop()
    assert cli([*argv, *_paths(daemon)]) == 0
    capsys.readouterr()
    missing = daemon.root / "no-such-config"
    assert cli([*argv, "--config", str(missing), "--state", str(daemon.state_dir)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert str(missing) in line and "does not exist" in line


def test_an_agent_is_told_what_agent_session_passes(daemon: Harness) -> None:
    """A PR whose commit says `Agent-Session: aider/gpt-5/sess-1` is D, and the L1.C3 check
    the agent reads names the session id, its length and the rule that passes."""
    daemon.configure()
    n = daemon.open_pr(
        {"README.md": "# widgets, edited\n"}, trailers="Agent-Session: aider/gpt-5/sess-1"
    )
    daemon.tick()
    check = daemon.check(n)
    shown = " ".join(f"{check.output.summary} {check.output.text or ''}".split())
    assert daemon.classifications(n)[-1]["quadrant"] == "D"
    assert "the session id 'sess-1' (6 characters) does not pass" in shown.replace("\\", ""), shown
    assert "8-64 characters" in shown


def test_doctor_piped_has_no_json_log_lines(daemon: Harness) -> None:
    """`doctor` piped while GitHub answers 502 for a repo: the report says so, and stderr has
    a readable warning, never a JSON event among the findings (it printed one)."""
    daemon.configure()
    daemon.sb.faults("GET", r"^/repos/acme/widgets$", status=502, count=10)
    proc = subprocess.run(
        _cmd("doctor", *_paths(daemon)), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL" in proc.stdout and "502" in proc.stdout
    err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert err and not any(ln.lstrip().startswith("{") for ln in err), proc.stderr
    assert any("forge.transient" in ln for ln in err), proc.stderr


def test_a_pr_without_a_task_is_told_what_links_one(daemon: Harness) -> None:
    """On a hard-wall repo a PR with no task fails L1.C3, and the check says what passes: a
    Task-Id trailer or a task branch (it said only "no task linked")."""
    daemon.configure(repo={"require_capability": True})
    n = daemon.open_pr({"README.md": "# widgets?\n"})
    daemon.tick()
    summary = html.unescape(daemon.check(n).output.summary)  # as GitHub shows it
    shown = " ".join(summary.replace("\\", "").split())
    assert "no task linked" in shown and "what passes" in shown, shown
    assert "Task-Id: <task id>" in shown and "task/<task id>" in shown, shown

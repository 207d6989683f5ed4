"""Audit corruption is acted on: a malformed line stops appends (incident, breaker, where), `why`
still tells other stories; a torn tail's repair is recorded in the chain."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from capdaemon.audit import log_paths, verify
from capdaemon.cli import main as cli
from capdaemon.forge.markers import parse_marker
from capdaemon.stores.safety_state import read_breaker

from .conftest import Harness


def _tick(daemon: Harness) -> subprocess.CompletedProcess[str]:
    """`capdaemon tick --once` in a child process (as cron or systemd runs it)."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "capdaemon.cli", "tick", "--once", "--log-format", "json"),
            *("--config", str(daemon.config_dir), "--state", str(daemon.state_dir)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _corrupt_line(path: object, lineno: int) -> bytes:
    """Cut line `lineno` (1-based) of a JSONL file short, keeping its newline; the new bytes."""
    lines = path.read_bytes().split(b"\n")  # type: ignore[attr-defined]
    lines[lineno - 1] = lines[lineno - 1][:40]
    data = b"\n".join(lines)
    path.write_bytes(data)  # type: ignore[attr-defined]
    return data


def test_malformed_middle_line_stops_the_tick_and_raises_an_incident(
    daemon: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cut-off line in the middle of classifier_audit.jsonl: `tick` exits 1 naming file and
    line, appends nothing to that log, counts one audit_integrity incident (once, not per
    tick) with an incident issue saying where; `why` tells another PR's story, naming the line."""
    daemon.configure()
    daemon.open_pr({"examples/a.py": "print(1)\n"}, title="first")
    second = daemon.open_pr({"examples/b.py": "print(2)\n"}, title="second")
    third = daemon.open_pr({"examples/c.py": "print(3)\n"}, title="third")
    daemon.tick()
    daemon.stop()
    classifier = log_paths(daemon.state_dir)[0]
    lines = classifier.read_bytes().split(b"\n")
    bad_no = next(
        n for n, ln in enumerate(lines, 1) if ln and json.loads(ln)["pr"].endswith(f"#{second}")
    )
    assert bad_no < len([ln for ln in lines if ln])  # a line in the middle, not the last
    corrupted = _corrupt_line(classifier, bad_no)
    n4 = daemon.open_pr({"examples/d.py": "print(4)\n"}, title="fourth")
    proc = _tick(daemon)
    err = proc.stderr
    assert proc.returncode == 3, err[-2000:]  # corrupt state: systemd does not restart
    assert f"classifier_audit.jsonl:{bad_no}" in err and "refusing to append" in err
    assert classifier.read_bytes() == corrupted  # nothing appended to the corrupt log
    assert not daemon.pull(n4).merged
    incidents = read_breaker(daemon.state_dir).state.incidents
    assert [i.kind.value for i in incidents] == ["audit_integrity"]
    assert f"classifier_audit.jsonl:{bad_no}" in incidents[0].detail
    assert [r["incident_kind"] for r in daemon.actions("breaker.incident")] == ["audit_integrity"]
    issue = next(
        i
        for i in daemon.issues("incident")
        if str((parse_marker(i.body) or {}).get("key", "")).startswith("audit-")
    )
    assert f"line {bad_no}" in issue.body and "classifier" in issue.body.replace("\\", "")
    assert _tick(daemon).returncode == 3  # still refused; still one incident
    assert len(read_breaker(daemon.state_dir).state.incidents) == 1
    capsys.readouterr()
    assert cli(["why", f"{daemon.sb.repo}#{third}", "--state", str(daemon.state_dir)]) == 3
    out = capsys.readouterr()
    assert f"{daemon.sb.repo}#{third}:" in out.out and "classified" in out.out
    assert f"classifier_audit.jsonl:{bad_no}:" in out.err


def test_torn_tail_repair_is_recorded_in_the_chain(daemon: Harness) -> None:
    """A crash mid-write leaves a partial last line: the next start moves it aside and the
    chain holds an entry with the removed bytes' length and SHA-256."""
    daemon.configure()
    daemon.open_pr({"examples/a.py": "print(1)\n"})
    daemon.tick()
    daemon.stop()
    actions = log_paths(daemon.state_dir)[1]
    torn = b'{"action":"merge","pr":"acme/wid'
    with actions.open("ab") as fh:
        fh.write(torn)
    daemon.tick()
    repaired = daemon.actions("audit.torn_tail_repaired")
    assert len(repaired) == 1
    assert repaired[0]["bytes"] == len(torn)
    assert repaired[0]["sha256"] == hashlib.sha256(torn).hexdigest()
    assert (actions.parent / repaired[0]["moved_to"]).read_bytes() == torn
    assert verify(actions).ok

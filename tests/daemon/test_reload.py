"""Config reload in one running `capdaemon run`: a severity edited between two ticks applies at
the next tick; SIGHUP reloads (RELOADING=1, MONOTONIC_USEC, READY=1) and never kills; a broken
edit is refused (the last good config keeps running, one incident issue until fixed)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from capdaemon.forge.markers import parse_marker

from .conftest import Harness

pytestmark = pytest.mark.slow

Event = dict[str, Any]


class Running:
    """`capdaemon run` as a process, its JSON log events read as they come."""

    def __init__(
        self, daemon: Harness, env: dict[str, str] | None = None, fixed_interval: bool = True
    ) -> None:
        if not (daemon.config_dir / "capdaemon.yml").exists():
            daemon.configure()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "capdaemon.cli",
                "run",
                *(["--tick-seconds", "1"] if fixed_interval else []),
                "--config",
                str(daemon.config_dir),
                "--state",
                str(daemon.state_dir),
                "--log-format",
                "json",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.startswith("{"):
                with self._lock:
                    self.events.append(json.loads(line))

    def wait_for(self, pred: Callable[[Event], bool], timeout: float = 60, after: int = 0) -> int:
        """The index of the first event from `after` on that matches (fails on timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for i in range(after, len(self.events)):
                    if pred(self.events[i]):
                        return i
            assert self.proc.poll() is None, f"the daemon exited {self.proc.returncode}"
            time.sleep(0.05)
        raise AssertionError(f"no such event in {[e['event'] for e in self.events[after:]]}")

    def next_tick_done(self, after: int) -> int:
        return self.wait_for(lambda e: e["event"] == "tick.done", after=after)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self._reader.join(timeout=5)


@pytest.fixture
def running(daemon: Harness) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(**kw: Any) -> Running:
        r = Running(daemon, **kw)
        started.append(r)
        return r

    yield start
    for r in started:
        r.stop()


def _skills(daemon: Harness, text: str) -> None:
    path = daemon.config_dir / "skills.yml"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # as an editor saves: never a half-written file


def _incidents(daemon: Harness, state: str = "all") -> list[Any]:
    return [
        i
        for i in daemon.issues("incident", state=state)
        if (parse_marker(i.body) or {}).get("key") == "config-refused"
    ]


def test_a_severity_raised_between_two_ticks_applies_at_the_next_tick(
    daemon: Harness, running: Callable[..., Running]
) -> None:
    """The registry validator at P2 lets an unregistered agent's PR merge; raised to P0 in
    skills.yml while the daemon runs, the next tick finds such a PR P0 and blocks its merge,
    records the config change with both hashes, and the classification records the new hash."""
    daemon.configure()
    _skills(daemon, "severity_overrides:\n  validator_agent_registry: P2\n")
    first = daemon.open_pr({"README.md": "# widgets (before)\n"})
    d = running()
    d.wait_for(lambda e: e["event"] == "merge.done")
    assert daemon.pull(first).merged
    old_hash = daemon.classifications(first)[-1]["config_hash"]

    _skills(daemon, "severity_overrides:\n  validator_agent_registry: P0\n")
    at = d.wait_for(lambda e: e["event"] == "config.reloaded")
    reloaded = d.events[at]
    assert reloaded["old_config_hash"] == old_hash != reloaded["new_config_hash"]
    changes = daemon.actions("config.changed")
    assert [(c["old_config_hash"], c["new_config_hash"]) for c in changes] == [
        (old_hash, reloaded["new_config_hash"])
    ]

    second = daemon.open_pr({"docs/guide.md": "# guide (after)\n"})
    d.wait_for(lambda e: e["event"] == "tick.done" and e.get("classified", 0) >= 1, after=at)
    d.next_tick_done(len(d.events))
    rec = daemon.classifications(second)[-1]
    assert rec["config_hash"] == reloaded["new_config_hash"]
    assert [f["severity"] for f in rec["findings"]] == ["P0"] and rec["blocking"]
    assert not daemon.pull(second).merged
    assert d.stop() == 0


def test_sighup_reloads_and_a_broken_edit_is_refused_until_fixed(
    daemon: Harness, running: Callable[..., Running], tmp_path: Path
) -> None:
    """SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1; the daemon lives on. A broken
    skills.yml is refused naming the file and line, the last good config keeps classifying,
    one incident issue stays open while it is broken and is closed once it is fixed."""
    daemon.configure()
    sock_path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(sock_path))
        sock.settimeout(30)
        d = running(env={"NOTIFY_SOCKET": str(sock_path)})
        assert sock.recv(512).decode().startswith("READY=1")
        d.next_tick_done(0)

        _skills(daemon, "severity_overrides:\n  validator_agent_registry: P7\n")
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        d.proc.send_signal(signal.SIGHUP)
        got = []
        while not any(m.startswith("READY=1") for m in got):
            got.append(sock.recv(512).decode())
        reloading = next(m for m in got if m.startswith("RELOADING=1"))
        usec = int(dict(f.split("=", 1) for f in reloading.splitlines())["MONOTONIC_USEC"])
        assert before <= usec <= time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        ready = next(m for m in got if m.startswith("READY=1"))
        assert "refused" in ready and "skills.yml" in ready

        at = d.wait_for(lambda e: e["event"] == "config.reload_refused")
        refused = d.events[at]["error"]
        assert "skills.yml:2:" in refused and "P7" in refused
        first_done = d.next_tick_done(at)
        d.next_tick_done(first_done + 1)  # two ticks while broken: still one issue
        assert d.proc.poll() is None
        open_issues = _incidents(daemon, "open")
        assert len(open_issues) == 1 and "skills.yml" in open_issues[0].body

        n = daemon.open_pr({"README.md": "# widgets (while broken)\n"})
        d.wait_for(lambda e: e["event"] == "merge.done", after=at)
        assert daemon.pull(n).merged  # the last good config (P2) kept running

        _skills(daemon, "severity_overrides:\n  validator_agent_registry: P1\n")
        fixed = d.wait_for(lambda e: e["event"] == "config.reloaded", after=at)
        d.next_tick_done(fixed)
        assert _incidents(daemon, "open") == []
        assert len(_incidents(daemon)) == 1
        assert d.proc.poll() is None
        assert d.stop() == 0


def _schedule(daemon: Harness, **schedule: int) -> None:
    path = daemon.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["schedule"] = {**(data.get("schedule") or {}), **schedule}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    os.replace(tmp, path)


def _tick_times(d: Running, after: int, count: int) -> list[datetime]:
    """The times of the next `count` finished ticks from event `after` on."""
    out = []
    for _ in range(count):
        after = d.next_tick_done(after) + 1
        out.append(datetime.fromisoformat(d.events[after - 1]["timestamp"]))
    return out


def test_a_reloaded_tick_interval_moves_the_schedule(
    daemon: Harness, running: Callable[..., Running]
) -> None:
    """Without --tick-seconds the config's interval rules: edited from 1 s to 3 s while the
    daemon runs, the tick that applies it moves the tick job, and the ticks after it come
    about 3 s apart (they came every second before)."""
    daemon.configure()
    _schedule(daemon, tick_seconds=1, detect_seconds=0)
    d = running(fixed_interval=False)
    before = _tick_times(d, 0, 3)
    assert max(b - a for a, b in itertools.pairwise(before)) < timedelta(seconds=2.5)

    _schedule(daemon, tick_seconds=3)
    at = d.wait_for(lambda e: e["event"] == "daemon.rescheduled")
    assert d.events[at]["tick_seconds"] == 3
    after = _tick_times(d, at, 3)
    assert min(b - a for a, b in itertools.pairwise(after)) > timedelta(seconds=2.5)
    assert d.stop() == 0


def test_the_unit_reloads_with_sighup() -> None:
    """`systemctl reload capdaemon` sends the SIGHUP the daemon answers with RELOADING/READY."""
    unit = Path(__file__).parents[2] / "systemd" / "capdaemon.service"
    text = unit.read_text(encoding="utf-8")
    assert "ExecReload=/bin/kill -HUP $MAINPID" in text
    assert "Type=notify\n" in text and "NotifyAccess=main" in text

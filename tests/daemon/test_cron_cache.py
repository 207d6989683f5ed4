"""Cron ticks: `tick --once` processes reuse the installation token and the ETag cache."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from structlog.testing import capture_logs

from capdaemon.filenames import FORGE_CACHE_FILE as CACHE_FILE
from capdaemon.forge.tokencache import FORMAT

from .conftest import Harness

pytestmark = pytest.mark.slow

WORKFLOW = {".github/workflows/w.yml": "name: w\non: [pull_request]\njobs: {}\n"}
DOCS = {"docs/guide.md": "# Guide\n\nMore words.\n"}


def _tick_once(daemon: Harness) -> subprocess.CompletedProcess[str]:
    if not (daemon.config_dir / "capdaemon.yml").exists():
        daemon.configure(mode="shadow")
    args = ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]
    return subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "tick", "--once", *args, "--log-format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )


def _counted(daemon: Harness) -> tuple[int, int, int]:
    """(requests, counted requests, token mints) since the last counter reset."""
    c = daemon.sb.counters()
    mints = sum(v["requests"] for k, v in c["endpoints"].items() if k.endswith("/access_tokens"))
    return c["total"]["requests"], c["total"]["counted"], mints


def _events(proc: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]


def test_second_cron_tick_reuses_token_and_etags(daemon: Harness) -> None:
    """Over unchanged PRs, a second `tick --once` process mints no token and nearly every read
    is a free 304 (a fresh token per process made every read count); the cache file is
    owner-only and the token is in no log line."""
    daemon.configure(mode="shadow")
    for i in range(3):
        daemon.open_pr({f"docs/p{i}.md": f"# {i}\n"})
    daemon.open_pr(WORKFLOW)
    for _ in range(2):  # publish checks and the ballot, then settle
        proc = _tick_once(daemon)
        assert proc.returncode == 0, proc.stderr
    cache = daemon.state_dir / CACHE_FILE
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    (held,) = json.loads(cache.read_text())["tokens"]
    token = held["value"]

    daemon.sb.reset_counters()
    proc = _tick_once(daemon)
    assert proc.returncode == 0, proc.stderr
    requests, counted, mints = _counted(daemon)
    assert mints == 0
    # the page of open PRs (with the base branch), the issue list, the collaborators: the App's
    # slug and the repos' visibility are remembered from the first process
    assert 3 <= requests <= 5 and counted == 0, (requests, counted)
    assert token not in proc.stderr and token not in proc.stdout
    loaded = [e for e in _events(proc) if e["event"] == "forge.cache_loaded"]
    assert loaded and loaded[0]["reused_grant"] is True


def test_corrupt_cache_is_set_aside_and_the_tick_runs_cold(daemon: Harness) -> None:
    """A cache file that is not JSON is renamed aside (kept, never overwritten), logged, and
    the tick works as a cold start with the same outcome."""
    daemon.configure()
    n = daemon.open_pr({"README.md": "# widgets (typo)\n"})
    daemon.state_dir.mkdir(parents=True, exist_ok=True)
    cache = daemon.state_dir / CACHE_FILE
    cache.write_bytes(b'{"format": 1, "etags": [')
    cache.chmod(0o600)
    proc = _tick_once(daemon)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["merged"] == [f"acme/widgets#{n}"]
    aside = [e for e in _events(proc) if e["event"] == "forge.cache_set_aside"]
    assert len(aside) == 1 and "not JSON" in str(aside[0]["reason"])
    kept = list(daemon.state_dir.glob(f"{CACHE_FILE}.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == b'{"format": 1, "etags": ['
    assert json.loads(cache.read_text())["format"] == FORMAT  # a fresh cache was written


def test_older_format_cache_is_replaced_not_set_aside(daemon: Harness) -> None:
    """A cache written by an earlier version (one token, format 1) is not read and not taken for
    a corrupt file: the tick starts cold and writes the current format in its place."""
    daemon.configure(mode="shadow")
    daemon.state_dir.mkdir(parents=True, exist_ok=True)
    cache = daemon.state_dir / CACHE_FILE
    old = {"format": 1, "binding": {}, "token": None, "etags": [], "policies": []}
    cache.write_text(json.dumps(old))
    cache.chmod(0o600)
    proc = _tick_once(daemon)
    assert proc.returncode == 0, proc.stderr
    events = [e["event"] for e in _events(proc)]
    assert "forge.cache_older_format" in events and "forge.cache_set_aside" not in events
    assert not list(daemon.state_dir.glob(f"{CACHE_FILE}.corrupt-*"))
    assert json.loads(cache.read_text())["format"] == FORMAT


def _restart_tick(daemon: Harness) -> list[dict[str, object]]:
    """Stop the ticker (saves the cache), start a new one (loads it) and tick; the log events."""
    daemon.stop()
    with capture_logs() as logs:
        daemon.tick()
    return logs


def test_world_readable_cache_token_is_not_used(daemon: Harness) -> None:
    """A cache file others could read (mode 0644) is set aside: its token may have leaked, so
    a new one is minted."""
    daemon.configure(mode="shadow")
    daemon.tick()
    daemon.stop()
    cache = daemon.state_dir / CACHE_FILE
    cache.chmod(0o644)
    daemon.sb.reset_counters()
    logs = _restart_tick(daemon)
    assert _counted(daemon)[2] == 1  # minted anew
    aside = [e for e in logs if e["event"] == "forge.cache_set_aside"]
    assert aside and "owner-only" in str(aside[0]["reason"])
    daemon.stop()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600


def test_tampered_body_is_set_aside(daemon: Harness) -> None:
    """A stored body edited in place (its digest no longer matches) is never served: the file
    is set aside and the tick reads afresh."""
    daemon.configure(mode="shadow")
    daemon.open_pr(DOCS)
    daemon.tick()
    daemon.stop()
    cache = daemon.state_dir / CACHE_FILE
    doc = json.loads(cache.read_text())
    assert doc["etags"]
    doc["etags"][0]["body"] = doc["etags"][0]["body"].replace("a", "b", 1) + " "
    cache.write_text(json.dumps(doc))
    cache.chmod(0o600)
    logs = _restart_tick(daemon)
    aside = [e for e in logs if e["event"] == "forge.cache_set_aside"]
    assert aside and "sha256" in str(aside[0]["reason"])
    assert list(daemon.state_dir.glob(f"{CACHE_FILE}.corrupt-*"))


def test_cron_tick_does_not_ask_again_for_a_missing_repo_policy(daemon: Harness) -> None:
    """The base branch has no `.capdaemon.yml`: on GitHub each ask is a counted 404. Later
    `tick --once` processes remember it per base commit (the cache file); when the base moves,
    the page of open PRs says the new base commit has no such file either: nothing is asked."""
    daemon.configure(mode="shadow")
    daemon.open_pr(DOCS)
    assert _tick_once(daemon).returncode == 0
    entries = json.loads((daemon.state_dir / CACHE_FILE).read_text())["policies"]
    assert [(e["repo"], e["text"]) for e in entries] == [(daemon.sb.repo, None)]

    def policy_reads() -> int:
        ends = daemon.sb.counters()["endpoints"]
        return int(ends.get("GET /repos/{owner}/{repo}/contents/{path}", {}).get("requests", 0))

    daemon.sb.reset_counters()
    assert _tick_once(daemon).returncode == 0
    assert policy_reads() == 0
    daemon.sb.commit_files(daemon.sb.repo, "main", {"README.md": "moved\n"}, "base moves")
    daemon.sb.reset_counters()
    assert _tick_once(daemon).returncode == 0
    assert policy_reads() == 0  # a new base commit, and the page's tree entry: still none


def test_a_malformed_policy_entry_sets_the_cache_aside(daemon: Harness) -> None:
    """A policies entry without a full commit sha is not a cache this version can read: the
    file is set aside and the tick runs cold (the policy is read from GitHub)."""
    daemon.configure(mode="shadow")
    daemon.open_pr(DOCS)
    assert _tick_once(daemon).returncode == 0
    cache = daemon.state_dir / CACHE_FILE
    doc = json.loads(cache.read_text())
    doc["policies"] = [{"repo": daemon.sb.repo, "sha": "abc", "text": None}]
    cache.write_text(json.dumps(doc))
    cache.chmod(0o600)
    proc = _tick_once(daemon)
    assert proc.returncode == 0, proc.stderr
    aside = [e for e in _events(proc) if e["event"] == "forge.cache_set_aside"]
    assert aside and "policies[0]" in str(aside[0]["reason"])
    assert list(daemon.state_dir.glob(f"{CACHE_FILE}.corrupt-*"))

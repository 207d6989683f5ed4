"""A clock that drifts: the sandbox judges App JWTs on its own (skewed) clock with GitHub's
messages; the daemon corrects from GitHub's `Date`, reports the drift; doctor fails beyond the
JWT's window."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import jwt
import pytest
import requests

from .conftest import Harness

pytestmark = pytest.mark.slow

ISSUED_LATER = (
    "'Issued at' claim ('iat') must be an Integer representing the time that the assertion "
    "was issued"
)
EXPIRED = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time at "
    "which the assertion expires"
)
TOO_LONG = "'Expiration time' claim ('exp') is too far in the future"


def _capdaemon(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def _dirs(daemon: Harness) -> list[str]:
    if not (daemon.config_dir / "capdaemon.yml").exists():
        daemon.configure()
    return ["--config", str(daemon.config_dir), "--state", str(daemon.state_dir)]


def _events(stderr: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def _app_request(daemon: Harness, token: str) -> requests.Response:
    """GET /app/installations with a hand-made JWT, as any client would send it."""
    return requests.get(
        f"{daemon.sb.base_url}/app/installations",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"},
        timeout=30,
    )


def _jwt(daemon: Harness, iat: int, exp: int) -> str:
    key = daemon.sb.app_private_key
    return jwt.encode({"iat": iat, "exp": exp, "iss": str(daemon.sb.app_id)}, key, "RS256")


@pytest.mark.parametrize(
    ("skew", "iat", "exp", "message"),
    [
        (-400, -60, 300, ISSUED_LATER),  # GitHub's clock behind ours: iat in its future
        (700, -60, 300, EXPIRED),  # GitHub's clock ahead: exp already past
        (0, -60, 3600, TOO_LONG),  # an hour-long JWT
    ],
)
def test_the_sandbox_refuses_a_jwt_outside_its_window_with_githubs_words(
    daemon: Harness, skew: int, iat: int, exp: int, message: str
) -> None:
    """A JWT a client with a drifted clock mints (PyGithub's own default times) is refused 401
    with GitHub's message, on the sandbox's skewed clock; the same JWT passes without skew."""
    daemon.sb.set_clock_skew(skew)
    now = int(time.time())
    token = _jwt(daemon, now + iat, now + exp)
    refused = _app_request(daemon, token)
    assert refused.status_code == 401
    assert refused.json()["message"] == message
    if exp - iat <= 600:
        daemon.sb.set_clock_skew(0)
        assert _app_request(daemon, token).status_code == 200


@pytest.mark.parametrize("skew", [-400, 700])
def test_tick_once_mints_jwts_on_githubs_clock_and_reports_the_drift(
    daemon: Harness, skew: int
) -> None:
    """With GitHub's clock 400 s behind or 700 s ahead of ours, `tick --once` still merges an A
    PR: the first JWT is refused for its times, the daemon reads GitHub's Date and retries
    once. The summary and the log say how far off the clock is."""
    n = daemon.open_pr({"README.md": "# widgets (clock)\n"})
    daemon.sb.set_clock_skew(skew)
    proc = _capdaemon("tick", "--once", *_dirs(daemon), "--log-format", "json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["merged"] == [f"acme/widgets#{n}"]
    assert abs(summary["clock_offset_seconds"] - skew) <= 2
    events = _events(proc.stderr)
    corrected = [e for e in events if e["event"] == "forge.clock_corrected"]
    assert len(corrected) == 1 and abs(int(str(corrected[0]["offset_seconds"])) - skew) <= 2
    assert any(e["event"] == "tick.clock_drift" for e in events)
    digest = _capdaemon(
        "digest", "--print", "--config", str(daemon.config_dir), "--state", str(daemon.state_dir)
    )
    assert digest.returncode == 0, digest.stderr
    side = "behind" if skew > 0 else "ahead of"
    assert "## Clock" in digest.stdout and f"s {side} GitHub's" in digest.stdout


def test_in_step_clock_is_quiet(daemon: Harness) -> None:
    """No skew: no correction, no drift warning, an offset of about 0, no digest section."""
    proc = _capdaemon("tick", "--once", *_dirs(daemon), "--log-format", "json")
    assert proc.returncode == 0, proc.stderr
    assert abs(json.loads(proc.stdout)["clock_offset_seconds"]) <= 1
    events = {e["event"] for e in _events(proc.stderr)}
    assert "forge.clock_corrected" not in events and "tick.clock_drift" not in events
    digest = _capdaemon("digest", "--print", *_dirs(daemon))
    assert "## Clock" not in digest.stdout


@pytest.mark.parametrize(("skew", "status"), [(0, "ok"), (20, "warn"), (700, "FAIL")])
def test_doctor_reports_the_offset_and_fails_beyond_the_jwt_window(
    daemon: Harness, skew: int, status: str
) -> None:
    """doctor measures the offset against GitHub's Date: in step is ok, 20 s a warning, 700 s
    (beyond the 540 s a JWT allows) a failure with the fix; the summary line always comes."""
    daemon.configure()
    daemon.sb.set_clock_skew(skew)
    proc = _capdaemon("doctor", *_dirs(daemon))
    lines = [ln for ln in proc.stdout.splitlines() if ln.split()[1:2] == ["clock"]]
    assert len(lines) == 1, proc.stdout
    assert lines[0].split()[0] == status
    if skew:
        found = re.search(r"clock is (\d+) s behind GitHub's", lines[0])
        assert found and abs(int(found.group(1)) - skew) <= 1, lines[0]
    assert proc.stdout.splitlines()[-1].startswith("doctor: ")
    if status == "FAIL":
        assert proc.returncode == 1 and "timedatectl set-ntp true" in lines[0]

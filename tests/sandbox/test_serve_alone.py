"""`capdaemon sandbox serve` started alone: without --seed a default world with printed tokens
and an App key; the seed format's sample (`sandbox sample-seed`) serves as it is."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import github
import pytest
import requests

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "capdaemon.cli", "sandbox"]


@contextmanager
def _serving(*argv: str) -> Iterator[tuple[str, list[str]]]:
    """Start `capdaemon sandbox serve ARGV`; (base URL, the lines it printed up to 'stops')."""
    proc = subprocess.Popen([*CLI, "serve", *argv], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        pending: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: [pending.put(ln) for ln in proc.stdout or ()])
        reader.daemon = True
        reader.start()
        while not lines or "stops it" not in lines[-1]:
            try:
                line = pending.get(timeout=30)
            except queue.Empty:
                raise AssertionError(f"serve printed nothing more in 30 s after: {lines}") from None
            lines.append(line.rstrip("\n"))
        yield lines[0], lines
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0


def _token(lines: list[str], login: str) -> str:
    [m] = [m for ln in lines if (m := re.match(rf"^  {re.escape(login)} +(\S+)", ln))]
    return m[1]


def test_serve_without_a_seed_prints_a_usable_default_world(tmp_path: Path) -> None:
    """No --seed: the first line is the base URL, then the admin token, every user's token and
    the App with its key file — each of which works against the server (it printed only a URL,
    and had no users, tokens or Apps). The same root serves the same tokens again."""
    root = tmp_path / "sb"
    with _serving("--root", str(root)) as (base, lines):
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", base)
        alice = _token(lines, "alice")
        gh = github.Github(base_url=base, auth=github.Auth.Token(alice))
        assert gh.get_user().login == "alice"
        assert gh.get_repo("acme/widgets").default_branch == "main"
        [admin] = [ln.split(": ", 1)[1] for ln in lines if ln.startswith("admin token")]
        counters = f"{base}/_sandbox/counters"
        assert requests.get(counters, timeout=5).status_code == 401
        ok = requests.get(counters, headers={"Authorization": f"token {admin}"}, timeout=5)
        assert ok.status_code == 200
        [app] = [ln for ln in lines if ln.startswith("App capdaemon: id 1001")]
        key = Path(app.rsplit("private key ", 1)[1])
        assert key.is_file() and (key.stat().st_mode & 0o077) == 0  # the key is the owner's only
        integration = github.GithubIntegration(
            auth=github.Auth.AppAuth(1001, key.read_text(encoding="utf-8")), base_url=base
        )
        assert integration.get_app().slug == "capdaemon"
        assert any(ln == f"repo acme/widgets: git {base}/acme/widgets.git" for ln in lines)
    with _serving("--root", str(root)) as (_base, again):
        assert _token(again, "alice") == alice and app in "\n".join(again)


def test_the_sample_seed_is_printed_and_serves(tmp_path: Path) -> None:
    """`sandbox sample-seed` prints the documented sample; with a key pair made by openssl
    next to it (as its comments say), it serves: its user token reads its repo, and the
    repo's protection is the one the sample sets."""
    sample = subprocess.run([*CLI, "sample-seed"], capture_output=True, text=True, timeout=30)
    assert sample.returncode == 0 and "users:" in sample.stdout and "apps:" in sample.stdout
    seed = tmp_path / "seed.yml"
    seed.write_text(sample.stdout, encoding="utf-8")
    pem, pub = tmp_path / "capdaemon.pem", tmp_path / "capdaemon.pub"
    subprocess.run(["openssl", "genrsa", "-out", pem, "2048"], check=True, capture_output=True)
    subprocess.run(
        ["openssl", "rsa", "-in", pem, "-pubout", "-out", pub], check=True, capture_output=True
    )
    with _serving("--root", str(tmp_path / "sb"), "--seed", str(seed)) as (base, lines):
        token = _token(lines, "agent-1")
        assert token == "ghp_sandbox_agent_1"
        repo = github.Github(base_url=base, auth=github.Auth.Token(token)).get_repo(
            "example-org/widgets"
        )
        assert repo.get_contents("README.md").decoded_content == b"# widgets\n"
        owner = github.Github(base_url=base, auth=github.Auth.Token(_token(lines, "owner-1")))
        checks = owner.get_repo("example-org/widgets").get_branch("main").get_protection()
        assert [c.context for c in checks.required_status_checks.checks] == ["L1.C3"]

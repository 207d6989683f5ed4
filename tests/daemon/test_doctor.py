"""`capdaemon doctor` against the sandbox: all ok, then one broken thing at a time — each one
FAIL line with the right exit status — and never a file written."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from capdaemon.cli import main as cli
from capdaemon.landlock import abi_version
from ghsandbox import Sandbox
from ghsandbox import testing as std

from .conftest import write_config

pytestmark = pytest.mark.slow

PROTECTION = {
    "required_status_checks": {"strict": False, "checks": [{"context": "L1.C3", "app_id": 1001}]},
    "enforce_admins": True,
    "required_pull_request_reviews": {"required_approving_review_count": 0},
    "restrictions": None,
    "allow_force_pushes": False,
}


@pytest.fixture
def clean_sandbox(
    tmp_path: Path, sandbox_keys: tuple[std.AppKeys, Path, Path]
) -> Iterator[Sandbox]:
    """The standard seed, except that no agent can write to the decision repo."""
    keys, app_key, _ = sandbox_keys
    seed = std.standard_seed(keys)
    for repo in seed["repos"]:
        if repo["name"] == "capdaemon-bot":
            repo["collaborators"] = {std.SECOND_OWNER: "admin"}
    sb = Sandbox.start(tmp_path / "sandbox", seed)
    sb.app_id, sb.installation_id = std.APP_ID, std.INSTALLATION_ID  # type: ignore[attr-defined]
    sb.app_key_path, sb.app_slug = app_key, std.APP_SLUG  # type: ignore[attr-defined]
    sb.owner, sb.second_owner = std.OWNER, std.SECOND_OWNER  # type: ignore[attr-defined]
    sb.repo, sb.bot_repo = std.REPO, std.BOT_REPO  # type: ignore[attr-defined]
    sb.set_protection(std.REPO, "main", PROTECTION)
    try:
        yield sb
    finally:
        sb.stop()


def _files(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): p.stat().st_mtime_ns
        for p in root.rglob("*")
        if p.is_file() and "sandbox" not in p.relative_to(root).parts
    }


def _doctor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, list[str]]:
    before = _files(tmp_path)
    state = tmp_path / "bot-state"
    code = cli(["doctor", "--config", str(tmp_path / "config"), "--state", str(state), *extra])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    assert _files(tmp_path) == before, "doctor wrote a file"
    assert not state.exists(), "doctor created the state directory"
    return code, out.out.splitlines()


def _fails(lines: list[str]) -> list[str]:
    return [ln for ln in lines if ln.startswith("FAIL")]


def _edit(tmp_path: Path, **github: object) -> None:
    path = tmp_path / "config" / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["github"].update(github)
    data["github"] = {k: v for k, v in data["github"].items() if v is not None}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def test_doctor_all_ok_against_the_sandbox(
    clean_sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every check passes: exit 0, one line per check, and the important ones are there."""
    write_config(tmp_path / "config", clean_sandbox)
    code, lines = _doctor(tmp_path, capsys, "--agent", "agent-1")
    assert code == 0, lines
    assert _fails(lines) == []
    text = "\n".join(lines)
    for check in (
        "config",
        "credentials",
        "github",
        "app installation",
        "app permissions",
        "repo acme/widgets",
        "protection acme/widgets",
        "decision repo",
        "rate limit",
        "time zone",
    ):
        assert f" {check} " in text, check
    assert "127.0.0.1:" in text and "L1.C3" in text
    assert lines[-1].startswith("doctor: 0 failed")


def test_doctor_offline_contacts_nobody(
    clean_sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--offline: no request reaches GitHub; exit 0."""
    write_config(tmp_path / "config", clean_sandbox)
    clean_sandbox.reset_counters()
    code, lines = _doctor(tmp_path, capsys, "--offline")
    assert code == 0, lines
    assert any(ln.startswith("skip  github") for ln in lines)
    assert clean_sandbox.counters()["total"]["requests"] == 0
    (landlock,) = [ln for ln in lines if " landlock " in ln]
    abi = abi_version()  # the kernel's own answer (CI's kernel has Landlock)
    assert landlock.startswith("ok") and f"ABI {abi}:" in landlock


def test_doctor_wrong_token_is_one_fail_line_exit_2(
    clean_sandbox: Sandbox,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A token GitHub rejects: one FAIL naming the host, exit 2."""
    write_config(tmp_path / "config", clean_sandbox)
    _edit(tmp_path, app_id=None, private_key_file=None, installation_id=None, token_env="GH_T")
    monkeypatch.setenv("GH_T", "ghp_" + "y" * 36)
    code, lines = _doctor(tmp_path, capsys)
    assert code == 2
    [fail] = _fails(lines)
    assert "rejected the credentials" in fail and "127.0.0.1:" in fail


def test_doctor_unreachable_host_names_host_and_port(
    clean_sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A closed loopback port: one FAIL naming host:port, exit 1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    write_config(tmp_path / "config", clean_sandbox)
    _edit(tmp_path, base_url=f"http://127.0.0.1:{port}/api/v3")
    code, lines = _doctor(tmp_path, capsys)
    assert code == 1
    [fail] = _fails(lines)
    assert f"127.0.0.1:{port}" in fail and "cannot reach" in fail


def test_doctor_missing_repo(
    clean_sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A supervised repo that does not exist: one FAIL naming it, exit 2 (a config mistake:
    `run` refuses to start on it too)."""
    write_config(tmp_path / "config", clean_sandbox, repo={"name": "acme/nope"})
    code, lines = _doctor(tmp_path, capsys)
    assert code == 2
    [fail] = _fails(lines)
    assert "acme/nope" in fail and "not found" in fail


def test_doctor_unprotected_branch(
    clean_sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A base branch without protection: one FAIL saying how to fix it, exit 1."""
    clean_sandbox.create_repo("acme", "gadgets", files={"README.md": "# gadgets\n"})
    write_config(tmp_path / "config", clean_sandbox, repo={"name": "acme/gadgets"})
    code, lines = _doctor(tmp_path, capsys)
    assert code == 1
    [fail] = _fails(lines)
    assert "acme/gadgets" in fail and "not protected" in fail and "capdaemon protect" in fail


def test_doctor_agent_with_write_on_the_decision_repo(
    sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The standard seed lets agent-1 write to the decision repo: one FAIL naming it, exit 1.
    The sandbox cannot list collaborators, so the agent is found as an open PR's author."""
    sandbox.set_protection(sandbox.repo, "main", PROTECTION)
    sandbox.commit_files(
        sandbox.repo, "agent-1/x", {"a.txt": "a\n"}, "a", author="agent-1", parent_branch="main"
    )
    sandbox.open_pr(sandbox.repo, "agent-1/x", "main", "A change", "body", "agent-1")
    write_config(tmp_path / "config", sandbox)
    code, lines = _doctor(tmp_path, capsys)
    assert code == 1
    [fail] = _fails(lines)
    assert "decision repo" in fail and "agent-1 (write)" in fail


def test_doctor_says_whether_the_sandbox_can_be_built() -> None:
    """The sandbox finding runs bubblewrap for real: ok here (CI installs it), and a
    missing bubblewrap is a warning naming the package and the opt-ins."""
    from capdaemon import jail
    from capdaemon.daemon.service.checkup import check_sandbox

    found = check_sandbox()
    assert found.status == "ok" and "pid/ipc/net namespaces" in found.detail, found
    saved = jail.BWRAP_PATHS
    jail.BWRAP_PATHS = ("/nonexistent/bwrap",)
    try:
        missing = check_sandbox()
    finally:
        jail.BWRAP_PATHS = saved
    assert missing.status == "warn" and "apt-get install bubblewrap" in missing.detail

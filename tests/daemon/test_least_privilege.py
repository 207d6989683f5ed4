"""A least-privilege App (`administration: read`) end to end: the sandbox lets it read branch
protection as GitHub does, `doctor` and `protect --check` print the exact settings to apply by
hand, `protect` says in one line why it changed nothing; applying those settings by hand makes
`doctor` pass. Also: `doctor`'s identity checks, its review wording, the collaborators API, and
the sandbox's default world reaching "0 failed"."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import github
import pytest
import requests
import yaml

from capdaemon.cli import main as cli
from ghsandbox import Sandbox
from ghsandbox import testing as std
from ghsandbox.seed import DEFAULT_APP_PERMISSIONS
from tests.conftest import start_sandbox

from .conftest import write_config

pytestmark = pytest.mark.slow

SETTINGS = (
    "  Branch name pattern: main",
    "  Require a pull request before merging: on",
    "    Require approvals: off; required number of approvals: 0",
    "  Require status checks to pass before merging: on",
    "    Require branches to be up to date before merging: off",
    "    Required status check: L1.C3, source: the GitHub App capdaemon (App id 1001) only",
    "  Restrict who can push to matching branches: off",
    "  Do not allow bypassing the above settings: off",
    "  Allow force pushes: off",
    "  Allow deletions: off",
)


def _read_only_app(seed: dict[str, Any]) -> dict[str, Any]:
    for app in seed["apps"]:
        if app["id"] == std.APP_ID:
            app["permissions"] = {**DEFAULT_APP_PERMISSIONS, "administration": "read"}
    for repo in seed["repos"]:  # a clean deployment: agents cannot write the decision repo
        if repo["name"] == "capdaemon-bot":
            repo["collaborators"] = {std.SECOND_OWNER: "admin"}
    return seed


@pytest.fixture
def read_only(tmp_path: Path, sandbox_keys: tuple[std.AppKeys, Path, Path]) -> Iterator[Sandbox]:
    """The standard world with the capdaemon App granted only `administration: read`."""
    sb = start_sandbox(tmp_path / "sandbox", sandbox_keys, _read_only_app)
    sb.app_key_path = sandbox_keys[1]  # type: ignore[attr-defined]
    try:
        yield sb
    finally:
        sb.stop()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    return code, out.out, out.err


def _installation_token(sb: Any) -> str:
    integration = github.GithubIntegration(
        auth=github.Auth.AppAuth(std.APP_ID, sb.app_key_path.read_text()), base_url=sb.base_url
    )
    return integration.get_access_token(std.INSTALLATION_ID).token


def test_sandbox_lets_administration_read_read_protection_not_write_it(read_only: Any) -> None:
    """As on GitHub: `administration: read` reads a branch's protection (404 "Branch not
    protected" when there is none, not 403) and gets 403 on writing it."""
    token = _installation_token(read_only)
    url = f"{read_only.base_url}/repos/{std.REPO}/branches/main/protection"
    headers = {"Authorization": f"token {token}"}
    assert requests.get(url, headers=headers, timeout=10).status_code == 404
    read_only.set_protection(std.REPO, "main", {"required_status_checks": None,
                             "enforce_admins": False, "required_pull_request_reviews": None,
                             "restrictions": None})  # fmt: skip
    assert requests.get(url, headers=headers, timeout=10).status_code == 200
    put = requests.put(url, headers=headers, json={}, timeout=10)
    assert put.status_code == 403 and "not accessible by integration" in put.json()["message"]


def test_read_only_app_gets_the_settings_by_hand_and_applying_them_makes_doctor_pass(
    read_only: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """doctor and `protect --check` print every setting to apply by hand (and the API call);
    `protect` says in one line that the App cannot write protection and prints the same; an
    admin who runs the printed API call gets a branch `protect --check` and doctor accept."""
    config = tmp_path / "config"
    write_config(config, read_only)
    state = ["--config", str(config), "--state", str(tmp_path / "bot-state")]
    code, out, _ = _run(capsys, "doctor", *state)
    [fail] = [ln for ln in out.splitlines() if ln.startswith("FAIL")]
    assert code == 1 and "protection acme/widgets" in fail and "not protected" in fail
    lines = out.splitlines()
    assert all(s in lines for s in SETTINGS), out

    code, out, _ = _run(capsys, "protect", std.REPO, "--check", *state)
    assert code == 1 and all(s in out.splitlines() for s in SETTINGS), out

    code, out, err = _run(capsys, "protect", std.REPO, *state)
    assert code == 1
    [line] = [ln for ln in err.splitlines() if "warning" not in ln]
    assert "not changed" in line and "administration permission is read" in line
    assert all(s in out.splitlines() for s in SETTINGS)
    assert read_only.backend.repo(std.REPO)["protection"] == {}  # nothing was written

    [api] = [ln for ln in out.splitlines() if "| gh api -X PUT" in ln]
    body = json.loads(shlex.split(api.split(" | ", 1)[0])[1])
    alice = read_only.tokens[std.OWNER]  # a repository admin applies it by hand
    put = requests.put(
        f"{read_only.base_url}/repos/{std.REPO}/branches/main/protection",
        headers={"Authorization": f"token {alice}"},
        json=body,
        timeout=10,
    )
    assert put.status_code == 200
    code, out, _ = _run(capsys, "protect", std.REPO, "--check", *state)
    assert (code, out.strip()) == (0, "acme/widgets:main: protected as required")
    code, out, _ = _run(capsys, "doctor", *state, "--agent", "agent-1")
    assert code == 0, out
    [ok] = [ln for ln in out.splitlines() if " protection acme/widgets " in ln]
    assert "pull requests required with 0 approving review(s)" in ok
    assert "reviews required" not in ok  # 0 approvals are not "reviews required"
    assert out.splitlines()[-1].startswith("doctor: 0 failed")


def test_doctor_checks_bot_login_and_canonical_app_against_the_app(
    read_only: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bot.login that is not `<slug>[bot]`, and canonical_app naming another App: a FAIL each,
    naming both values and the fix, exit 2 (a config mistake)."""
    config = tmp_path / "config"
    write_config(
        config,
        read_only,
        bot={"login": "capdaemn[bot]", "own_repo": std.BOT_REPO},
        canonical_app={"slug": "capdaemon", "id": 4242},
    )
    code, out, _ = _run(capsys, "doctor", "--config", str(config), "--state", str(tmp_path / "s"))
    fails = [ln for ln in out.splitlines() if ln.startswith("FAIL")]
    assert code == 2
    assert any(
        "bot login" in f and "capdaemn[bot]" in f and "set bot.login: capdaemon[bot]" in f
        for f in fails
    )
    assert any(
        "canonical app" in f and "canonical_app.id is 4242, github.app_id is 1001" in f
        for f in fails
    )


def test_collaborator_permission_can_be_set_and_removed_through_the_api(sandbox: Any) -> None:
    """PUT /repos/{o}/{r}/collaborators/{u} with `permission` (201 for a new collaborator with
    an invitation, 204 for a change) and DELETE (204), through PyGithub; a read-only App's
    installation gets 403; an unknown user 404; a bad permission 422."""
    gh = github.Github(base_url=sandbox.base_url, auth=github.Auth.Token(sandbox.tokens["alice"]))
    repo = gh.get_repo(std.BOT_REPO)
    assert repo.get_collaborator_permission("agent-1") == "write"
    repo.add_to_collaborators("agent-1", "triage")
    assert repo.get_collaborator_permission("agent-1") == "read"  # GitHub's word for triage
    invitation = repo.add_to_collaborators("mallory", "pull")
    assert invitation is not None and invitation.invitee.login == "mallory"
    assert invitation.permissions == "read"
    repo.remove_from_collaborators("agent-1")
    assert "agent-1" not in {u.login for u in repo.get_collaborators()}
    assert repo.get_collaborator_permission("agent-1") == "read"  # a public repo's reader
    url = f"{sandbox.base_url}/repos/{std.BOT_REPO}/collaborators"
    alice = {"Authorization": f"token {sandbox.tokens['alice']}"}
    bad = requests.put(f"{url}/agent-2", headers=alice, json={"permission": "root"}, timeout=10)
    assert bad.status_code == 422
    assert requests.put(f"{url}/nobody-here", headers=alice, timeout=10).status_code == 404
    agent = {"Authorization": f"token {sandbox.tokens['agent-2']}"}  # write, not admin
    assert requests.delete(f"{url}/agent-2", headers=agent, timeout=10).status_code == 403


def test_collaborators_api_needs_administration_write_for_an_app(read_only: Any) -> None:
    """An App with `administration: read` cannot change who may write (403)."""
    token = _installation_token(read_only)
    url = f"{read_only.base_url}/repos/{std.BOT_REPO}/collaborators/agent-1"
    put = requests.put(
        url, headers={"Authorization": f"token {token}"}, json={"permission": "push"}, timeout=10
    )
    assert put.status_code == 403


def test_doctor_reaches_0_failed_on_the_sandbox_default_world(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`capdaemon sandbox serve` without a seed, `init`-style config for it, `protect`, then
    `doctor`: 0 failed (its agents have only triage on the decision repo)."""
    root = tmp_path / "sb"
    proc = subprocess.Popen(
        [sys.executable, "-m", "capdaemon.cli", "sandbox", "serve", "--root", str(root)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().rstrip("\n")]
        while "stops it" not in lines[-1]:
            lines.append(proc.stdout.readline().rstrip("\n"))
        base = lines[0]
        [app] = [ln for ln in lines if ln.startswith("App capdaemon: id 1001")]
        key = app.rsplit("private key ", 1)[1]
        config = tmp_path / "config"
        config.mkdir()
        data = {
            "github": {"base_url": base, "app_id": 1001, "private_key_file": key},
            "bot": {"login": "capdaemon[bot]", "own_repo": std.BOT_REPO},
            "canonical_app": {"slug": "capdaemon", "id": 1001},
            "owners": [std.OWNER, std.SECOND_OWNER],
            "repos": [{"name": std.REPO, "base": "main"}],
        }
        (config / "capdaemon.yml").write_text(yaml.safe_dump(data), encoding="utf-8")
        args = ["--config", str(config), "--state", str(tmp_path / "bot-state")]
        code, out, _ = _run(capsys, "protect", std.REPO, *args)
        assert code == 0, out
        code, out, _ = _run(capsys, "doctor", *args, "--agent", "agent-1", "--agent", "agent-2")
        assert code == 0, out
        assert re.match(r"doctor: 0 failed", out.splitlines()[-1]), out
        assert "only owners and the bot can write" in out
    finally:
        proc.terminate()
        proc.wait(timeout=15)

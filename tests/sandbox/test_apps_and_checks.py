"""GitHub App auth (JWT → installation token) and check runs, as capdaemon publishes L1.C3."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import github
import jwt
import pytest
import requests

from .helpers import app_gh, gh, integration


def _pr(sb: Any) -> int:
    sb.commit_files(
        "acme/widgets",
        "feat",
        {"src/new.py": "x = 1\n"},
        "add new",
        author="agent-1",
        parent_branch="main",
    )
    return sb.open_pr("acme/widgets", "feat", "main", "Add new", "", "agent-1")


def test_jwt_to_installation_token_to_check_run(sandbox: Any) -> None:
    """PyGithub's App flow yields a 1-hour ghs_ token; its check runs carry the App."""
    gi = integration(sandbox)
    app = gi.get_app()
    assert (app.id, app.slug, app.owner.login) == (1001, "capdaemon", "acme")
    auth = gi.get_access_token(sandbox.installation_id)
    assert auth.token.startswith("ghs_")
    assert 3500 < (auth.expires_at - datetime.now(UTC)).total_seconds() <= 3600
    bot = app_gh(sandbox)
    number = _pr(sandbox)
    repo = bot.get_repo("acme/widgets")
    head = repo.get_pull(number).head.sha
    run = repo.create_check_run(
        "L1.C3",
        head_sha=head,
        status="completed",
        conclusion="failure",
        output={"title": "D", "summary": "owner approval required"},
    )
    assert run.app.id == 1001 and run.app.slug == "capdaemon"
    assert (
        run.status == "completed" and run.conclusion == "failure" and run.completed_at is not None
    )
    listed = repo.get_commit(head).get_check_runs()
    assert [(r.name, r.app.slug, r.output.summary) for r in listed] == [
        ("L1.C3", "capdaemon", "owner approval required")
    ]
    comment = repo.get_issue(number).create_comment("classified D")
    assert comment.user.login == "capdaemon[bot]" and comment.user.type == "Bot"


def test_user_token_cannot_create_a_check_run(sandbox: Any) -> None:
    """A personal token gets GitHub's 403 'You must authenticate via a GitHub App.'"""
    number = _pr(sandbox)
    repo = gh(sandbox, "alice").get_repo("acme/widgets")
    head = repo.get_pull(number).head.sha
    with pytest.raises(github.GithubException) as exc:
        repo.create_check_run("L1.C3", head_sha=head, status="completed", conclusion="success")
    assert exc.value.status == 403
    assert exc.value.data["message"] == "You must authenticate via a GitHub App."


def test_an_app_cannot_edit_another_apps_check_run(sandbox: Any) -> None:
    """evil-app cannot PATCH capdaemon's check run (403), and the run stays as it was."""
    number = _pr(sandbox)
    head = sandbox.backend.issue("acme/widgets", number)["pull"]["head_sha"]
    run = (
        app_gh(sandbox)
        .get_repo("acme/widgets")
        .create_check_run("L1.C3", head_sha=head, conclusion="failure")
    )
    evil_repo = app_gh(sandbox, evil=True).get_repo("acme/widgets")
    evil_run = evil_repo.get_check_run(run.id)
    with pytest.raises(github.GithubException) as exc:
        evil_run.edit(conclusion="success")
    assert exc.value.status == 403
    assert app_gh(sandbox).get_repo("acme/widgets").get_check_run(run.id).conclusion == "failure"


def test_installation_only_reaches_its_repositories(sandbox: Any) -> None:
    """evil-app is installed on acme/widgets only: acme/capdaemon-bot is a 404 for its token."""
    with pytest.raises(github.UnknownObjectException):
        app_gh(sandbox, evil=True).get_repo("acme/capdaemon-bot").get_branch("main")


def test_bad_and_missing_credentials(sandbox: Any) -> None:
    """Unknown tokens get 401 Bad credentials with a documentation_url; anonymous reads work."""
    r = requests.get(f"{sandbox.base_url}/user", headers={"Authorization": "token nope"}, timeout=5)
    assert r.status_code == 401
    assert r.json()["message"] == "Bad credentials"
    assert r.json()["documentation_url"].startswith("https://docs.github.com/")
    anon = requests.get(f"{sandbox.base_url}/repos/acme/widgets", timeout=5)
    assert anon.status_code == 200 and anon.headers["X-RateLimit-Limit"] == "60"
    assert requests.get(f"{sandbox.base_url}/user", timeout=5).status_code == 401


def test_jwt_signed_with_the_wrong_key_is_refused(sandbox: Any) -> None:
    """A JWT claiming App 1001 but signed with evil-app's key is a 401, and expired JWTs too."""
    now = int(time.time())
    forged = jwt.encode(
        {"iat": now - 30, "exp": now + 300, "iss": "1001"},
        sandbox.evil_private_key,
        algorithm="RS256",
    )
    r = requests.get(
        f"{sandbox.base_url}/app", headers={"Authorization": f"Bearer {forged}"}, timeout=5
    )
    assert r.status_code == 401
    expired = jwt.encode(
        {"iat": now - 1200, "exp": now - 600, "iss": "1001"},
        sandbox.app_private_key,
        algorithm="RS256",
    )
    r = requests.get(
        f"{sandbox.base_url}/app", headers={"Authorization": f"Bearer {expired}"}, timeout=5
    )
    assert r.status_code == 401
    good = jwt.encode(
        {"iat": now - 30, "exp": now + 300, "iss": "1001"},
        sandbox.app_private_key,
        algorithm="RS256",
    )
    r = requests.get(
        f"{sandbox.base_url}/app", headers={"Authorization": f"Bearer {good}"}, timeout=5
    )
    assert r.status_code == 200 and r.json()["slug"] == "capdaemon"


def test_repo_installation_and_installation_list(sandbox: Any) -> None:
    """GithubIntegration finds the installation for a repo and lists the App's installations."""
    gi = integration(sandbox)
    inst = gi.get_repo_installation("acme", "widgets")
    assert (inst.id, inst.app_id, inst.target_type) == (5001, 1001, "Organization")
    assert [i.id for i in integration(sandbox, evil=True).get_installations()] == [6002]


def test_check_run_list_filters_latest_per_app_and_name(sandbox: Any) -> None:
    """Re-running a check keeps only the newest by default; filter=all shows both runs."""
    number = _pr(sandbox)
    head = sandbox.backend.issue("acme/widgets", number)["pull"]["head_sha"]
    repo = app_gh(sandbox).get_repo("acme/widgets")
    repo.create_check_run("L1.C3", head_sha=head, conclusion="failure")
    repo.create_check_run("L1.C3", head_sha=head, conclusion="success")
    commit = repo.get_commit(head)
    assert [r.conclusion for r in commit.get_check_runs()] == ["success"]
    assert [r.conclusion for r in commit.get_check_runs(filter="all")] == ["success", "failure"]
    assert commit.get_check_runs(check_name="other").totalCount == 0

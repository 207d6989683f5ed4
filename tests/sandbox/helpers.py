"""Small helpers for the sandbox tests: PyGithub clients and git in a work tree."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import github
from github import Auth

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Agent One",
    "GIT_AUTHOR_EMAIL": "agent-1@agents.example.com",
    "GIT_COMMITTER_NAME": "Agent One",
    "GIT_COMMITTER_EMAIL": "agent-1@agents.example.com",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}


def gh(sb: Any, login: str, **kw: Any) -> github.Github:
    """A PyGithub client acting as a standard user (no retries unless asked)."""
    kw.setdefault("retry", None)
    kw.setdefault("seconds_between_requests", None)
    kw.setdefault("seconds_between_writes", None)
    return github.Github(base_url=sb.base_url, auth=Auth.Token(sb.tokens[login]), **kw)


def settled_pull(repo: Any, number: int, reads: int = 5) -> Any:
    """The PR once GitHub has computed its mergeability (re-read while ``mergeable`` is null)."""
    for _ in range(reads):
        pr = repo.get_pull(number)
        if pr.mergeable is not None:
            return pr
    raise AssertionError(f"PR #{number}: mergeable still null after {reads} reads")


def integration(sb: Any, evil: bool = False) -> github.GithubIntegration:
    """A PyGithub GithubIntegration for the capdaemon App (or evil-app)."""
    app_id = sb.evil_app_id if evil else sb.app_id
    key = sb.evil_private_key if evil else sb.app_private_key
    return github.GithubIntegration(
        base_url=sb.base_url,
        auth=Auth.AppAuth(app_id, key),
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )


def app_gh(sb: Any, evil: bool = False) -> github.Github:
    """A PyGithub client acting as the App installation (JWT → installation token)."""
    gi = integration(sb, evil)
    inst = sb.evil_installation_id if evil else sb.installation_id
    return gi.get_github_for_installation(inst)


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run git in a work tree with a fixed identity; returns the completed process."""
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc

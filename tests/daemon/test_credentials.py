"""Where the daemon finds GitHub credentials: the App key (systemd credentials first) or a token."""

from __future__ import annotations

from pathlib import Path

import pytest

from capdaemon.config import GitHubConfig
from capdaemon.daemon.service.runner import CredentialsError, github_credentials, is_loopback


def test_relative_app_key_is_found_in_the_credentials_directory(tmp_path: Path) -> None:
    """`private_key_file: github-app.pem` resolves in $CREDENTIALS_DIRECTORY (LoadCredential=)."""
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "github-app.pem").write_bytes(b"PEM")
    gh = GitHubConfig(app_id=1, private_key_file="github-app.pem")
    assert github_credentials(gh, {"CREDENTIALS_DIRECTORY": str(creds)}) == (None, b"PEM")


def test_relative_app_key_falls_back_to_the_config_directory(tmp_path: Path) -> None:
    """Without systemd credentials, a relative key path is read next to the config."""
    (tmp_path / "app.pem").write_bytes(b"KEY")
    gh = GitHubConfig(app_id=1, private_key_file="app.pem")
    assert github_credentials(gh, {}, tmp_path) == (None, b"KEY")


def test_missing_key_or_token_is_a_clear_error_without_secrets(tmp_path: Path) -> None:
    """A missing key file names the file; a missing token names the variable; no value is shown."""
    with pytest.raises(CredentialsError, match=r"app\.pem"):
        github_credentials(GitHubConfig(app_id=1, private_key_file="app.pem"), {}, tmp_path)
    with pytest.raises(CredentialsError, match="MY_TOKEN"):
        github_credentials(GitHubConfig(token_env="MY_TOKEN"), {})
    token = github_credentials(GitHubConfig(token_env="MY_TOKEN"), {"MY_TOKEN": "t0k"})
    assert token == ("t0k", None)


def test_loopback_detection_for_write_pacing() -> None:
    """Only a GitHub on this machine (the sandbox) skips the one-write-a-second pacing."""
    assert is_loopback("http://127.0.0.1:8080") and is_loopback("http://localhost:1/api/v3")
    assert not is_loopback("https://api.github.com") and not is_loopback("https://ghe.example.com")

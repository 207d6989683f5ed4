"""Shared fixtures: the ``sandbox`` (a GitHub-compatible server per test)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ghsandbox import Sandbox
from ghsandbox import testing as std


@pytest.fixture(scope="session")
def sandbox_keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[std.AppKeys, Path, Path]:
    """RSA keys of the two standard Apps, made once per session; private keys in files."""
    keys = std.generate_keys()
    app_key, evil_key = std.write_keys(keys, tmp_path_factory.mktemp("app-keys"))
    return keys, app_key, evil_key


def start_sandbox(
    state: Path,
    sandbox_keys: tuple[std.AppKeys, Path, Path],
    extend: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Sandbox:
    """Start a sandbox with the standard seed (`extend`ed) in `state`, with the attributes
    `sandbox` lists."""
    keys, app_key, evil_key = sandbox_keys
    seed = std.standard_seed(keys)
    if extend is not None:
        seed = extend(seed)
    sb = Sandbox.start(state, seed)
    sb.seed = seed  # type: ignore[attr-defined]
    sb.state_dir = state  # type: ignore[attr-defined]
    sb.tokens = {u["login"]: u["token"] for u in seed["users"]}  # type: ignore[attr-defined]
    sb.owner, sb.second_owner, sb.outsider = std.OWNER, std.SECOND_OWNER, std.OUTSIDER  # type: ignore[attr-defined]
    sb.agents = std.AGENTS  # type: ignore[attr-defined]
    sb.org, sb.repo, sb.bot_repo = std.ORG, std.REPO, std.BOT_REPO  # type: ignore[attr-defined]
    sb.app_id, sb.app_slug, sb.installation_id = std.APP_ID, std.APP_SLUG, std.INSTALLATION_ID  # type: ignore[attr-defined]
    sb.app_key_path, sb.app_private_key = app_key, keys.private_pem  # type: ignore[attr-defined]
    sb.evil_app_id, sb.evil_installation_id = std.EVIL_APP_ID, std.EVIL_INSTALLATION_ID  # type: ignore[attr-defined]
    sb.evil_key_path, sb.evil_private_key = evil_key, keys.evil_private_pem  # type: ignore[attr-defined]
    return sb


@pytest.fixture
def sandbox(tmp_path: Path, sandbox_keys: tuple[std.AppKeys, Path, Path]) -> Iterator[Sandbox]:
    """A running sandbox with the standard seed (ghsandbox/testing.py).

    Extra attributes: ``tokens`` (login → token), ``owner``, ``second_owner``, ``agents``,
    ``outsider``, ``org``, ``repo`` ("acme/widgets"), ``bot_repo`` ("acme/capdaemon-bot"),
    ``app_id`` (1001), ``app_slug``, ``app_key_path``, ``app_private_key``, ``installation_id``
    (5001), ``evil_app_id`` (2002), ``evil_key_path``, ``evil_private_key``,
    ``evil_installation_id`` (6002), ``seed``, ``state_dir``.
    """
    sb = start_sandbox(tmp_path / "sandbox", sandbox_keys)
    try:
        yield sb
    finally:
        sb.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where the browser tests left their screenshots (CI keeps the folder)."""
    from tests.dashboard.browser import ARTIFACTS

    shots = sorted(ARTIFACTS.glob("*.png")) if ARTIFACTS.is_dir() else []
    if shots:
        terminalreporter.write_line(f"dashboard screenshots ({len(shots)}): {ARTIFACTS}/")

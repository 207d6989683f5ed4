"""Forge test helpers: Forges on the shared sandbox, a recording sleeper, PR builders."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from capdaemon.config import GitHubConfig
from capdaemon.forge.client import Forge
from ghsandbox import Sandbox


class Sleeps(list[float]):
    """A fake sleeper that records the waits instead of sleeping (an injected clock, not a mock)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    """The recording sleeper passed to every Forge in a test."""
    return Sleeps()


@pytest.fixture
def make_forge(sandbox: Sandbox, sleeps: Sleeps) -> Iterator[Callable[..., Forge]]:
    """Build Forges: `make_forge(token=...)`, `make_forge(app=True)`, `make_forge(app="evil")`."""
    made: list[Forge] = []

    def build(
        *,
        token: str | None = None,
        app: bool | str = False,
        base_url: str | None = None,
        wait: float = 120.0,
        **kw: Any,
    ) -> Forge:
        url = base_url or sandbox.base_url
        if app:
            evil = app == "evil"
            cfg = GitHubConfig(
                base_url=url,
                app_id=sandbox.evil_app_id if evil else sandbox.app_id,
                private_key_file=str(sandbox.evil_key_path if evil else sandbox.app_key_path),
                installation_id=sandbox.evil_installation_id if evil else sandbox.installation_id,
                per_tick_wait_seconds=wait,
            )
            f = Forge.from_config(cfg, sleep=sleeps, write_interval=0, **kw)
        else:
            cfg = GitHubConfig(base_url=url, per_tick_wait_seconds=wait)
            f = Forge.from_config(
                cfg,
                token=token or sandbox.tokens[sandbox.owner],
                sleep=sleeps,
                write_interval=0,
                **kw,
            )
        made.append(f)
        return f

    yield build
    for f in made:
        f.close()


@pytest.fixture
def forge(make_forge: Callable[..., Forge]) -> Forge:
    """capdaemon acting as its GitHub App installation."""
    return make_forge(app=True)


@pytest.fixture
def open_pr(sandbox: Sandbox) -> Callable[..., int]:
    """`open_pr(files, branch=..., message=...)`: commit on a new branch, open a PR; its number."""

    def make(
        files: dict[str, Any],
        *,
        branch: str = "feature",
        message: str = "Change",
        title: str = "A change",
        user: str = "agent-1",
    ) -> int:
        sandbox.commit_files(
            sandbox.repo, branch, files, message, author=user, parent_branch="main"
        )
        return sandbox.open_pr(sandbox.repo, branch, "main", title, "body", user)

    return make


@pytest.fixture
def writes(sandbox: Sandbox) -> Callable[[], dict[str, int]]:
    """`writes()`: non-GET requests per endpoint since the counter reset (token minting and
    GraphQL queries aside: capdaemon sends no GraphQL mutation)."""

    def count() -> dict[str, int]:
        ends = sandbox.counters()["endpoints"]
        return {
            k: v["requests"]
            for k, v in ends.items()
            if not k.startswith(("GET ", "GIT ", "POST /app/", "POST /graphql"))
        }

    return count

"""Connecting to GitHub from config: the auth (App installation or token) and our Transport."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from github import Auth, Github, GithubIntegration

from capdaemon.config import GitHubConfig
from capdaemon.forge.appclock import AppClock, SkewedAppAuth
from capdaemon.forge.auth import RoutedAuth
from capdaemon.forge.convert import USER_AGENT
from capdaemon.forge.errors import ForgeError
from capdaemon.forge.http import mount
from capdaemon.forge.installations import Installations
from capdaemon.forge.ratelimit import WaitBudget
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.transport import Clock, Sleeper, Transport, utc_now


@dataclass(frozen=True)
class Connection:
    """A PyGithub client on our Transport, with what it authenticates as."""

    client: Github
    transport: Transport
    scrubber: Scrubber
    clock: Clock
    app_id: int | None = None
    integration: GithubIntegration | None = None
    installations: Installations | None = None


def connect(
    gh: GitHubConfig,
    *,
    token: str | None,
    key_pem: bytes | None,
    clock: Clock | None,
    sleep: Sleeper | None,
    write_interval: float,
    attempts: int,
    timeout: int,
) -> Connection:
    """As the App's installations when app_id and a key are given, else with a token."""
    clock = clock if clock is not None else utc_now
    scrubber = Scrubber()
    transport = Transport(
        budget=WaitBudget(gh.per_tick_wait_seconds),
        sleep=sleep if sleep is not None else _real_sleep,
        clock=clock,
        scrubber=scrubber,
        attempts=attempts,
        write_interval=write_interval,
    )
    options = _client_options(gh, timeout)
    if gh.app_id is not None and (key_pem is not None or gh.private_key_file):
        return _as_app(gh, gh.app_id, key_pem, options, transport, scrubber, clock)
    if token is None:
        token = os.environ.get(gh.token_env) or None
    if not token:
        raise ForgeError(
            f"no GitHub credentials: set github.app_id + private_key_file, "
            f"or the {gh.token_env} variable"
        )
    scrubber.add(token)
    client = Github(auth=Auth.Token(token), **options)
    mount(client.requester, transport)
    return Connection(client, transport, scrubber, clock)


def _as_app(
    gh: GitHubConfig,
    app_id: int,
    key_pem: bytes | None,
    options: dict[str, Any],
    transport: Transport,
    scrubber: Scrubber,
    clock: Clock,
) -> Connection:
    """Acting as the App's installations (its key read from the file unless given): the
    Transport's router gives each request the token of the installation on its account."""
    if key_pem is None:
        assert gh.private_key_file is not None
        key_pem = Path(gh.private_key_file).read_bytes()
    key_text = key_pem.decode("utf-8") if isinstance(key_pem, bytes) else str(key_pem)
    scrubber.add(key_text)
    app_clock = AppClock(utc_now)  # JWTs: GitHub judges them on its real clock
    app_auth = SkewedAppAuth(app_id, key_text, app_clock)
    integration = GithubIntegration(auth=app_auth, **options)
    mount(integration.requester, transport)
    transport.jwt_minter = app_auth
    installations = Installations(
        integration,
        clock=app_clock.shifted(clock),  # token expiry is GitHub's time
        scrubber=scrubber,
        api_url=gh.base_url,
        pinned=gh.installation_id,
    )
    transport.router = installations
    client = Github(auth=RoutedAuth(), **options)
    mount(client.requester, transport)
    return Connection(client, transport, scrubber, clock, app_id, integration, installations)


def _real_sleep(seconds: float) -> None:
    time.sleep(seconds)  # looked up at each call, so a patched time.sleep is honoured


def _client_options(gh: GitHubConfig, timeout: int) -> dict[str, Any]:
    """PyGithub client options: our Transport does all retrying and pacing."""
    return {
        "base_url": gh.base_url.rstrip("/"),
        "timeout": timeout,
        "user_agent": USER_AGENT,
        "per_page": 100,
        "retry": None,  # retries live in our Transport only
        "seconds_between_requests": None,
        "seconds_between_writes": None,
    }

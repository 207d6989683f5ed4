"""What the channels take from the config at run time: the one-tap lifetime, their secrets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from capdaemon.filenames import key_file_path

if TYPE_CHECKING:
    from capdaemon.config import Config


def one_tap_ttl(config: Config) -> timedelta:
    """A one-tap request's lifetime: Telegram's TTL where Telegram is configured, else the
    GitHub one-tap issue's (tiers.one_tap_ttl_hours)."""
    tg = config.channels.telegram
    if tg is not None:
        return timedelta(minutes=tg.ttl_minutes)
    return timedelta(hours=config.tiers.one_tap_ttl_hours)


def read_secret(
    file_name: str | None,
    env_name: str,
    file_key: str,
    what: str,
    env: Mapping[str, str] | None = None,
    config_dir: Path | None = None,
) -> tuple[bytes, str]:
    """(secret, where it came from): the file (looked up in $CREDENTIALS_DIRECTORY first, then
    the config dir) or else the environment variable. ValueError (one line naming the config key
    or variable, never the secret) when it is absent or unreadable."""
    env = os.environ if env is None else env
    if file_name:
        path = key_file_path(file_name, env)
        if not path.is_absolute() and config_dir is not None and not path.exists():
            path = config_dir / path
        try:
            secret = path.read_bytes().strip()
        except OSError as exc:
            raise ValueError(f"{file_key}: cannot read {path}: {exc.strerror}") from exc
        if not secret:
            raise ValueError(f"{file_key}: {path} is empty")
        return secret, f"{file_key} {path}"
    secret = env.get(env_name, "").strip().encode("utf-8")
    if not secret:
        raise ValueError(
            f"telegram: no {what}: set {file_key} in capdaemon.yml or the environment "
            f"variable {env_name}"
        )
    return secret, f"environment variable {env_name}"

"""Bad safety config is refused at start, naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from capdaemon.config import ConfigError, load_config


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("tiers:\n  extra_protected_globs: ['[abc']\n", "tiers.extra_protected_globs[0]"),
        ("breaker:\n  threshold: 0\n", "breaker.threshold"),
        ("breaker:\n  threshold: lots\n", "breaker.threshold"),
        ("schedule:\n  timezone: Mars/Olympus\n", "schedule.timezone"),
        ("schedule:\n  digest_time: '9am'\n", "schedule.digest_time"),
        ("post_merge:\n  revert_daily_cap: -1\n", "post_merge.revert_daily_cap"),
    ],
)
def test_malformed_safety_config_names_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    """A malformed tier glob, breaker threshold, time zone … is a ConfigError with file and key."""
    (tmp_path / "capdaemon.yml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert "capdaemon.yml" in message and key in message, message

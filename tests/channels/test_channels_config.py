"""The `telegram:` and `notifications:` config sections: defaults off, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from capdaemon.config import ConfigError, load_config

BASE = {"owners": ["alice", "bob"]}
TG = {"chat_id": -100, "users": {"alice": 11}}


def _load(tmp_path: Path, **extra: object):
    (tmp_path / "capdaemon.yml").write_text(yaml.safe_dump({**BASE, **extra}))
    return load_config(tmp_path)


def test_both_are_off_by_default(tmp_path: Path) -> None:
    cfg = _load(tmp_path)
    assert cfg.channels.telegram is None and cfg.channels.notifications.urls == ()


def test_telegram_defaults(tmp_path: Path) -> None:
    tg = _load(tmp_path, telegram=TG).channels.telegram
    assert tg is not None
    assert (tg.ttl_minutes, tg.poll_seconds, tg.api_url) == (5.0, 5, "https://api.telegram.org")
    assert tg.login_of(11) == "alice" and tg.login_of(12) is None


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"users": {"alice": 11}}, "'telegram.chat_id': expected the numeric Telegram chat id"),
        ({"chat_id": -1, "users": {}}, "'telegram.users': expected a non-empty mapping"),
        ({"chat_id": -1, "users": {"mallory": 5}}, "'mallory' is not one of the owners"),
        ({"chat_id": -1, "users": {"alice": "11"}}, "alice: expected a positive Telegram user id"),
        ({**TG, "users": {"alice": 11, "bob": 11}}, "Telegram user id 11 is given twice"),
        ({**TG, "ttl_minutes": 0}, "'telegram.ttl_minutes': must be greater than 0"),
        ({**TG, "poll_seconds": 60}, "'telegram.poll_seconds': must be at most 50"),
        ({**TG, "api_url": "ftp://x"}, "'telegram.api_url': 'ftp://x' is not an http(s) URL"),
        ({**TG, "token": "123:abc"}, "'telegram.token': unknown key"),
    ],
)
def test_bad_telegram_sections_name_the_key(tmp_path: Path, section, message) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, telegram=section)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_notification_urls_are_checked_by_apprise(tmp_path: Path) -> None:
    ok = _load(tmp_path, notifications={"urls": ["json://127.0.0.1:8/x", "ntfy://topic"]})
    assert len(ok.channels.notifications.urls) == 2
    with pytest.raises(ConfigError, match=r"notifications\.urls\[1\].*scheme 'bogus'"):
        _load(tmp_path, notifications={"urls": ["json://127.0.0.1:8/x", "bogus://tok@h"]})

"""The reload rules on a live Ticker (in process): what counts as a change, what waits for a
restart, what is refused; and GitHub's Date header read by a property test."""

from __future__ import annotations

import argparse
import shutil
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.commands._common import CLIError, load_config_and_rules
from capdaemon.config import Config
from capdaemon.daemon.service.preflight import repo_problems
from capdaemon.daemon.service.reload import ConfigRefused, Reloader
from capdaemon.forge.appclock import date_offset, is_skew_refusal

from .conftest import Harness


def _reloader(daemon: Harness) -> Reloader:
    """The config watcher `capdaemon run` builds, given to a fresh Ticker."""

    def load(directory: Path) -> tuple[Config, tuple[Any, ...]]:
        try:
            return load_config_and_rules(argparse.Namespace(config=str(directory)), required=True)
        except CLIError as exc:
            raise ConfigRefused(str(exc)) from None

    reloader = Reloader(daemon.config_dir, load=load, check_repos=repo_problems)
    daemon.stop()
    daemon.start(reloader=reloader)
    return reloader


def _edit(daemon: Harness, change: Any) -> None:
    path = daemon.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False) + "# edited\n", encoding="utf-8")


def test_a_comment_is_not_a_config_change(daemon: Harness) -> None:
    daemon.configure()
    _reloader(daemon)
    before = daemon.ticker.config_hash if daemon.ticker else ""
    with (daemon.config_dir / "capdaemon.yml").open("a", encoding="utf-8") as f:
        f.write("# a note for the next operator\n")
    report = daemon.tick()
    assert report.config_errors == [] and report.config_hash == before
    assert daemon.actions("config.changed") == []


def test_github_changes_wait_for_a_restart_the_rest_applies(daemon: Harness) -> None:
    """A new `github:` (here a base URL nobody answers at) is held back with a warning; the
    owners edited in the same save apply at the next tick, audited with both hashes."""
    daemon.configure()
    _reloader(daemon)
    ticker = daemon.ticker
    assert ticker is not None
    running_github, old_hash = ticker.config.github, ticker.config_hash

    def change(d: dict[str, Any]) -> None:
        d["github"]["base_url"] = "http://127.0.0.1:9"
        d["owners"] = [*d["owners"], "carol"]

    _edit(daemon, change)
    report = daemon.tick()
    assert report.config_errors == []
    assert ticker.config.github == running_github
    assert "carol" in ticker.config.owners
    [change_rec] = daemon.actions("config.changed")
    assert change_rec["old_config_hash"] == old_hash
    assert change_rec["new_config_hash"] == ticker.config_hash == report.config_hash
    assert change_rec["restart_needed"] == ["github"]


def test_a_removed_config_directory_is_refused_never_the_defaults(daemon: Harness) -> None:
    """Deleting the directory under a running daemon must not switch it to built-in defaults
    (no repos, no owners): it is refused and the running config stays."""
    daemon.configure()
    _reloader(daemon)
    ticker = daemon.ticker
    assert ticker is not None
    config = ticker.config
    shutil.rmtree(daemon.config_dir)
    report = daemon.tick()
    assert ticker.config is config
    assert report.config_errors and "is missing" in report.config_errors[0]


def test_a_new_repo_github_does_not_know_is_refused(daemon: Harness) -> None:
    daemon.configure()
    _reloader(daemon)
    ticker = daemon.ticker
    assert ticker is not None
    _edit(daemon, lambda d: d["repos"].append({"name": "acme/widgetz", "base": "main"}))
    report = daemon.tick()
    assert [rc.name for rc in ticker.config.repos] == [daemon.sb.repo]
    assert "repos[1] acme/widgetz" in report.config_errors[0]
    assert daemon.actions("config.changed") == []


@given(st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1)))
def test_date_offset_reads_what_format_datetime_writes(when: datetime) -> None:
    """Any HTTP Date (RFC 9110 IMF-fixdate) gives its offset to the second."""
    when = when.replace(tzinfo=UTC, microsecond=0)
    local = datetime(2040, 6, 1, tzinfo=UTC)
    assert date_offset(format_datetime(when, usegmt=True), local) == (when - local).total_seconds()


@given(st.text(max_size=60))
def test_date_offset_never_raises_on_garbage(text: str) -> None:
    got = date_offset(text, datetime.now(UTC))
    assert got is None or abs(got) < timedelta(days=400000).total_seconds()


def test_only_githubs_time_refusals_count_as_skew() -> None:
    assert is_skew_refusal("'Expiration time' claim ('exp') is too far in the future")
    assert not is_skew_refusal("A JSON web token could not be decoded")
    assert not is_skew_refusal("Bad credentials")

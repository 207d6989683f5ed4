"""One command line fits every command: each command and subcommand that reads the state
takes --config DIR and --state DIR (those that only read the state check --config exists)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from capdaemon.cli import COMMANDS, main

# commands that make their own world instead of using a deployment's config and state
OWN_WORLD = {"sandbox", "demo", "init"}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def _parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command's parser, its SUBCOMMANDS' and its argparse subparsers'."""
    for name, (module_name, _) in COMMANDS.items():
        module = importlib.import_module(module_name)
        found = [(name, module)] + [
            (f"{name} {word}", importlib.import_module(sub))
            for word, (sub, _) in getattr(module, "SUBCOMMANDS", {}).items()
        ]
        for full, mod in found:
            parser = argparse.ArgumentParser(prog=f"capdaemon {full}")
            mod.configure(parser)
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if not subs:
                yield full, parser
            for action in subs:
                for word, sub_parser in action.choices.items():
                    yield f"{full} {word}", sub_parser


def test_every_command_takes_config_and_state() -> None:
    """The loop covers every command; each outside OWN_WORLD takes --config and --state."""
    seen = dict(_parsers())
    assert {n.split()[0] for n in seen} == set(COMMANDS)
    missing = [
        n
        for n, p in seen.items()
        if n.split()[0] not in OWN_WORLD and not {"--config", "--state"} <= _options(p)
    ]
    assert missing == []


@pytest.mark.parametrize(
    "argv",
    [
        ["why", "acme/widgets#1", "WHERE"],
        ["dispatch", "no-such-task.yml", "WHERE"],
        ["scope-guard", "--task", "t-1", "README.md", "WHERE"],
        ["scope-guard", "run", "--task", "t-1", "WHERE", "--", "true"],
    ],
    ids=["why", "dispatch", "scope-guard", "scope-guard-run"],
)
def test_a_missing_config_directory_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """--config accepted; a directory that does not exist: exit 2 naming it."""
    (tmp_path / "state").mkdir()
    gone = tmp_path / "no-config"
    where = ["--config", str(gone), "--state", str(tmp_path / "state")]
    i = argv.index("WHERE")
    code = main([*argv[:i], *where, *argv[i + 1 :]])
    assert code == 2
    assert f"config directory {gone} does not exist" in capsys.readouterr().err


def test_why_with_the_common_command_line_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`why` with --config and --state: it reads the state (nothing known: exit 1)."""
    (tmp_path / "state").mkdir()
    (tmp_path / "config").mkdir()
    where = ["--config", str(tmp_path / "config"), "--state", str(tmp_path / "state")]
    assert main(["why", "acme/widgets#1", *where]) == 1
    assert "nothing is known of acme/widgets#1" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "tick"])
def test_an_unknown_log_level_is_a_usage_error_naming_the_levels(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--log-level loud`: exit 2 before anything starts, the valid levels named."""
    assert main([command, "--log-level", "loud"]) == 2
    err = capsys.readouterr().err
    assert "argument --log-level: invalid choice: 'loud'" in err
    assert all(level in err for level in ("debug", "info", "warning", "error", "critical"))
    assert "ValueError" not in err


def test_a_log_level_in_capitals_is_accepted() -> None:
    """`--log-level WARNING` parses as warning (it then fails on the missing config: 2)."""
    module = importlib.import_module(COMMANDS["tick"][0])
    parser = argparse.ArgumentParser()
    module.configure(parser)
    assert parser.parse_args(["--log-level", "WARNING"]).log_level == "warning"

"""Command allow-list: program + leading arguments, compound lines per part, fail closed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from capdaemon.capability.cmdline import CommandParseError, parse_line
from capdaemon.capability.model import Capability, CapabilitySnapshot
from capdaemon.capability.scope import check_command

T0 = datetime(2026, 5, 2, 9, 0, tzinfo=UTC)


def snap(commands: tuple[str, ...] = ("pytest", "python3 -m py_compile", "git status")):
    cap = Capability(task_id="t", paths=("src/**",), commands=commands)
    return CapabilitySnapshot(cap, T0, T0 + timedelta(hours=1), "0" * 64)


ALLOWED = [
    "pytest",
    "pytest -q tests/",
    "  pytest   -q  ",
    "python3 -m py_compile a.py b.py",
    "pytest -q && python3 -m py_compile a.py",
    "pytest; pytest -x",
    "pytest | pytest",
    "pytest 2>&1",
    "pytest >&2",
    "pytest > /dev/null 2>&1",
    "CI=1 pytest",
    "FOO=bar BAZ=1 pytest -q",
    "pytest 'a;b'",  # quoted operator inside a word
    'py"test" -q',  # the shell also reads this as pytest
    "pytest -k 'a and not b'",
    "git status --short",
    "pytest -q # comment",
]

REFUSED = [
    "pytestx",
    "pytest-x",
    "/usr/bin/pytest",
    "./pytest",
    "python3 -c 'import os'",
    "python3 -m pip install x",
    "python3",
    "python3 -m",
    "git",
    "git statusx",
    "rm -rf /",
    "pytest; rm -rf /",
    "pytest && rm x",
    "pytest || rm x",
    "pytest | sh",
    "pytest & rm x",
    "pytest\nrm x",
    "pytest |& tee",
    "(pytest; rm x)",
    "{ pytest; rm x; }",
    "FOO=1 rm x",  # the program after an assignment is what is checked
    "PATH=/tmp/evil pytest",  # assignments that change which program runs
    "LD_PRELOAD=/tmp/x.so pytest",
    "PYTHONPATH=. python3 -m py_compile a.py",
    "GIT_EXTERNAL_DIFF=/tmp/x git status",
    "env pytest",
    "sudo pytest",
    "exec pytest",
    "pytest a#b; rm x",  # `#` inside a word does not start a comment
    "pytest ';' rm",  # quoted operators count as operators: stricter, never looser
]

UNPARSEABLE = [
    "pytest $(rm -rf /)",
    "pytest `rm -rf /`",
    "echo '$(quoted)'",
    "pytest 'unterminated",
    "cat <<EOF",
    "cat <<< x",
    "diff <(a) <(b)",
    "pytest >",
    "",
    "   ",
    "pytest \x00",
]


@pytest.mark.parametrize("line", ALLOWED)
def test_allowed_lines(line: str) -> None:
    """Lines whose every part starts with an allowed program and arguments pass."""
    vs, writes = check_command(snap(), line, T0)
    assert vs == [], [v.line() for v in vs]
    assert writes == []


@pytest.mark.parametrize("line", REFUSED)
def test_refused_lines(line: str) -> None:
    """Anything that is not an allowed program with allowed leading arguments is refused."""
    vs, _ = check_command(snap(), line, T0)
    assert vs, line
    assert all(v.kind.value == "command" for v in vs)


@pytest.mark.parametrize("line", UNPARSEABLE)
def test_unparseable_lines_are_refused(line: str) -> None:
    """Command substitution, here-docs and broken quoting are refused as unparseable."""
    vs, _ = check_command(snap(), line, T0)
    assert [v.kind.value for v in vs] == ["unparseable"]


def test_unparseable_even_without_allow_list() -> None:
    """With no `commands` listed, lines are unrestricted but still must parse."""
    s = snap(commands=())
    assert check_command(s, "anything --goes", T0) == ([], [])
    assert [v.kind.value for v in check_command(s, "x $(y)", T0)[0]] == ["unparseable"]


def test_redirect_targets_are_returned_for_path_checks() -> None:
    """Output redirections into files are handed back so the caller checks them as paths."""
    vs, writes = check_command(snap(), "pytest > out.txt 2>> err.log &> both.log", T0)
    assert vs == [] and writes == ["out.txt", "err.log", "both.log"]


def test_compound_line_reports_each_bad_part() -> None:
    """Each offending part of a compound line is reported separately."""
    vs, _ = check_command(snap(), "pytest; rm a; pytest; curl x", T0)
    assert [v.subject for v in vs] == ["rm a", "curl x"]


def test_legacy_commands_unrestricted() -> None:
    """A legacy capability does not restrict programs (but dangerous assignments still refused)."""
    legacy = CapabilitySnapshot(
        Capability(task_id="old", legacy=True), T0, T0 + timedelta(hours=1), "0" * 64
    )
    assert check_command(legacy, "rm -rf build", T0) == ([], [])
    assert check_command(legacy, "PATH=/x ls", T0)[0]


def test_expired_command() -> None:
    """An expired capability refuses even an allowed command."""
    vs, _ = check_command(snap(), "pytest", T0 + timedelta(hours=2))
    assert [v.kind.value for v in vs] == ["expired"]


def test_parse_line_parts() -> None:
    """parse_line splits on operators and strips assignments from argv."""
    p = parse_line("A=1 pytest -q && B=2 python3 -m x | cat > f")
    assert p.commands == (("pytest", "-q"), ("python3", "-m", "x"), ("cat",))
    assert p.assignments == ("A=1", "B=2") and p.writes == ("f",)
    with pytest.raises(CommandParseError):
        parse_line("a `b`")

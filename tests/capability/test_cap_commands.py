"""Command allow-list: plain words only, program + leading arguments per part, fail closed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from capdaemon.capability.cmdline import CommandParseError, split_line
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
    "\tpytest\t-q",
    "python3 -m py_compile src/a.py src/b.py",  # py_compile writes __pycache__/ beside them
    "pytest -q && python3 -m py_compile src/a.py",  # plain-word parts joined by ; && || |
    "pytest; pytest -x",
    "pytest;pytest -x",
    "pytest || pytest",
    "pytest | pytest",
    "pytest --maxfail=1 -k test_x tests/a.py::test_x",  # `=` after a word start is no assignment
    "pytest 'a' \"b\" c'd'",  # quotes around plain words only remove themselves
    'py"test" -q',  # the shell also reads this as pytest
    "git status --short",
]

REFUSED = [
    "pytestx",
    "pytest-x",
    "/usr/bin/pytest",
    "./pytest",
    "python3",
    "python3 -m",
    "python3 -m pip install x",
    "git",
    "git statusx",
    "pytest; rm -rf /",
    "pytest && rm x",
    "pytest || rm x",
    "pytest | sh",
    "env pytest",
    "sudo pytest",
    "exec pytest",
]

# Refused whatever the allow-list says: syntax a plain-word line never needs.
UNPARSEABLE = [
    "pytest $(rm -rf /)",
    "pytest `rm -rf /`",
    "echo '$(quoted)'",
    "pytest 'unterminated",
    "cat <<EOF",
    "cat <<< x",
    "diff <(a) <(b)",
    "pytest >",
    "pytest > /dev/null",
    "pytest 2>&1",
    "pytest < in.txt",
    "pytest & rm x",
    "pytest &",
    "pytest |& tee",
    "pytest ;; pytest",
    "pytest\nrm x",
    "pytest\rrm x",
    "(pytest; rm x)",
    "{ pytest; rm x; }",
    "pytest a#b; rm x",
    "pytest -q # comment",
    "pytest ';' rm",
    "pytest -k 'a and not b'",  # quotes around more than plain words
    "pytest 'a;b'",
    "pytest tests/*.py",
    "pytest ~/x",
    "pytest {a,b}",
    "pytest \\x",
    "pytest !x",
    "CI=1 pytest",  # any assignment, dangerous-looking or not
    "FOO=bar BAZ=1 pytest -q",
    "FOO=1 rm x",
    "PATH=/tmp/evil pytest",
    "LD_PRELOAD=/tmp/x.so pytest",
    "PYTHONPATH=. python3 -m py_compile a.py",
    "GIT_EXTERNAL_DIFF=/tmp/x git status",
    "pytest X=1",  # an assignment-shaped word anywhere
    "time pytest",  # a shell keyword where the program goes
    "if pytest",
    "pytest;",
    "; pytest",
    "pytest && && pytest",
    "pytest \u00a0-q",  # look-alike blanks are not blanks
    "pytest\u3000-q",
    "pytest\x0b-q",
    "",
    "   ",
    "pytest \x00",
]


@pytest.mark.parametrize("line", ALLOWED)
def test_allowed_lines(line: str) -> None:
    """Lines whose every part starts with an allowed program and arguments pass."""
    vs = check_command(snap(), line, T0)
    assert vs == [], [v.line() for v in vs]


@pytest.mark.parametrize("line", REFUSED)
def test_refused_lines(line: str) -> None:
    """Anything that is not an allowed program with allowed leading arguments is refused."""
    vs = check_command(snap(), line, T0)
    assert vs, line
    assert all(v.kind.value == "command" for v in vs)


@pytest.mark.parametrize("line", UNPARSEABLE)
def test_unparseable_lines_are_refused(line: str) -> None:
    """Expansions, redirections, assignments, keywords and odd blanks are refused outright."""
    vs = check_command(snap(), line, T0)
    assert [v.kind.value for v in vs] == ["unparseable"], line
    assert "\n" not in vs[0].line()


def test_unparseable_even_without_allow_list() -> None:
    """With no `commands` listed, programs are unrestricted but lines must still be plain."""
    s = snap(commands=())
    assert check_command(s, "anything --goes", T0) == []
    assert [v.kind.value for v in check_command(s, "x $(y)", T0)] == ["unparseable"]


def test_refusal_names_the_character_and_column() -> None:
    """The reason says which character (or word) was refused, and where."""
    (v,) = check_command(snap(), "pytest -k x$y", T0)
    assert "character '$' at column 12 (expansion)" in v.reason
    (v,) = check_command(snap(), 'pytest "$\\\n(id)"', T0)
    assert "character '$' at column 9 inside quotes" in v.reason
    (v,) = check_command(snap(), "PYTEST_ADDOPTS=-pevil pytest", T0)
    assert "assignment PYTEST_ADDOPTS=" in v.reason
    (v,) = check_command(snap(), "pytest 2>&1", T0)
    assert "'>' at column 9 (redirection)" in v.reason
    (v,) = check_command(snap(), "pytest\u00a0-q", T0)
    assert "U+00A0" in v.reason


def test_verbatim_entry_is_accepted_as_written() -> None:
    """An allow-list entry that is not plain words is accepted only exactly as written."""
    s = snap(commands=("pytest -k 'a and not b'", "pytest"))
    assert check_command(s, "pytest -k 'a and not b'", T0) == []
    assert check_command(s, "  pytest -k 'a and not b'\t", T0) == []
    assert check_command(s, "pytest -k 'a and not b' -x", T0)  # not a prefix
    assert check_command(s, "pytest -k 'a and not c'", T0)


def test_compound_line_reports_each_bad_part() -> None:
    """Each offending part of a compound line is reported separately."""
    vs = check_command(snap(), "pytest; rm a; pytest; curl x", T0)
    assert [v.subject for v in vs] == ["rm a", "curl x"]


def test_legacy_commands_unrestricted() -> None:
    """A legacy capability does not restrict programs (but assignments are still refused)."""
    legacy = CapabilitySnapshot(
        Capability(task_id="old", legacy=True), T0, T0 + timedelta(hours=1), "0" * 64
    )
    assert check_command(legacy, "rm -rf build", T0) == []
    assert check_command(legacy, "PATH=/x ls", T0)


def test_expired_command() -> None:
    """An expired capability refuses even an allowed command."""
    vs = check_command(snap(), "pytest", T0 + timedelta(hours=2))
    assert [v.kind.value for v in vs] == ["expired"]


def test_split_line_parts() -> None:
    """split_line gives each simple command's argv after quote removal."""
    assert split_line("pytest -q && 'python3' -m x | cat") == (
        ("pytest", "-q"),
        ("python3", "-m", "x"),
        ("cat",),
    )
    with pytest.raises(CommandParseError):
        split_line("a `b`")

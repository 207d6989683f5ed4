"""scope-guard --command against real bash: what it accepts runs only the allowed programs.

A PATH of stub programs records every program bash starts (name and argv). The attack
lines of the threat model make bash run `id`; scope-guard refuses them. Generated lines
that scope-guard accepts, run by bash, start only allowed programs, with exactly the words
scope-guard saw.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from capdaemon.capability.cmdline import PLAIN_CHARS, split_line
from capdaemon.capability.model import Capability, CapabilitySnapshot
from capdaemon.capability.scope import check_command

from .helpers import INCIDENT_TASK, escalations

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is the oracle")

ALLOWED = ("pytest", "python3 -m py_compile")
STUBS = ("pytest", "python3", "id", "evil", "rm", "cat", "x", "a")
T0 = datetime(2026, 5, 2, 9, 0, tzinfo=UTC)
SNAP = CapabilitySnapshot(
    Capability(task_id="t", paths=("src/**",), commands=ALLOWED),
    T0,
    T0 + timedelta(hours=1),
    "0" * 64,
)

# The attacks of the threat model (docs/threat-model.md): each makes bash run `id`.
ATTACKS = [
    "x=\\$\\(id\\); pytest ${x@P}",
    'pytest "$\\\n(id)"',
    "PYTEST_ADDOPTS=-pevil pytest",
    "PYTEST_PLUGINS=evil pytest",
]


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of stub programs; each writes its name and argv (NUL-separated) to $REC/<pid>."""
    d = tmp_path_factory.mktemp("stubs")
    for name in STUBS:
        p = d / name
        p.write_text('#!/bin/sh\nprintf \'%s\\0\' "${0##*/}" "$@" > "$REC/$$"\n', encoding="utf-8")
        p.chmod(0o755)
    return d


def run_bash(stubs: Path, line: str) -> list[tuple[str, ...]]:
    """Run `line` with bash (no rc files, only the stubs on PATH); the argv of each stub run."""
    with tempfile.TemporaryDirectory() as rec:
        subprocess.run(
            [BASH or "bash", "--norc", "--noprofile", "-c", line],
            env={"PATH": str(stubs), "REC": rec},
            cwd=rec,
            capture_output=True,
            timeout=10,
            check=False,
        )
        out = []
        for f in Path(rec).iterdir():
            if f.is_file() and f.name.isdigit():
                out.append(tuple(f.read_bytes().decode("utf-8", "replace").split("\0")[:-1]))
        return out


@pytest.mark.parametrize("line", ATTACKS)
def test_attack_runs_id_in_bash_and_scope_guard_refuses_it(
    stubs: Path, line: str, repo, taskfile, cli, state: Path
) -> None:
    """Each attack line is real (bash runs something else) and scope-guard now refuses it."""
    ran = run_bash(stubs, line)
    if line.startswith("PYTEST_"):  # the environment reaches pytest, which would load `evil`
        assert ran == [("pytest",)]
    else:
        assert "id" in {argv[0] for argv in ran}, ran
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state).code == 0
    res = cli(
        "scope-guard", "--task", "task-2360", "--state", state, "--repo", repo.root,
        "--command", line,
    )  # fmt: skip
    assert res.code == 1
    (report,) = [ln for ln in res.err.splitlines() if "OUT OF SCOPE" in ln]
    assert "refused:" in report
    assert "character '\\\\'" in report or "character '$'" in report or "assignment" in report
    (rec,) = [json.loads(p.read_text()) for p in escalations(state)]
    assert rec["violations"][0]["kind"] == "unparseable"


# -- generated lines --------------------------------------------------------------------
_plain = st.text(alphabet=sorted(PLAIN_CHARS), min_size=1, max_size=6)
_word = st.one_of(
    _plain,
    _plain.map(lambda w: f"'{w}'"),
    _plain.map(lambda w: f'"{w}"'),
    st.tuples(_plain, _plain).map(lambda p: f'{p[0]}"{p[1]}"'),
    st.sampled_from(["-q", "-x", "--maxfail=1", "-pevil", "tests/", "''", "id", "evil"]),
)
_program = st.sampled_from(
    ["pytest", "python3 -m py_compile", "py'test'", '"pytest"', "id", "evil"]
)
_command = st.tuples(_program, st.lists(_word, max_size=3)).map(lambda c: " ".join([c[0], *c[1]]))
_separator = st.sampled_from([" ; ", ";", " && ", "&&", " || ", " | ", "|", " "])
# Shell syntax an attacker would reach for; any of it may land anywhere in the line.
_hazard = st.sampled_from(
    [
        "$", "`", "\\", "\\\n", "\n", "${x@P}", "$(id)", "`id`", "$[1]", "${x}", "$x",
        "x=\\$\\(id\\); ", "X=1 ", "PYTEST_ADDOPTS=-pevil ", "'", '"', "\"$\\\n(id)\"",
        "'a b'", "\"a b\"", "&", ">", "<", ">f", "2>&1", "#", "*", "?", "[a]", "~", "{a,b}",
        "(", ")", "!", "^", "\t", "\r", "\xa0", "\u3000", "\x0b", "\u2028", "=", "time ",
        "eval ", "exec ", "; id", "|id", "\nid", "a=b ", "=x",
    ]
)  # fmt: skip


@st.composite
def lines(draw: st.DrawFn) -> str:
    """Commands joined by separators, with shell hazards spliced in at random places."""
    parts = [draw(_command)]
    for _ in range(draw(st.integers(0, 2))):
        parts += [draw(_separator), draw(_command)]
    text = "".join(parts)
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(_hazard) + text[at:]
    return text


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(line=lines())
def test_accepted_lines_run_only_allowed_programs_with_the_words_seen(
    stubs: Path, line: str
) -> None:
    """Whatever scope-guard accepts, bash runs only allowed programs, each with its argv."""
    if check_command(SNAP, line, T0):
        event("refused")
        return  # refused: nothing runs
    event("accepted")
    seen = split_line(line)
    ran = run_bash(stubs, line)
    for argv in ran:
        assert argv in seen, (line, argv, seen)
        assert argv[0] in ("pytest", "python3"), (line, argv)
    if "||" not in line:  # stubs exit 0: every part runs once (with `||` the right side is skipped)
        assert Counter(ran) == Counter(seen), (line, ran, seen)
    else:
        assert not Counter(ran) - Counter(seen)

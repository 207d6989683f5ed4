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


# -- generated option words for the common programs -------------------------------------
# Every path word of an accepted line is checked on disk from the repository root; the
# options come from the tables' harmless side and from the hostile side (write, delete, load
# code, read configuration elsewhere). Harmless options that take a value are generated with
# it attached, so a later path word is never the value of an unchecked option.
OPT_CAP = Capability(
    task_id="o",
    paths=("src/**",),
    forbidden_paths=(".github/**", "memory/events/*.cron-*"),
    commands=("pytest", "python3 -m py_compile", "git diff", "make", "go test"),
)
OPT_SNAP = CapabilitySnapshot(OPT_CAP, T0, T0 + timedelta(hours=1), "0" * 64)
SAFE_PATHS = ["src/a.py", "src/new.py", "tests/t.py", "src", "."]
DANGER_PATHS = [".github/ci.yml", "memory/events/x.cron-daily", "/tmp/x", "../x", "/etc/passwd",
                "tests/missing.py", ".git/config"]  # fmt: skip
_path = st.sampled_from(SAFE_PATHS + DANGER_PATHS)
# program → (harmless flags, harmless attached-value options, hostile options, short flags)
OPTIONS = {
    "pytest": (
        ["-q", "-x", "-v", "--lf", "-pno:cacheprovider"],
        ["-ktest_a", "--maxfail=2", "-rA", "--tb=short"],
        [
            "--debug",
            "--junitxml",
            "--junit-xml",
            "--resultlog",
            "--basetemp",
            "-o",
            "--override-ini",
            "-p",
            "-c",
            "--rootdir",
            "--confcutdir",
            "--log-file",
            "-W",
            "--junitx",
        ],
        "qxvsl",
    ),
    "python3 -m py_compile": (["-q"], [], ["-X", "-W", "-c", "-d"], "q"),
    "git diff": (
        ["--stat", "--name-only", "-w"],
        ["-U3", "--diff-filter=M"],
        ["--output", "--ext-diff", "--textconv", "--no-index", "-O"],
        "wRM",
    ),
    "make": (
        ["-k", "-s", "-n"],
        ["-j2"],
        ["-f", "-C", "-I", "--eval", "--file", "-o", "-W", "--directory", "--fil"],
        "ksnB",
    ),
    "go test": (
        ["-v", "-race"],
        ["-run=TestA", "-count=1"],
        ["-o", "-modfile", "-toolexec", "--toolexec", "-exec", "-coverprofile", "-C", "-overlay"],
        "",
    ),
}


@st.composite
def option_lines(draw: st.DrawFn) -> str:
    """One allowed program with a mix of harmless and hostile option words and paths, in every
    spelling (`--o=V`, `--o V`, `-oV`, `-o V`, clusters), some words quoted."""
    prog = draw(st.sampled_from(sorted(OPTIONS)))
    flags, valued, hostile, shorts = OPTIONS[prog]
    words: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 4))
        if kind == 0:
            words.append(draw(st.sampled_from(flags)))
        elif kind == 1 and valued:
            words.append(draw(st.sampled_from(valued)))
        elif kind == 2:
            opt, value = draw(st.sampled_from(hostile)), draw(_path)
            form = draw(st.integers(0, 2))
            if form == 0:
                words.append(f"{opt}={value}")
            elif form == 1 or opt.startswith("--") or prog == "go test":
                words += [opt, value]
            else:
                lead = draw(st.text(alphabet=shorts, max_size=2)) if shorts else ""
                words.append(f"-{lead}{opt[1:]}{value}")
        else:
            words.append(draw(_path))
    quoted = [f"'{w}'" if draw(st.booleans()) else w for w in words]
    return " ".join([prog, *quoted])


def _danger_in(argv: tuple[str, ...], prog: str) -> str | None:
    """The hostile option or dangerous path a program would meet in `argv` (getopt reading:
    a cluster of short flags, then a short option with its value), or None."""
    _flags, _valued, hostile, shorts = OPTIONS[prog]
    # to git, a missing path that could be a revision is one (reading it is harmless)
    danger = [d for d in DANGER_PATHS if not (prog == "git diff" and d == "tests/missing.py")]
    for w in argv[1:]:
        if any(d in w for d in danger):
            return w
        name = w.split("=", 1)[0]
        go_name = prog == "go test" and "-" + name.lstrip("-") in hostile
        no_plugin = prog == "pytest" and name == "-p" and "no:" in w
        if (name in hostile or go_name) and not no_plugin:
            return w
        if w.startswith("-") and not w.startswith("--") and prog != "go test":
            letters = w[1:]
            while letters and letters[0] in shorts:
                letters = letters[1:]
            if letters and f"-{letters[0]}" in hostile and not letters.startswith("pno:"):
                return w
    return None


@pytest.fixture(scope="module")
def opt_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout with an allowed file, an existing input and the forbidden files."""
    root = tmp_path_factory.mktemp("optrepo")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for rel in ("src/a.py", "tests/t.py", ".github/ci.yml", "memory/events/x.cron-daily"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    return root


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(line=option_lines())
def test_accepted_option_lines_reach_no_hostile_option_or_path(
    stubs: Path, opt_repo: Path, line: str
) -> None:
    """Whatever scope-guard accepts, the program bash starts gets exactly the words checked,
    none a hostile option and none naming a forbidden, missing-outside-scope or outside path."""
    from capdaemon.capability.fspaths import word_checker

    prog = next(p for p in OPTIONS if line.startswith(p + " ") or line == p)
    if check_command(OPT_SNAP, line, T0, paths=word_checker(OPT_CAP, opt_repo)):
        event("refused")
        return
    event("accepted")
    seen = split_line(line)
    ran = run_bash(stubs, line.replace("go test", "x test").replace("git diff", "a diff")
                   .replace("make", "cat", 1))  # fmt: skip
    assert len(ran) == 1
    argv = (seen[0][0], *ran[0][1:])
    assert argv == seen[0], (line, ran)
    assert _danger_in(argv, prog) is None, line

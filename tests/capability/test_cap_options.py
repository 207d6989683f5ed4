"""Allowed programs with hostile options, path words read from the repository root, typed
patterns: each attack tried for real (pytest, git) and through the scope-guard CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capdaemon.capability.cmdpattern import match_pattern, parse_pattern
from capdaemon.capability.fspaths import NotACheckoutError, repo_root, word_checker
from capdaemon.capability.model import Capability, CapabilitySnapshot
from capdaemon.capability.scope import check_command

from .helpers import INCIDENT_TASK, Git

T0 = datetime(2026, 5, 2, 9, 0, tzinfo=UTC)
CRON = "memory/events/x.cron-daily"


@pytest.fixture
def work(repo: Git) -> Git:
    """The incident repo plus a forbidden cron file, a test file and a conftest."""
    repo.write(
        {
            CRON: "0 * * * * run\n",
            "tests/test_a.py": "def test_a(tmp_path):\n    pass\n",  # uses --basetemp
            ".github/workflows/keep/x.yml": "on: push\n",
        }
    )
    repo.commit("fixtures")
    return repo


@pytest.fixture
def task(cli, taskfile, state: Path, work: Git) -> str:
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", work.root).code == 0
    return "task-2360"


def guard(cli, state: Path, task: str, *args: str | Path):
    return cli("scope-guard", "--task", task, "--state", state, *args)


# Each line is allowed by `pytest` or `git diff` by its first words, and harms a forbidden
# path, loads code or reads configuration from elsewhere.
HOSTILE = [
    f"pytest --debug={CRON}",
    f"pytest -q --debug {CRON}",
    "pytest --junitxml=.github/workflows/ci.yml",
    "pytest --junit-xml .github/workflows/ci.yml",
    "pytest --resultlog=.github/workflows/ci.yml",
    "pytest --basetemp=.github/workflows/keep",
    "pytest -o cache_dir=.github/cache",
    "pytest --override-ini=cache_dir=.github/cache",
    "pytest -p evil",
    "pytest -pevil",
    "pytest -qp evil",
    "pytest -c /tmp/evil.ini",
    "pytest -c/tmp/evil.ini",
    "pytest --rootdir=/",
    "pytest --confcutdir=/",
    "pytest --junitx=.github/workflows/ci.yml",  # an abbreviation is not the option
    "pytest -W error::evil.Warning",
    "pytest --log-file=cron_settings.json",
    "pytest .github/workflows/ci.yml",  # a forbidden input, by name
    "pytest /etc/passwd",
    "pytest ../outside",
    "pytest --deselect=/etc/passwd::x",
    "pytest @scripts/finish-task.sh",  # argparse reads more arguments from that file
    "python3 -m py_compile .github/workflows/x.py",  # writes __pycache__/ beside it
    "python3 -m py_compile /tmp/x.py",
]

GIT_TASK = INCIDENT_TASK.replace(
    '    - "pytest"\n', '    - "pytest"\n    - "git diff"\n    - "git"\n'
)
GIT_HOSTILE = [
    "git diff --output=.github/workflows/ci.yml",
    "git diff --output .github/workflows/ci.yml",
    "git -c core.pager=evil diff",
    "git -c diff.external=evil diff",
    "git --git-dir=/tmp/other diff",
    "git --work-tree=/ diff",
    "git -C /tmp diff",
    "git diff --ext-diff",
    "git diff --no-index /etc/passwd scripts/finish-task.sh",
    "git checkout -- .github/workflows/ci.yml",
    "git diff -- ../outside",
    "git --paginate log",
    "git diff --stat -MOsrc/a.py",  # letters after an optional-value short option
    "git diff -C50Oorder.txt",
]

OTHER_TOOLS = [
    "npm --prefix /tmp test",
    "npm test --prefix=/tmp",
    "npm run --script-shell=evil test",
    "npm exec evil",
    "pnpm -C /tmp test",
    "yarn --cwd /tmp test",
    "yarn evil-script",
    "make -f /tmp/Makefile",
    "make -C /tmp",
    "make -I /tmp",
    "make --eval=all:",
    "make --fil=/tmp/Makefile",  # GNU make reads this abbreviation as --file
    "cargo test --manifest-path /tmp/Cargo.toml",
    "cargo build --target-dir .github/out",
    "cargo test --config build.rustc=evil",
    "go test -modfile=/tmp/go.mod ./...",
    "go build -o .github/workflows/ci.yml .",
    "go test -toolexec=evil ./...",
    "go test --toolexec evil ./...",
    "go test -coverprofile=cron_settings.json ./...",
    "python3 -X pycache_prefix=.github -m py_compile scripts/finish-task.sh",
    "python3 -W error::evil.W -m py_compile scripts/finish-task.sh",
    "python3 -c print -m py_compile scripts/finish-task.sh",
]
TOOLS_TASK = INCIDENT_TASK.replace(
    '    - "pytest"\n',
    '    - "pytest"\n    - "npm"\n    - "pnpm"\n    - "yarn"\n    - "make"\n    - "cargo"\n'
    '    - "go"\n    - "python3"\n',
)


@pytest.mark.parametrize("line", HOSTILE)
def test_hostile_options_and_paths_refused(cli, state: Path, task: str, work: Git, line) -> None:
    """Every hostile option or path word of an allowed program is refused (exit 1)."""
    res = guard(cli, state, task, "--repo", work.root, "--command", line)
    assert res.code == 1, line
    bad = [ln for ln in res.err.splitlines() if "OUT OF SCOPE" in ln]
    assert len(bad) >= 1 and "\n" not in bad[0]


@pytest.mark.parametrize("line", GIT_HOSTILE)
def test_git_hostile_refused(cli, taskfile, state: Path, work: Git, line: str) -> None:
    """git's output, config, repository and directory options are refused with `git` allowed."""
    cli("dispatch", taskfile(GIT_TASK.replace("task-2360", "git-1")), "--state", state,
        "--repo", work.root)  # fmt: skip
    res = guard(cli, state, "git-1", "--repo", work.root, "--command", line)
    assert res.code == 1, (line, res.err)


@pytest.mark.parametrize("line", OTHER_TOOLS)
def test_other_tools_hostile_refused(cli, taskfile, state: Path, work: Git, line: str) -> None:
    """npm/pnpm/yarn, make, cargo, go and python options that move, write or load: refused."""
    cli("dispatch", taskfile(TOOLS_TASK.replace("task-2360", "tools-1")), "--state", state,
        "--repo", work.root)  # fmt: skip
    res = guard(cli, state, "tools-1", "--repo", work.root, "--command", line)
    assert res.code == 1, (line, res.err)


SAFE = [
    "pytest",
    "pytest -q -x tests/",
    "pytest -qx --maxfail=1 -k test_a tests/test_a.py::test_a",
    "pytest -p no:cacheprovider -rA --tb=short tests",
    "pytest --deselect tests/test_a.py::test_b tests",
    "pytest scripts/finish-task.sh",
    "pytest .",
    "python3 -m py_compile scripts/finish-task.sh",
]


@pytest.mark.parametrize("line", SAFE)
def test_harmless_options_pass(cli, state: Path, task: str, work: Git, line: str) -> None:
    """Options in the tables and existing inputs pass."""
    res = guard(cli, state, task, "--repo", work.root, "--command", line)
    assert res.code == 0, res.err


def test_capability_may_list_the_exact_line(cli, taskfile, state: Path, work: Git) -> None:
    """An option refused by the table passes when the task lists it (as a prefix or line)."""
    text = INCIDENT_TASK.replace("task-2360", "p-1").replace(
        '    - "pytest"\n', '    - "pytest"\n    - "pytest -p pytest_cov"\n'
    )
    cli("dispatch", taskfile(text), "--state", state, "--repo", work.root)
    ok = guard(cli, state, "p-1", "--repo", work.root, "--command", "pytest -p pytest_cov -q tests")
    assert ok.code == 0, ok.err
    bad = guard(cli, state, "p-1", "--repo", work.root, "--command", "pytest -p pytest_cov -p evil")
    assert bad.code == 1


# -- the attacks are real -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "victim"),
    [
        (f"--debug={CRON}", CRON),
        ("--junitxml=.github/workflows/ci.yml", ".github/workflows/ci.yml"),
        ("--basetemp=.github/workflows/keep", ".github/workflows/keep/x.yml"),
    ],
)
def test_real_pytest_harms_and_scope_guard_refuses(
    cli, state: Path, task: str, work: Git, line: str, victim: str
) -> None:
    """Run by real pytest in the repo, the option changes or deletes a forbidden file;
    scope-guard refuses the line."""
    before = (work.root / victim).read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", line, "tests"],
        cwd=work.root,
        capture_output=True,
        env={**os.environ, "PYTEST_ADDOPTS": "", "PYTEST_PLUGINS": ""},
        check=False,
    )
    assert proc.returncode == 0, proc.stdout
    path = work.root / victim
    assert not path.exists() or path.read_bytes() != before  # the attack is real
    res = guard(cli, state, task, "--repo", work.root, "--command", f"pytest {line}")
    assert res.code == 1


def test_real_git_diff_output_overwrites_and_is_refused(cli, taskfile, state: Path, work: Git):
    """`git diff --output=FILE` really overwrites FILE; scope-guard refuses it."""
    ci = work.root / ".github/workflows/ci.yml"
    work.write({"README.md": "changed\n"})
    subprocess.run(["git", "-C", str(work.root), "diff", f"--output={ci}"], check=True)
    assert "changed" in ci.read_text()
    cli("dispatch", taskfile(GIT_TASK.replace("task-2360", "git-2")), "--state", state,
        "--repo", work.root)  # fmt: skip
    res = guard(cli, state, "git-2", "--repo", work.root, "--command",
                "git diff --output=.github/workflows/ci.yml")  # fmt: skip
    assert res.code == 1


# -- paths from the repository root ---------------------------------------------------------


def test_bare_name_inside_forbidden_folder_is_refused(
    sub, cli, taskfile, state: Path, task: str, work: Git
) -> None:
    """From inside .github/workflows, `ci.yml` (allowed as the root's ci.yml by `**`) is also
    checked as read from there: forbidden. `--repo .github` still means the whole checkout."""
    inner = work.root / ".github" / "workflows"
    wide = INCIDENT_TASK.replace("task-2360", "wide-1").replace('"scripts/finish-task.sh"', '"**"')
    assert cli("dispatch", taskfile(wide), "--state", state, "--repo", work.root).code == 0
    res = sub("scope-guard", "--task", "wide-1", "--state", state, "ci.yml", cwd=inner)
    assert res.code == 1 and ".github/workflows/ci.yml: forbidden" in res.err, res.err
    res = sub("scope-guard", "--task", "wide-1", "--state", state, "--command",
              "pytest --deselect ci.yml", cwd=inner)  # fmt: skip
    assert res.code == 1, res.err
    ok = sub("scope-guard", "--task", "wide-1", "--state", state, "notes.md", cwd=work.root)
    assert ok.code == 0, ok.err
    res = sub("scope-guard", "--task", task, "--state", state, "ci.yml", cwd=inner)
    assert res.code == 1, res.err
    res = sub("scope-guard", "--task", task, "--state", state, "--repo", inner,
              ".github/workflows/ci.yml")  # fmt: skip
    assert res.code == 1 and "forbidden" in res.err
    res = sub("scope-guard", "--task", task, "--state", state, "--command", "pytest ci.yml",
              cwd=inner)  # fmt: skip
    assert res.code == 1
    there = sub("scope-guard", "--task", task, "--state", state, "scripts/finish-task.sh",
                cwd=inner)  # fmt: skip
    assert there.code == 1  # read from .github/workflows, it is a forbidden file
    ok = sub("scope-guard", "--task", task, "--state", state, "scripts/finish-task.sh",
             cwd=work.root / "scripts")  # fmt: skip
    assert ok.code == 1  # scripts/scripts/finish-task.sh is not allowed
    ok = sub("scope-guard", "--task", task, "--state", state, str(work.root / "scripts" /
             "finish-task.sh"), cwd=inner)  # fmt: skip
    assert ok.code == 0, ok.err  # an absolute path has one reading


def test_not_a_checkout_is_one_line_and_refused(cli, state: Path, task: str, tmp_path: Path):
    """A --repo (or current folder) outside any git checkout: exit 2, one clear line."""
    (tmp_path / "plain").mkdir()
    res = guard(cli, state, task, "--repo", tmp_path / "plain", "scripts/finish-task.sh")
    assert res.code == 2
    (line,) = res.err.strip().splitlines()
    assert "not inside a git checkout" in line and str(tmp_path / "plain") in line


def test_unresolvable_path_is_refused(cli, state: Path, task: str, work: Git) -> None:
    """A symlink loop under an allowed folder cannot be resolved: refused, saying so."""
    (work.root / "scripts" / "a").symlink_to("b")
    (work.root / "scripts" / "b").symlink_to("a")
    res = guard(cli, state, task, "--repo", work.root, "scripts/a/x.sh")
    assert res.code == 1 and "cannot be resolved" in res.err


def test_nested_dot_git_is_forbidden(cli, state: Path, task: str, work: Git) -> None:
    """No path may create a .git at any depth (it would move where the checkout's root is)."""
    res = guard(cli, state, task, "--repo", work.root, "scripts/.git/HEAD")
    assert res.code == 1 and ".git" in res.err


def test_repo_root_matches_git(work: Git, tmp_path: Path) -> None:
    """repo_root agrees with `git rev-parse --show-toplevel`, in folders, a linked work tree
    and a nested repository; outside any checkout both refuse."""
    linked = tmp_path / "linked"
    work("worktree", "add", "-q", str(linked), "main")
    nested = Git(work.root / "scripts" / "inner")
    (nested.root / "deep").mkdir()
    starts = [work.root, work.root / ".github" / "workflows", linked, nested.root / "deep"]
    for start in starts:
        git = subprocess.run(["git", "-C", str(start), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        assert str(repo_root(start)) == os.path.realpath(git), start
    (tmp_path / "none").mkdir()
    proc = subprocess.run(["git", "-C", str(tmp_path / "none"), "rev-parse", "--show-toplevel"],
                          capture_output=True, env={**os.environ, "GIT_CEILING_DIRECTORIES":
                          str(tmp_path)}, check=False)  # fmt: skip
    assert proc.returncode != 0
    with pytest.raises(NotACheckoutError):
        repo_root(tmp_path / "none")


# -- typed patterns -------------------------------------------------------------------------


def test_typed_patterns(work: Git) -> None:
    """`pytest {path-in-scope}...` allows exactly in-scope paths; `{path}` existing inputs."""
    cap = Capability(
        task_id="t",
        paths=("scripts/**",),
        forbidden_paths=(".github/**",),
        commands=("pytest '{path-in-scope}...'", "cat '{path}'", "git checkout '{word}'"),
    )
    snap = CapabilitySnapshot(cap, T0, T0 + timedelta(hours=1), "0" * 64)
    words = word_checker(cap, work.root)

    def ok(line: str) -> bool:
        return check_command(snap, line, T0, paths=words) == []

    assert ok("pytest scripts/finish-task.sh scripts/new.py")
    assert not ok("pytest")  # one or more
    assert not ok("pytest -q scripts/finish-task.sh")  # options are not paths
    assert not ok("pytest tests/test_a.py")  # exists, but not in scope
    assert not ok("pytest scripts/x.py .github/workflows/ci.yml")
    assert ok("cat README.md") and ok("cat scripts/finish-task.sh")
    assert not ok("cat nope.md") and not ok("cat .github/workflows/ci.yml")
    assert not ok("cat /etc/passwd") and not ok("cat README.md README.md")
    assert ok("git checkout main") and not ok("git checkout -f") and not ok("git checkout a b")
    assert not ok("pytest '{path-in-scope}...'")  # typed out, a pattern is no line


def test_bad_pattern_refused_at_dispatch(cli, taskfile, state: Path) -> None:
    """A `{…}` word that is no type is an error naming the field (exit 2)."""
    text = INCIDENT_TASK.replace('    - "pytest"\n', '    - "pytest {paths}"\n')
    res = cli("dispatch", taskfile(text), "--state", state)
    assert res.code == 2 and "allowed_resources.commands[" in res.err and "{paths}" in res.err


def test_not_a_checkout_static_api() -> None:
    """The pure check without a repository stays lexical: absolute paths refused."""
    cap = Capability(task_id="t", paths=("src/**",), commands=("pytest",))
    snap = CapabilitySnapshot(cap, T0, T0 + timedelta(hours=1), "0" * 64)
    assert check_command(snap, "pytest src/a.py", T0) == []
    assert check_command(snap, "pytest /etc/passwd", T0)
    assert check_command(snap, "pytest ../x", T0)


# -- the pattern matcher, generated -----------------------------------------------------------
_lit = st.sampled_from(["git", "checkout", "run", "-q", "--all", "x"])
_slot = st.tuples(st.sampled_from(["path-in-scope", "path", "word", "int"]), st.booleans())


@st.composite
def _pattern_and_line(draw: st.DrawFn) -> tuple[str, list[str], list[int]]:
    """A pattern entry, a line that matches it, and the indices of its path words."""
    entry, argv, paths = ["prog"], ["prog"], []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()) or "{" in entry[-1]:  # a literal between typed slots
            w = draw(_lit)
            entry.append(w)
            argv.append(w)
            continue
        kind, repeat = draw(_slot)
        entry.append("{" + kind + "}" + ("..." if repeat else ""))
        for _ in range(draw(st.integers(1, 3)) if repeat else 1):
            if kind.startswith("path"):
                paths.append(len(argv))
            argv.append(draw(st.sampled_from(["7", "42"]) if kind == "int" else
                             st.sampled_from(["src/a.py", "b", "main"])))  # fmt: skip
    return " ".join(f"'{w}'" if "{" in w else w for w in entry), argv, paths


@given(case=_pattern_and_line(), extra=st.sampled_from(["-f", "--evil", "-9"]))
def test_pattern_matches_its_instances_and_nothing_longer(case, extra: str) -> None:
    """A line built from a pattern matches it, with exactly its path words found; an option
    after it, or in place of a typed word, does not match."""
    entry, argv, paths = case
    pattern = parse_pattern(entry)
    found = match_pattern(pattern, tuple(argv))
    assert found is not None
    assert sorted(i for i, _k, _w in found) == paths
    assert match_pattern(pattern, (*argv, extra)) is None
    typed = [i for i, (_t, kind, _r) in enumerate(pattern) if kind != "literal"]
    if typed and len(argv) == len(pattern):
        bad = list(argv)
        bad[typed[0]] = extra
        assert match_pattern(pattern, tuple(bad)) is None

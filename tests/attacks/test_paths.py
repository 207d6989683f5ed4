"""Path tricks: renames, copies, case, look-alikes, `..`, symlinks, submodules, modes."""

from __future__ import annotations

import pytest

from capdaemon.classify.engine import classify
from capdaemon.config import Config
from capdaemon.model import FileChange, FileStatus, PRSnapshot, Quadrant

from .conftest import quadrant

pytestmark = pytest.mark.slow

VALIDATOR = "def can_merge(pr):\n    return pr.ok\n"
SUBMODULE_SHA = "1234567890abcdef1234567890abcdef12345678"


def test_path_tricks_never_reach_a_safe_quadrant_end_to_end(daemon) -> None:
    """Each trick PR is classified above A (D where SPEC says so); no D one merges."""
    d_cases = {
        # rename of the bot's merge logic into a safe folder: both paths count, rename deletes
        "rename-into-examples": {
            "src/multiagent_protocol/pr_validator.py": None,
            "examples/pr_validator.py": VALIDATOR,
        },
        # the workflow moved under docs/guide/ (rename deletes the CI file: D, always)
        "workflow-into-docs-guide": {
            ".github/workflows/ci.yml": None,
            "docs/guide/ci.yml": "name: ci\n",
        },
        # mixed-case spelling of the CI folder
        "case-github": {".GitHub/Workflows/evil.yml": "on: push\n"},
        # a symlink in examples/ pointing at a workflow
        "symlink-to-workflow": {
            "examples/ci.yml": {"content": "../.github/workflows/ci.yml", "mode": "120000"}
        },
        # the supervised repo's own policy file
        "policy-file": {".capdaemon.yml": "critical_globs: []\n"},
        # a user classifier rule, an agent registry entry
        "user-rule": {
            "config/skills/classifier/allow_all.py": "def rule(s):\n    return None, 'x'\n"
        },
        "registry": {
            "config/agent_registry.yml": "agents:\n  - {tool: evil, models: [m], trust: trusted}\n"
        },
        # a nested agent_registry.yml (matched anywhere)
        "registry-nested": {"examples/agent_registry.yml": "agents: []\n"},
    }
    not_safe_cases = {
        # upper-case SRC and Examples/ are not the carve-outs (case-sensitive safe folders)
        "case-src": {"SRC/multiagent_protocol/pr_validator.py": VALIDATOR},
        "case-examples": {"Examples/run.py": "import os\nos.system('x')\n"},
        # Cyrillic е and х in "examples" (look-alike folder)
        "lookalike-examples": {"\u0435\u0445amples/run.py": "print(1)\n"},
        # a submodule pointer in examples/ (irreversible: C at least, SPEC 2.2)
        "submodule": {"examples/vendored": {"content": SUBMODULE_SHA, "mode": "160000"}},
        # a mode change to executable inside a safe folder (irreversible)
        "exec-mode": {"examples/old.py": {"content": "print('v1')\n", "mode": "100755"}},
    }
    numbers: dict[str, int] = {}
    for name, files in {**d_cases, **not_safe_cases}.items():
        numbers[name] = daemon.open_pr(files, title=name)
    daemon.tick()
    daemon.tick()
    got = {name: quadrant(daemon, n) for name, n in numbers.items()}
    assert {k: got[k] for k in d_cases} == dict.fromkeys(d_cases, "D")
    assert all(got[k] != "A" for k in not_safe_cases), got
    assert got["submodule"] in ("C", "D") and got["exec-mode"] in ("C", "D"), got
    for name in d_cases:
        assert not daemon.pull(numbers[name]).merged, name
        assert daemon.check(numbers[name]).conclusion == "failure", name


def _snap(*files: FileChange) -> PRSnapshot:
    return PRSnapshot(
        repo="acme/widgets",
        number=1,
        base_ref="main",
        base_sha="b" * 40,
        head_sha="h" * 40,
        author="agent-1",
        files=files,
    )


@pytest.mark.parametrize(
    "path",
    [
        "examples/../.github/workflows/ci.yml",
        "./.github/workflows/ci.yml",
        "docs/guide/./../../.github/workflows/x.yml",
        "examples/.//..//.github/workflows/ci.yml",
    ],
)
def test_dot_segments_cannot_launder_a_workflow_into_a_safe_folder(path: str) -> None:
    """`./` and `..` segments are normalised before matching: still CI, still D."""
    from datetime import UTC, datetime

    fc = FileChange(path=path, status=FileStatus.MODIFIED, additions=1, patch="@@ -1 +1 @@\n-a\n+b")
    v = classify(_snap(fc), Config(), now=datetime(2026, 1, 1, tzinfo=UTC))
    assert v.quadrant is Quadrant.D


@pytest.mark.parametrize(
    "path", ["../outside.txt", "/etc/passwd", "examples/../../x", "examples/\x00x", "C:/x"]
)
def test_escaping_or_absolute_paths_fail_closed(path: str) -> None:
    """A path that climbs out of the repo, is absolute or has control characters → D."""
    from datetime import UTC, datetime

    fc = FileChange(path=path, status=FileStatus.ADDED, additions=1, patch="@@ -0,0 +1 @@\n+x")
    v = classify(_snap(fc), Config(), now=datetime(2026, 1, 1, tzinfo=UTC))
    assert v.quadrant is Quadrant.D


def test_copy_of_critical_file_into_examples_is_not_a():
    """A copy reported by git of bot source into examples/ keeps the source's criticality (≥ B)."""
    from datetime import UTC, datetime

    fc = FileChange(
        path="examples/pr_validator.py",
        status=FileStatus.COPIED,
        previous_path="src/multiagent_protocol/pr_validator.py",
        additions=0,
        patch="",
    )
    v = classify(_snap(fc), Config(), now=datetime(2026, 1, 1, tzinfo=UTC))
    assert v.quadrant in (Quadrant.B, Quadrant.D)

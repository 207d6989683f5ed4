"""The package's layers (pyproject.toml, [tool.importlinter]) hold, and an upward import fails them.

`lint-imports` (import-linter) is the checker; scripts/test.sh runs it too. These tests run it
on the repository as it is, then on a copy with one bad import added, so the contract cannot
pass vacuously: module-level, function-level and TYPE_CHECKING imports are all refused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the `capdaemon` package under `root`, with root's pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [str(LINT), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_contracts_hold() -> None:
    """Every contract is kept by the package as it is."""
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package and its pyproject.toml (the checker reads source, not the wheel)."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copytree(
        ROOT / "capdaemon", root / "capdaemon", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    assert _lint(root).returncode == 0  # the unchanged copy passes
    return root


# (file, the code added to it, what lint-imports must name in its report)
BAD = {
    "module-level, channels -> daemon": (
        "capdaemon/channels/hub.py",
        "\nfrom capdaemon.daemon.service import runner as _runner  # noqa\n",
        "capdaemon.channels.hub -> capdaemon.daemon.service.runner",
    ),
    "function-level, bot-state -> dashboard": (
        "capdaemon/stores/policystate.py",
        "\n\ndef _late() -> object:\n    from capdaemon.dashboard import readmodel\n\n"
        "    return readmodel\n",
        "capdaemon.stores.policystate -> capdaemon.dashboard.readmodel",
    ),
    "TYPE_CHECKING, demo -> commands": (
        "capdaemon/demo/output.py",
        "\nif TYPE_CHECKING:\n    from capdaemon.commands import why  # noqa\n",
        "capdaemon.demo.output -> capdaemon.commands.why",
    ),
    "dashboard -> daemon (the read model reads bot-state only)": (
        "capdaemon/dashboard/readmodel.py",
        "\nfrom capdaemon.daemon.service.digest_job import cron_trigger  # noqa\n",
        "capdaemon.dashboard.readmodel -> capdaemon.daemon.service.digest_job",
    ),
    "PyGithub outside forge/": (
        "capdaemon/decide/merge.py",
        "\nimport github  # noqa\n",
        "capdaemon.decide.merge -> github",
    ),
    "a new module no layer names": (
        "capdaemon/newthing.py",
        '"""A module nobody placed."""\n',
        "capdaemon.newthing",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_an_upward_import_is_refused(copy: Path, case: str) -> None:
    """One bad import (or an unplaced module) in the copy breaks the contract, and the report
    names the offending edge; the copy is restored afterwards."""
    rel, added, named = BAD[case]
    path = copy / rel
    before = path.read_text(encoding="utf-8") if path.exists() else None
    if before is not None and "TYPE_CHECKING" in added and "TYPE_CHECKING" not in before:
        added = "\nTYPE_CHECKING = False" + added
    path.write_text((before or "") + added, encoding="utf-8")
    try:
        done = _lint(copy)
    finally:
        if before is None:
            path.unlink()
        else:
            path.write_text(before, encoding="utf-8")
    assert done.returncode != 0
    assert named in " ".join(done.stdout.split()), done.stdout

"""The version has one home (capdaemon/__init__.py): the package metadata, `capdaemon --version`
and the changelog follow it, and no other file states it."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import capdaemon
from capdaemon.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_reads_the_version_from_the_package() -> None:
    """pyproject.toml states no version of its own: setuptools reads `capdaemon.__version__`."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in meta["project"]
    assert "version" in meta["project"]["dynamic"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "capdaemon.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", capdaemon.__version__)


def test_the_built_metadata_carries_the_packages_version(tmp_path: Path) -> None:
    """The version setuptools writes into the metadata is the package's (read statically,
    without importing capdaemon)."""
    out = subprocess.run(
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    assert out[-1] == capdaemon.__version__


def test_version_flag_prints_it(capsys) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"capdaemon {capdaemon.__version__}\n"


def test_the_changelog_has_the_current_version_and_an_unreleased_section() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert headings[0] == "Unreleased"
    assert capdaemon.__version__ in headings
    for name in headings:  # Keep a Changelog: each version heading has its link
        assert re.search(rf"^\[{re.escape(name)}\]: \S+$", text, re.M), name


def test_no_document_states_the_version() -> None:
    """Docs name the wheel by pattern (`capdaemon-*.whl`), never by a version that would go
    stale at the next release."""
    docs = [ROOT / "README.md", ROOT / "systemd" / "README.md", *ROOT.glob("docs/**/*.md")]
    for doc in docs:
        assert f"capdaemon-{capdaemon.__version__}" not in doc.read_text(encoding="utf-8"), doc

"""The built wheel, installed into a fresh virtualenv, carries everything a first run needs:
`capdaemon init` writes the packaged sample, `doctor --offline` accepts it; without the sandbox
extra `demo` refuses in one line, and with it `demo` runs green and removes its temporary folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# Dependency wheels, downloaded from the package index once and reused offline afterwards.
WHEELHOUSE = Path(
    os.environ.get("CAPDAEMON_WHEELHOUSE", Path.home() / ".cache" / "capdaemon-tests" / "wheels")
)


def _run(*cmd: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _source_copy(dest: Path) -> Path:
    """The checkout's tracked and new files (no .venv, build output or bot-state)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for rel in listed:
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _install(pip: Path, wheel: Path | str) -> None:
    offline = [pip, "install", "-q", "--no-index", "--find-links", WHEELHOUSE, wheel]
    proc = subprocess.run([str(c) for c in offline], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:  # first run on this machine: fetch the dependency wheels once
        WHEELHOUSE.mkdir(parents=True, exist_ok=True)
        for stale in WHEELHOUSE.glob("capdaemon-*"):  # pip would reuse its old dependency list
            stale.unlink()
        _run(sys.executable, "-m", "pip", "download", "-q", "-d", WHEELHOUSE, wheel)
        for built in WHEELHOUSE.glob("capdaemon-*"):
            built.unlink()
        _run(*offline)


def test_wheel_in_a_fresh_virtualenv_runs_init_doctor_and_demo(tmp_path: Path) -> None:
    """Build the wheel, install it alone into a new venv, then init → doctor → demo."""
    src = _source_copy(tmp_path / "src")
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        tmp_path / "dist",
        src,
    )
    [wheel] = (tmp_path / "dist").glob("capdaemon-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for packaged in (
        "capdaemon/data/config/capdaemon.yml",
        "capdaemon/data/config/skills/classifier/_example_rule.py",
        "capdaemon/demo/config/capdaemon.yml",
        "capdaemon/demo/config/skills/classifier/no_todos_in_prod.py",
        "capdaemon/data/schemas/capdaemon.schema.json",
        "capdaemon/data/systemd/capdaemon.service",
        "ghsandbox/gql/schema.graphql",
        "ghsandbox/py.typed",
    ):
        assert packaged in names, packaged
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    _install(venv / "bin" / "pip", wheel)
    capdaemon = venv / "bin" / "capdaemon"
    # The daemon's own commands run without the sandbox's dependencies.
    assert "--once" in _run(capdaemon, "tick", "--help")
    bare = subprocess.run([capdaemon, "demo"], capture_output=True, text=True, timeout=120)
    assert bare.returncode == 2, bare
    [line] = bare.stderr.splitlines()
    assert "whl[sandbox]'" in line and "-e '.[sandbox]'" in line  # nothing on PyPI to name
    _install(venv / "bin" / "pip", f"{wheel}[sandbox]")

    work = tmp_path / "work"
    work.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {"TMPDIR": str(scratch), "GITHUB_TOKEN": "placeholder"}
    out = _run(capdaemon, "init", "--repo", "me/app", "--owner", "me", cwd=work, env=env)
    assert "wrote config/capdaemon.yml" in out
    doctor = _run(capdaemon, "doctor", "--offline", cwd=work, env=env)
    assert "ok    config" in doctor and "FAIL" not in doctor

    demo = _run(capdaemon, "demo", cwd=work, env=env)
    assert "demo ok: every expected outcome happened" in demo
    assert all(len(ln) <= 100 or "/" in max(ln.split(), key=len) for ln in demo.splitlines())
    assert list(scratch.iterdir()) == [], "the demo left its temporary folder behind"

"""Without the sandbox extra the daemon's commands still run, and the sandbox's commands say how to
install it in one line (a subprocess in which werkzeug cannot be imported)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HINT = "whl[sandbox]'"  # the wheel's extra: capdaemon is not on PyPI


def _without(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """`capdaemon ARGV` in a fresh interpreter where importing `module` fails."""
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from capdaemon.cli import main\n"
        f"sys.exit(main({list(argv)!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("module", ["werkzeug", "graphql"])
@pytest.mark.parametrize(
    "argv", [("demo",), ("sandbox", "serve", "--root", "somewhere"), ("sandbox",)]
)
def test_sandbox_commands_refuse_in_one_line_without_the_extra(
    module: str, argv: tuple[str, ...], tmp_path: Path
) -> None:
    proc = _without(module, *argv)
    assert proc.returncode == 2, proc
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"capdaemon {argv[0]}: ") and HINT in line and repr(module) in line
    assert proc.stdout == ""
    assert not (ROOT / "somewhere").exists()


def test_daemon_commands_do_not_need_the_extra() -> None:
    proc = _without("werkzeug", "tick", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "--once" in proc.stdout


def test_the_daemon_never_imports_the_sandbox() -> None:
    """Importing the CLI and the tick's runner pulls in neither ghsandbox nor werkzeug."""
    code = (
        "import sys\n"
        "import capdaemon.cli, capdaemon.daemon.service.runner, capdaemon.commands.tick\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('ghsandbox', 'werkzeug', 'graphql', 'jsonschema')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"

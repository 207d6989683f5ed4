"""The daemon layer never reaches up into the command line (capdaemon.commands, capdaemon.cli)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import capdaemon.daemon

DAEMON = Path(capdaemon.daemon.__file__).parent
UPPER = ("capdaemon.commands", "capdaemon.cli")
# the demo driver is a command of its own (it drives `capdaemon demo`), not part of the daemon
MODULES = sorted(p for p in DAEMON.glob("*.py") if not p.name.startswith("demo"))


def _imports(path: Path) -> list[str]:
    """Every module `path` imports, at module level or inside a function."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
    return out


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_daemon_module_imports_nothing_from_the_cli(path: Path) -> None:
    """runner.py imported its argument helpers and config loading from commands/_common."""
    upward = [
        m for m in _imports(path) if m in UPPER or m.startswith(tuple(f"{u}." for u in UPPER))
    ]
    assert upward == [], f"{path.name} imports {upward}"

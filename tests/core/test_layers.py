"""The package layering the README's architecture diagram draws, checked on every import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "capdaemon"

# What each layer must never import (runtime or TYPE_CHECKING alike). The pure core reads
# frozen data and returns data; only forge/ talks to GitHub; only demo/ drives the sandbox.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "classify": ("github", "ghsandbox", "capdaemon.forge", "capdaemon.daemon",
                 "capdaemon.commands", "capdaemon.stores", "capdaemon.dashboard",
                 "capdaemon.channels", "capdaemon.demo"),
    "decide": ("github", "ghsandbox", "capdaemon.forge", "capdaemon.daemon",
               "capdaemon.commands", "capdaemon.stores", "capdaemon.dashboard",
               "capdaemon.channels", "capdaemon.demo", "capdaemon.classify"),
    "capability": ("github", "ghsandbox", "capdaemon.forge", "capdaemon.daemon",
                   "capdaemon.commands", "capdaemon.stores", "capdaemon.dashboard",
                   "capdaemon.channels", "capdaemon.demo"),
    "stores": ("github", "ghsandbox", "capdaemon.forge", "capdaemon.daemon",
               "capdaemon.commands", "capdaemon.dashboard", "capdaemon.demo"),
    "forge": ("ghsandbox", "capdaemon.daemon", "capdaemon.commands", "capdaemon.dashboard",
              "capdaemon.channels", "capdaemon.demo", "capdaemon.classify", "capdaemon.decide"),
    "daemon": ("github", "ghsandbox", "capdaemon.commands", "capdaemon.cli",
               "capdaemon.dashboard", "capdaemon.demo"),
    "channels": ("github", "ghsandbox", "capdaemon.commands", "capdaemon.cli",
                 "capdaemon.dashboard", "capdaemon.demo"),
    "dashboard": ("github", "ghsandbox", "capdaemon.forge", "capdaemon.demo", "capdaemon.cli"),
    "commands": ("github", "capdaemon.cli"),
    "config": ("github", "ghsandbox", "capdaemon.forge", "capdaemon.daemon",
               "capdaemon.commands", "capdaemon.stores", "capdaemon.dashboard",
               "capdaemon.channels", "capdaemon.demo", "capdaemon.cli"),
}  # fmt: skip


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def _hits(package: str, banned: tuple[str, ...]) -> list[str]:
    found = []
    for path in sorted((PKG / package).rglob("*.py")):
        for line, mod in _imports(path):
            if any(mod == b or mod.startswith(b + ".") for b in banned):
                found.append(f"{path.relative_to(PKG)}:{line} imports {mod}")
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layer_imports_only_what_it_may(package: str) -> None:
    """No module of the layer imports a package it must not (see README, Architecture)."""
    assert (PKG / package).is_dir()
    assert _hits(package, FORBIDDEN[package]) == []


def test_only_forge_imports_pygithub() -> None:
    """PyGithub is reached through forge/ alone (the typed seam is forge/port.py)."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith("forge/"):
            continue
        found += [
            f"{rel}:{line} imports {mod}"
            for line, mod in _imports(path)
            if mod == "github" or mod.startswith("github.")
        ]
    assert found == []


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The checker itself flags an import it is told to forbid (it cannot pass vacuously)."""
    assert _hits("classify", ("capdaemon.config",)) != []

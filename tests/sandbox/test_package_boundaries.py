"""The sandbox stands beside the product: import boundaries checked on the source with ast."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ROOT / "ghsandbox"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in one file, relative ones resolved."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if node.module:  # `from . import x` names module x, not the package itself
                found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def test_ghsandbox_imports_nothing_from_capdaemon() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted(SANDBOX.rglob("*.py"))
        for line, name in imported_modules(path)
        if name == "capdaemon" or name.startswith("capdaemon.")
    ]
    assert offenders == []


def sandbox_import_graph() -> dict[str, set[str]]:
    """ghsandbox module → the ghsandbox modules it names in an import (at any depth)."""
    modules = {_module_name(path): path for path in SANDBOX.rglob("*.py")}
    return {
        name: {
            target
            for _line, target in imported_modules(path)
            if target in modules and target != name
        }
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle as a path that ends where it starts, or [] when there is none."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        for nxt in sorted(graph[node]):
            cycle = visit(nxt, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return []

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return []


def test_find_cycle_reports_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_ghsandbox_import_graph_is_acyclic() -> None:
    graph = sandbox_import_graph()
    assert "ghsandbox.routing" in graph and graph["ghsandbox.routes"] >= {"ghsandbox.api_meta"}
    assert find_cycle(graph) == []


def _imports_under(folder: Path, *roots: str) -> list[str]:
    """`file:line: module` for every import under `folder` naming one of the root packages."""
    return [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted(folder.rglob("*.py"))
        for line, name in imported_modules(path)
        if any(name == root or name.startswith(f"{root}.") for root in roots)
    ]


def test_only_the_demo_package_imports_the_sandbox() -> None:
    demo = ROOT / "capdaemon" / "demo"
    outside = [
        hit
        for hit in _imports_under(ROOT / "capdaemon", "ghsandbox")
        if not hit.startswith(f"{demo.relative_to(ROOT)}/")
    ]
    assert outside == []
    assert _imports_under(demo, "ghsandbox")  # the walker does see the demo's imports


def test_the_demo_uses_neither_the_cli_entry_point_nor_pygithub() -> None:
    assert _imports_under(ROOT / "capdaemon" / "demo", "capdaemon.cli", "github") == []


def test_every_route_list_is_composed() -> None:
    """A handler module whose ROUTES the app forgot would answer 404 for all its endpoints."""
    from ghsandbox import routes

    declaring = sorted(
        _module_name(path)
        for path in SANDBOX.rglob("*.py")
        if "ROUTES = RouteList()" in path.read_text(encoding="utf-8")
    )
    composed = sorted({r.handler.__module__ for one in routes.ROUTE_LISTS for r in one})
    assert declaring == composed
    assert len(routes.ROUTE_LISTS) == len(declaring)

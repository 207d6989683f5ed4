"""capability/ is the pure core: no file, process or network I/O in any of its modules."""

from __future__ import annotations

import ast
from pathlib import Path

import capdaemon.capability

PKG = Path(capdaemon.capability.__file__).parent

# modules whose import means I/O (the stores, the log, processes, sockets, temp files)
IO_MODULES = (
    "subprocess", "socket", "mmap", "shutil", "tempfile", "urllib", "http", "requests",
    "github", "capdaemon.state", "capdaemon.audit", "capdaemon.jsonl", "capdaemon.stores",
    "capdaemon.forge", "capdaemon.sandbox",
)  # fmt: skip
# methods that read or write files (Path and file objects)
IO_METHODS = {
    "open", "read_text", "read_bytes", "write_text", "write_bytes", "touch", "mkdir", "unlink",
    "rmdir", "rename", "symlink_to", "hardlink_to", "iterdir", "rglob", "chmod", "truncate",
}  # fmt: skip
# os functions that write, create, list or run (os.path's string helpers are allowed: fspaths
# resolves symlinks with os.path.realpath to refuse a path that escapes the repository)
OS_IO = {
    "open", "write", "read", "remove", "unlink", "rename", "replace", "makedirs", "mkdir",
    "rmdir", "symlink", "link", "chmod", "chown", "truncate", "fsync", "system", "popen",
    "listdir", "scandir", "walk", "spawnv", "execv", "fork", "kill",
}  # fmt: skip


def _problems(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            if any(name == m or name.startswith(m + ".") for m in IO_MODULES):
                found.append((node.lineno, f"imports {name}"))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append((node.lineno, "open()"))
        elif isinstance(func, ast.Attribute):
            base = func.value
            if isinstance(base, ast.Name) and base.id == "os":
                if func.attr in OS_IO:
                    found.append((node.lineno, f"os.{func.attr}()"))
            elif func.attr in IO_METHODS:
                found.append((node.lineno, f".{func.attr}()"))
    return found


def test_capability_modules_do_no_io() -> None:
    """Every module of capability/ is free of file, process and network I/O."""
    bad = [
        f"{path.name}:{line}: {what}"
        for path in sorted(PKG.glob("*.py"))
        for line, what in _problems(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert bad == []


def test_the_check_catches_io() -> None:
    """The checker itself sees each kind of I/O (so an empty answer above means something)."""
    code = (
        "import subprocess\nfrom capdaemon.state import read_json\nimport os\n"
        "open('x')\nos.replace('a', 'b')\np.read_text()\nfh.write_bytes(b'')\n"
        "from capdaemon.stores.registry import dispatch\nos.path.realpath('x')\n"
    )
    whats = sorted(_problems(ast.parse(code)))
    assert [w for _, w in whats] == [
        "imports subprocess",
        "imports capdaemon.state",
        "open()",
        "os.replace()",
        ".read_text()",
        ".write_bytes()",
        "imports capdaemon.stores.registry",
    ]  # in line order; os.path.realpath (line 9) is allowed

"""Whether the optional sandbox extra is installed, and the one line to print when it is not."""

from __future__ import annotations

import importlib
import sys

# capdaemon is installed from a clone or a wheel built from it (it is not on PyPI)
INSTALL_HINT = (
    "install the sandbox extra from the wheel or clone capdaemon came from: "
    "pip install './dist/capdaemon-VERSION-py3-none-any.whl[sandbox]' (in a clone: "
    "pip install -e '.[sandbox]')"
)


def missing_sandbox_module() -> str | None:
    """The third-party module ghsandbox needs but cannot import, or None when all are there."""
    try:
        importlib.import_module("ghsandbox")
    except ModuleNotFoundError as exc:
        root = (exc.name or "").partition(".")[0]
        if root in ("ghsandbox", "capdaemon", ""):
            raise
        return root
    return None


def require_sandbox(prog: str) -> bool:
    """True when the sandbox can run; otherwise print one line saying how to install it."""
    missing = missing_sandbox_module()
    if missing is None:
        return True
    print(
        f"{prog}: needs the sandbox extra (module {missing!r} is not installed): {INSTALL_HINT}",
        file=sys.stderr,
    )
    return False

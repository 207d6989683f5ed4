"""Build hook: copy the sample config, schemas and systemd unit into the package as capdaemon/data.

The repository keeps one copy of each at its root (config/, schemas/, systemd/); the wheel
carries them under capdaemon/data for `capdaemon init` and `capdaemon doctor`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# source path under the repository root → path under capdaemon/data
PACKAGE_DATA = {
    "config": "config",
    "schemas": "schemas",
    "systemd/capdaemon.service": "systemd/capdaemon.service",
    "systemd/README.md": "systemd/README.md",
}


class BuildWithData(build_py):
    """build_py that also copies the root data folders into capdaemon/data in the build tree."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the root folders directly
            return
        target = Path(self.build_lib) / "capdaemon" / "data"
        for src, dst in PACKAGE_DATA.items():
            source, dest = ROOT / src, target / dst
            if source.is_dir():
                shutil.copytree(
                    source, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
                )
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, dest)


setup(cmdclass={"build_py": BuildWithData})

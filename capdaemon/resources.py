"""Where the sample config, JSON schemas and systemd unit are: inside the installed package
(capdaemon/data, filled at build time), else at the root of a source checkout; and the demo's
own config (capdaemon/demo/config, part of the package)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_root() -> Path:
    """capdaemon/data in an installed wheel; the repository root in a source checkout."""
    packaged = _PACKAGE / "data"
    if (packaged / "config").is_dir():
        return packaged
    return _PACKAGE.parent


def sample_config_dir() -> Path:
    """The commented sample config directory (capdaemon.yml, classifier.yml, …)."""
    return data_root() / "config"


def schemas_dir() -> Path:
    """The JSON schemas of the config and task files."""
    return data_root() / "schemas"


def systemd_unit() -> Path:
    """The sample systemd unit, capdaemon.service."""
    return data_root() / "systemd" / "capdaemon.service"


def systemd_readme() -> Path:
    """How to install and run the unit (systemd/README.md); the unit's Documentation= names
    the copy the install recipe puts at /opt/capdaemon/README.md."""
    return data_root() / "systemd" / "README.md"


def demo_config_dir() -> Path:
    """The demo's world: the config `capdaemon demo` (and the tests) run with — acme/widgets,
    its bot source root, owners alice and bob, an example user rule. Never a starter config."""
    return _PACKAGE / "demo" / "config"

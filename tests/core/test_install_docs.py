"""The install instructions match what exists: no package-index install of an unpublished
package, the systemd recipe creates what the unit names with a Python the unit can see, and
docs/github-app.md lists exactly the permissions `doctor` checks (one home: appspec.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from capdaemon import appspec
from capdaemon.daemon.service import checkup

ROOT = Path(__file__).resolve().parents[2]
GITHUB_APP_DOC = ROOT / "docs" / "github-app.md"
UNIT = ROOT / "systemd" / "capdaemon.service"
SYSTEMD_README = ROOT / "systemd" / "README.md"


def test_doctor_checks_the_list_the_doc_shows() -> None:
    """The doc's permission table is the code's list, row for row; doctor checks that list."""
    assert checkup.APP_PERMISSIONS is appspec.APP_PERMISSIONS
    rows = re.findall(r"^\| `(\w+)` \| (read|write) \| (.+?) \|$", GITHUB_APP_DOC.read_text(), re.M)
    assert [(k, lvl, why) for k, lvl, why in rows] == [
        (k, lvl, why) for k, (lvl, why) in appspec.APP_PERMISSION_REASONS.items()
    ]
    assert "Webhook events: **none**" in GITHUB_APP_DOC.read_text() and appspec.APP_EVENTS == ()


def test_the_registration_links_and_manifest_are_the_codes() -> None:
    """The links in the doc and the manifest file are what the code makes from the list, and
    they ask for every permission on it (no more), with the webhook off."""
    text = GITHUB_APP_DOC.read_text(encoding="utf-8")
    assert appspec.registration_url() in text
    assert appspec.registration_url("YOUR-ORG") in text
    shipped = (ROOT / "docs" / "github-app-manifest.json").read_text(encoding="utf-8")
    assert shipped == appspec.manifest_json()
    manifest = json.loads(shipped)
    assert manifest["default_permissions"] == appspec.APP_PERMISSIONS
    assert manifest["hook_attributes"]["active"] is False and manifest["public"] is False


def test_no_install_from_a_package_index() -> None:
    """capdaemon is not published: no `pip install capdaemon` / `pipx install capdaemon…`."""
    index_install = re.compile(r"\bpipx? install +(?:-\S+ +)*['\"]?capdaemon\b")
    for doc in (ROOT / "README.md", SYSTEMD_README, GITHUB_APP_DOC):
        assert not index_install.search(doc.read_text(encoding="utf-8")), doc.name
    assert "pipx install ./dist/capdaemon-*.whl" in (ROOT / "README.md").read_text()


def test_the_systemd_recipe_creates_what_the_unit_names() -> None:
    """The unit's Documentation= file is written by the recipe (the command that finds it runs
    here and names a file that exists); the venv behind ExecStart= is made by the recipe with
    the system's python3, not one under /root or /home (ProtectHome=yes hides those)."""
    unit = UNIT.read_text(encoding="utf-8")
    recipe = SYSTEMD_README.read_text(encoding="utf-8")
    [doc] = re.findall(r"^Documentation=file://(\S+)$", unit, re.M)
    copy = r"sudo install -m 0644 \"\$\(/opt/capdaemon/\.venv/bin/python -c '([^']+)'\)\""
    [(finder, target)] = re.findall(copy + r" \\\n\s+(\S+)", recipe)
    assert target == doc
    found = subprocess.run(
        [sys.executable, "-c", finder], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert Path(found).is_file() and Path(found).read_text() == recipe
    [execstart] = re.findall(r"^ExecStart=(\S+)", unit, re.M)
    venv = execstart.split("/bin/")[0]
    assert f"sudo /usr/bin/python3 -m venv {venv}" in recipe
    assert "ProtectHome=yes" in unit and not re.search(r"(/root|/home)\S*python", recipe)

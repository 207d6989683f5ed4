"""Headless Debian Chromium driven by selenium, for the dashboard's browser tests.

Locally the tests skip when /usr/bin/chromium or chromedriver is missing; with CI=true they
fail instead (`.ci/run` installs both).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"


def _missing(msg: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(msg + " (.ci/run installs them)")
    pytest.skip(msg)


def driver_path() -> str:
    """chromedriver's path, or fail (CI) / skip (locally) when the browser is missing."""
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    missing = [p for p in (str(CHROMIUM), driver) if not Path(p).exists()]
    if missing:
        _missing(f"browser tests need Debian's chromium and chromium-driver: missing {missing}")
    try:
        import selenium  # noqa: F401 - the test extra installs it
    except ImportError:
        _missing("browser tests need selenium (pip install -e '.[test]')")
    return driver


def start(profile: Path) -> Any:
    """A fresh headless Chromium (its own --user-data-dir) with the console log captured."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.binary_location = str(CHROMIUM)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver_path()), options=options)


def console_errors(driver: Any) -> list[str]:
    """Console messages of level SEVERE (errors, CSP violations, failed loads) since last call."""
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def screenshot(driver: Any, name: str) -> Path:
    """Save a full-window screenshot under test-artifacts/dashboard/ and print where."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    print(f"screenshot: {path}")
    return path

"""The dashboard in a real headless Chromium: pages, numbers, the why story, XSS, the export.

Screenshots of each page go to test-artifacts/dashboard/ (printed; CI keeps that folder).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capdaemon.dashboard.export import export
from capdaemon.dashboard.readmodel import ReadModel, build
from capdaemon.dashboard.server import ModelCache, make_server

from . import browser
from .conftest import XSS_BRANCH, XSS_IMG, XSS_PATH, XSS_SCRIPT, DashState

pytestmark = pytest.mark.slow
PAGES = ("index.html", "prs.html", "agents.html", "repos.html", "pr/acme_widgets_3.html")


@pytest.fixture(scope="module")
def site(
    dash_state: DashState, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, ReadModel, Any]]:
    """(served base URL, static export folder, the model, a Chromium driver)."""
    tmp = tmp_path_factory.mktemp("browser")
    browser.driver_path()
    cache = ModelCache(dash_state.state_dir, dash_state.config(), lambda: dash_state.now)
    out = tmp / "export"
    export(build(dash_state.state_dir, dash_state.config(), dash_state.now), out)
    server = make_server(cache, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = browser.start(tmp / "profile")
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", out, cache.model, driver
    finally:
        driver.quit()
        server.shutdown()
        server.server_close()


def _text(driver: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def test_each_page_loads_cleanly_and_shows_the_state(
    site: tuple[str, Path, ReadModel, Any],
) -> None:
    """No console error (a CSP violation would be one) on any page; the cards and tables show
    the model's numbers; a screenshot of each page is saved."""
    from selenium.webdriver.common.by import By

    base, _, model, driver = site
    for page in PAGES:
        driver.get(base + page)
        assert browser.console_errors(driver) == [], page
        browser.screenshot(driver, "served-" + page.replace("/", "-").removesuffix(".html"))
    driver.get(base + "index.html")
    for q in "ABCD":
        assert _text(driver, f'[data-card="total-{q}"] b') == str(model.totals[q])
    assert (
        _text(driver, '[data-card="pending"] b') == "2"
    )  # the script PR and the bot-settings task PR
    assert len(driver.find_elements(By.CSS_SELECTOR, "#quadrant-chart rect[data-q]")) >= 3
    assert "chain whole" in _text(driver, "#audit")
    driver.get(base + "prs.html")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#prs tbody tr")) == len(model.prs) == 4
    driver.get(base + "agents.html")
    assert "task-7" in _text(driver, "#tasks") and "cron_settings.json" in _text(driver, "#tasks")
    assert browser.console_errors(driver) == []


def test_the_why_story_opens_from_the_table(site: tuple[str, Path, ReadModel, Any]) -> None:
    """Clicking a PR's number opens its story: the ballot alice decided, then the merge."""
    from selenium.webdriver.common.by import By

    base, _, _, driver = site
    driver.get(base + "prs.html")
    driver.find_element(By.LINK_TEXT, "#3").click()
    assert driver.current_url.endswith("/pr/acme_widgets_3.html")
    story = _text(driver, "#story")
    assert "ballot — reason: /approve A by alice" in story
    assert story.index("ballot — reason") < story.index("merge — head")
    assert browser.console_errors(driver) == []


def test_hostile_titles_render_as_text_and_run_nothing(
    site: tuple[str, Path, ReadModel, Any],
) -> None:
    """A PR titled <script>…</script>, one titled "><img onerror=…> (its branch named
    "><img/onerror=…>) and an escalated path with
    <svg onload=…> show as those characters; no image exists and no handler ran."""
    from selenium.webdriver.common.by import By

    base, _, _, driver = site
    driver.get(base + "prs.html")
    cells = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#prs tbody td")]
    assert XSS_SCRIPT in cells and XSS_IMG in cells and XSS_BRANCH in cells
    assert driver.find_elements(By.CSS_SELECTOR, "main img, main script") == []
    assert driver.execute_script("return window.__xss === undefined") is True
    driver.get(base + "agents.html")
    assert XSS_PATH in _text(driver, "#escalations")
    assert driver.find_elements(By.CSS_SELECTOR, "#escalations svg") == []
    assert driver.execute_script("return window.__xss === undefined") is True
    assert browser.console_errors(driver) == []


def test_search_filters_the_rows(site: tuple[str, Path, ReadModel, Any]) -> None:
    """Typing in the search box hides the rows that do not match (the CSP-allowed script)."""
    from selenium.webdriver.common.by import By

    base, _, _, driver = site
    driver.get(base + "prs.html")
    driver.find_element(By.ID, "q").send_keys("cron")
    rows = driver.find_elements(By.CSS_SELECTOR, "#prs tbody tr")
    assert [r.is_displayed() for r in rows].count(True) == 1
    assert _text(driver, "#shown") == "1"
    assert browser.console_errors(driver) == []


def test_the_static_export_opens_from_file_with_the_same_content(
    site: tuple[str, Path, ReadModel, Any],
) -> None:
    """Each exported page, opened from file://, shows what the served page shows, cleanly."""
    base, out, _, driver = site
    for page in PAGES:
        driver.get(base + page)
        served = _text(driver, "main")
        driver.get((out / page).as_uri())
        assert _text(driver, "main") == served, page
        assert browser.console_errors(driver) == [], page
        browser.screenshot(driver, "export-" + page.replace("/", "-").removesuffix(".html"))
    driver.get((out / "prs.html").as_uri() + "?q=typo")
    assert _text(driver, "#shown") == "1"
    assert browser.console_errors(driver) == []

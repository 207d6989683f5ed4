"""In Chromium: what each PR waits on, cards that add up, missing-file banners, bidi text,
links from the 404 page, the timeline, trends and queue pages, the agents page's width."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from capdaemon.dashboard.server import ModelCache, make_server
from capdaemon.filenames import PRS_FILE
from capdaemon.state import atomic_write_json

from . import browser
from .conftest import DashState

pytestmark = pytest.mark.slow
BIDI_TITLE = "Fix \u202egnp.exe"
BIDI_BRANCH = "agent-2/\u202egnp.exe"


def _serve(state: DashState) -> tuple[Any, ModelCache, str]:
    cache = ModelCache(state.state_dir, state.config(), lambda: state.now)
    server = make_server(cache, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, cache, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture(scope="module")
def sites(
    dash_state: DashState, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """Two served copies of the scenario: one whose first PR has a bidi title and branch,
    one whose prs.json is gone; and a Chromium."""
    tmp = tmp_path_factory.mktemp("browser-state")
    browser.driver_path()
    bidi = dash_state.copy(tmp / "bidi")
    raw = json.loads((bidi.state_dir / PRS_FILE).read_text())
    ref = f"acme/widgets#{bidi.prs['typo']}"
    raw["prs"][ref].update(title=BIDI_TITLE, head_ref=BIDI_BRANCH)
    atomic_write_json(bidi.state_dir / PRS_FILE, raw)
    (bidi.state_dir / "prs.journal").unlink(missing_ok=True)
    gone = dash_state.copy(tmp / "gone")
    (gone.state_dir / PRS_FILE).unlink()
    servers = [_serve(bidi), _serve(gone)]
    driver = browser.start(tmp / "profile")
    try:
        yield {
            "base": servers[0][2],
            "model": servers[0][1].model,
            "gone": servers[1][2],
            "driver": driver,
            "state": bidi,
        }
    finally:
        driver.quit()
        for server, _, _ in servers:
            server.shutdown()
            server.server_close()


def _by(css: str) -> tuple[str, str]:
    from selenium.webdriver.common.by import By

    return (By.CSS_SELECTOR, css)


def test_the_waiting_on_column_matches_the_state(sites: dict[str, Any]) -> None:
    """Each row's "waiting on" cell says what the read model derives from the state; the
    "waiting on: ballot" filter leaves the D PR alone; each state is shown."""
    from selenium.webdriver.support.ui import Select

    d, model = sites["driver"], sites["model"]
    d.get(sites["base"] + "prs.html")
    for tr in d.find_elements(*_by("#prs tbody tr")):
        number = tr.find_element(*_by("a.why")).text.lstrip("#")
        row = model.by_ref[f"acme/widgets#{number}"]
        cell = tr.find_elements(*_by("td"))[7].text
        waits = model.waiting(row)
        want = [f"{k}: {v}" for k, v in waits] or ["merge queue" if row.state == "open" else "—"]
        assert cell.splitlines() == want, number
        assert tr.find_elements(*_by("td"))[5].text == row.state
    Select(d.find_element(*_by('select[name="waiting"]'))).select_by_value("ballot")
    d.find_element(*_by("#filters button")).click()
    assert d.current_url.split("?")[0].endswith("/prs.html") and "waiting=ballot" in d.current_url
    shown = [a.text for a in d.find_elements(*_by("#prs a.why"))]
    assert shown == [f"#{sites['state'].prs['script']}"]
    assert browser.console_errors(d) == []
    browser.screenshot(d, "served-prs-waiting-ballot")


def test_the_quadrant_cards_add_up_to_the_classified_prs(sites: dict[str, Any]) -> None:
    """The four quadrant cards sum to the classified-PRs card; heads are a card of their own."""
    d = sites["driver"]
    d.get(sites["base"] + "index.html")

    def card(key: str) -> int:
        return int(d.find_element(*_by(f'[data-card="{key}"] b')).text)

    assert sum(card(f"total-{q}") for q in "ABCD") == card("prs") == 4
    assert card("heads") >= card("prs")
    assert browser.console_errors(d) == []


def test_a_missing_prs_file_is_a_banner_on_the_page(sites: dict[str, Any]) -> None:
    """With prs.json deleted (logs intact) the pages open with a banner naming it."""
    d = sites["driver"]
    for page in ("index.html", "prs.html", "queue.html"):
        d.get(sites["gone"] + page)
        banners = [b.text for b in d.find_elements(*_by('.banner[role="alert"]'))]
        assert any("prs.json" in b and "missing" in b for b in banners), page
    browser.screenshot(d, "served-missing-prs-json")
    assert browser.console_errors(d) == []


def test_a_bidi_override_is_drawn_visibly_not_obeyed(sites: dict[str, Any]) -> None:
    """A title and branch with U+202E are drawn with the escape in sight (`\\u202e`), on the
    PRs table, the story page and the queue: what a reader sees is what is stored."""
    d = sites["driver"]
    ref = f"acme/widgets#{sites['state'].prs['typo']}"
    d.get(sites["base"] + "prs.html")
    text = d.find_element(*_by("#prs")).text
    assert "Fix \\u202egnp.exe" in text and "agent-2/\\u202egnp.exe" in text
    for page in ("prs.html", "pr/acme_widgets_1.html", "index.html", "trends.html"):
        d.get(sites["base"] + page)
        assert "\u202e" not in d.find_element(*_by("body")).text, page
    assert ref in sites["model"].by_ref
    browser.screenshot(d, "served-prs-bidi")


def test_links_on_a_404_page_lead_to_real_pages(sites: dict[str, Any]) -> None:
    """From /pr/nope.html the navigation and the way back lead to the pages, not under /pr/."""
    d = sites["driver"]
    d.get(sites["base"] + "pr/nope.html")
    assert d.find_element(*_by("h1")).text == "Not found"
    d.find_element(*_by('header a[href$="prs.html"]')).click()
    assert d.current_url == sites["base"] + "prs.html"
    assert d.find_element(*_by("h1")).text == "Pull requests"
    d.get(sites["base"] + "pr/deeper/nope.html")
    d.find_element(*_by("main a")).click()
    assert d.current_url == sites["base"] + "index.html"
    assert d.find_element(*_by("h1")).text == "Overview"
    assert all("404 (Not Found)" in e for e in browser.console_errors(d))  # the 404s only


def test_story_timeline_trends_queue_and_agents_pages(sites: dict[str, Any]) -> None:
    """The story is a timeline with the verdict, the vote and the actions; trends offer time
    ranges; the queue page opens; no table makes the agents page wider than the window; the
    served pages refresh themselves (a meta refresh: no script)."""
    d = sites["driver"]
    d.get(sites["base"] + "pr/acme_widgets_3.html")
    kinds = [li.get_attribute("data-kind") for li in d.find_elements(*_by("#story li"))]
    assert {"verdict", "vote", "action"} <= set(kinds)
    assert d.find_elements(*_by('meta[http-equiv="refresh"]'))
    stamp = d.find_element(*_by("#story time"))
    assert stamp.get_attribute("title").endswith(" UTC") and "." not in stamp.text
    browser.screenshot(d, "served-story-timeline")
    d.get(sites["base"] + "trends.html")
    d.find_element(*_by('#ranges a[href$="range=7d"]')).click()
    assert "range=7d" in d.current_url
    assert d.find_element(*_by("#merges-chart"))
    assert d.find_element(*_by("#rejections")).text
    browser.screenshot(d, "served-trends")
    d.get(sites["base"] + "queue.html")
    assert d.find_element(*_by("#queue"))
    browser.screenshot(d, "served-queue")
    d.get(sites["base"] + "agents.html")
    width = d.execute_script("return document.documentElement.scrollWidth")
    assert width <= d.execute_script("return window.innerWidth")
    browser.screenshot(d, "served-agents-width")
    assert browser.console_errors(d) == []

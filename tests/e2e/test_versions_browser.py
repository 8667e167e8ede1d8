"""The profile's versions section in a real browser (headless Chromium): the newest version
against the one before it and every version's row, at desktop and phone widths, with no
sideways scroll of the page (a wide table scrolls in its own box). Screenshots of the section
go to artifacts/screenshots/versions-{width}.png."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import RunningServer
from tests.e2e.test_browser_surfaces import CHROMIUM, SHOTS, WIDTHS, Watched, browser  # noqa: F401
from tests.http.surfaces_data import new_login, seed_agent

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(),
                                 reason=f"{CHROMIUM} is missing (Debian: apt-get install chromium)")]


@pytest.fixture(scope="module")
def released(bench_server: RunningServer) -> str:
    """An agent with three releases, the newest plainly better than the one before it."""
    login = new_login()
    key = bench_server.create_key(login)
    for version, failures, duration in (("1.0.0", 8, 900), ("1.1.0-rc.1", 12, 800),
                                        ("1.1.0+build.2026.12.05", 1, 400)):
        seed_agent(bench_server, login=login, key=key, slug="support-bot", runs=40,
                   failures=failures, duration_ms=duration, cost=0.003, version=version)
    return f"{login}/support-bot"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_versions_section_reads_at_every_width(browser: Any,  # noqa: F811
                                                   bench_server: RunningServer, released: str,
                                                   width: int) -> None:
    watched = Watched(browser, width, "light")
    try:
        page = watched.open(f"{bench_server.url}/u/{released}")
        section = page.locator("#versions")
        section.scroll_into_view_if_needed()
        SHOTS.mkdir(parents=True, exist_ok=True)
        section.screenshot(path=str(SHOTS / f"versions-{width}.png"))
        assert watched.problems == []
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        heading = section.locator("h3").inner_text()
        assert heading == "1.1.0+build.2026.12.05 against 1.1.0-rc.1"
        success = section.locator('.version-compare tr[data-line="success"]')
        assert success.get_attribute("data-better") == "newer"
        assert success.locator(".verdict").inner_text().startswith("better, p")
        rows = section.locator("table.versions tbody tr")
        assert [rows.nth(i).get_attribute("data-version") for i in range(rows.count())] == [
            "1.1.0+build.2026.12.05", "1.1.0-rc.1", "1.0.0"]
        assert section.locator("table.versions thead").is_visible()
    finally:
        watched.close()

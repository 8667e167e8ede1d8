"""The owner's alerts page in a real browser (Debian's headless Chromium via Playwright), at
desktop and phone widths: an open regression with its buttons and the settings form, drawn
with the dashboard's styles and no sideways scroll (the webhook secret, one long word,
wraps). Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import RunningServer, serving
from tests.e2e.test_browser_surfaces import (
    BROWSER_TESTS,
    WIDTHS,
    Watched,
    browser,  # noqa: F401 - the fixture
)
from tests.http.test_alerts_http import regressed

pytestmark = BROWSER_TESTS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serving(tmp_path_factory.mktemp("alerts-e2e"), store="memory") as running:
        yield running


@pytest.mark.parametrize("width", WIDTHS)
def test_the_alerts_page_fits_and_wears_the_dashboards_styles(browser: Any,  # noqa: F811
                                                              server: RunningServer,
                                                              width: int) -> None:
    login, _ = regressed(server)
    watched = Watched(browser, width, "light")
    try:
        page = watched.sign_in(server, login)
        page = watched.open(f"{server.url}/dashboard/agents/agent/alerts")
        assert page.locator(".alert-row[data-state=open]").count() >= 1
        assert page.get_by_role("button", name="Acknowledge").first.is_visible()
        radius = page.locator("#webhook_url").evaluate("n => getComputedStyle(n).borderRadius")
        assert radius == "8px", "the dashboard's form styles are loaded"
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scroll"
        watched.shot(f"alerts-{width}")
    finally:
        watched.close()
